// Package mutants keeps kmaint's deliberate breaks of its own promises:
// small patches to the product code (operator/, daemon/, api/, internal/,
// policies/), each breaking one invariant of the design
// (shared/design/ARCHITECTURE.md, "Invariants"), and, for each, the tests
// that must catch it. They are patches, applied to a scratch copy of the
// tree only: nothing in the shipped code switches them on.
//
// mutants.json is the index: each mutant's name (its patch is NAME.patch),
// the invariant it breaks, what it breaks, the tests that run real parts
// (the API server, journald, the soak, the real nodes) and are named to
// catch it, and the unit tests that catch it too. `make mutants` (package
// run) applies each patch to a scratch copy, runs its tests, and fails
// unless every mutant is caught and the tree without them passes; the
// result goes to results.json. `make test` runs this package's test, which
// checks that every patch still applies and builds, and that the tests it
// names exist, so that the set stays current as the code changes.
package mutants
