//go:build race

package node_test

// raceBuild says this binary was built with the race detector.
const raceBuild = true
