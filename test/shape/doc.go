// Package shape makes objects shaped like a real cloud cluster's, so that
// what the simulated cluster and the benchmarks measure (memory, watch
// traffic, decoding) costs what it would there: RealisticNode is an EKS
// worker's Node. It depends on nothing of kmaint's but test/gen, so that
// benchmarks inside the operator's packages can use it.
package shape
