// Package gen builds test objects (nodes, pods, budgets, pools, requests)
// with short option lists, and writes the node side of the protocol the way
// a kubelet and a daemon would, for tests that play the node.
package gen
