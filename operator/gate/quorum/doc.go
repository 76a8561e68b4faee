// Package quorum decides the control-plane guard of a pool
// (spec.controlPlane): whether the etcd members and the pool's other
// nodes let one more control-plane node go down. A pure function of what
// the gate read (Facts); the gate asks it before each admission and again
// before each approval, and holds with reason QuorumAtRisk when it says so.
package quorum
