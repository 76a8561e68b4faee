// Package smoke says whether benchmarks run to check themselves or to
// measure. make test runs every benchmark once (-benchtime 1x), so that
// what each asks of the code it measures (its b.Fatal paths, its results'
// sanity) is checked with the tests; with KMAINT_BENCH_SMOKE=1, which make
// test sets, the long ones run at a small size and keep no result where
// make bench keeps its.
package smoke

import "os"

// Env is the environment variable that asks for a smoke run.
const Env = "KMAINT_BENCH_SMOKE"

// On reports whether the benchmarks run to check themselves: at a small
// size, their results kept nowhere.
func On() bool { return os.Getenv(Env) != "" }
