// Package view is what the gate knows of one Node of a pool: the node
// protocol as protocol.Read tells it, and what only the gate knows (the
// other pools that select it, its windows and freezes, what holds it, its
// place in the queue). A view is made once per change of its node and kept
// between reconciles (Kept); each reconcile finds again what it found of
// the node on its own (StartPass).
//
// The package holds no state and talks to no API server: the gate fills a
// view's fields, and the plan (package plan) reads them.
package view
