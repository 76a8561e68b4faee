#!/usr/bin/env bash
# go-test.sh is make test's go test. The packages RACE matches run under the
# race detector (-race), the others without it: one go test builds all its
# packages one way, so two run side by side, each handed its packages in
# make test's order (hack/test-packages.sh: the longest first). A third runs
# every benchmark once (-run '^$' -bench . -benchtime 1x), so that their own
# checks run: go test runs the packages of a run with -bench one after the
# other, after all of them are built, so benchmarks beside the tests would
# make every test package wait for the one before it (make test took 33
# minutes so on the two-core machine). Their output comes here as each
# package ends, the three mixed, a benchmark run's packages named
# "PKG (benchmarks)"; it first names the packages of each, which
# hack/steps.sh summary reads. It fails if any failed.
#
# The two test runs each run as many packages at a time as the machine has
# cores (go test -p, which bounds their compiles too), so together twice as
# many: the tests mostly wait on API servers, journald and nodes, and a go
# test given one at a time would compile the race detector's builds of
# every dependency one after the other on a machine that has none yet.
# KMAINT_RACE_P sets the -race side's share.
#
# Usage: hack/go-test.sh "FIRST..." "LAST..." "RACE..." [go test flags...]
set -euo pipefail

first="$1" last="$2" race="$3"
shift 3
# Read through variables: a failure of test-packages.sh stops the script.
raced="$(hack/test-packages.sh "${first}" "${last}" race "${race}")"
rest="$(hack/test-packages.sh "${first}" "${last}" rest "${race}")"
if [[ -z "${raced}" || -z "${rest}" ]]; then
	echo "go-test: RACE must leave packages on both sides of it" >&2
	exit 1
fi
mapfile -t raced <<<"${raced}"
mapfile -t rest <<<"${rest}"
module="$(go list -m)"

# The packages with a benchmark, the longest (test/bench) first.
benched=()
while read -r pkg dir; do
	if grep -qs '^func Benchmark' "${dir}"/*_test.go; then
		benched+=("${pkg}")
	fi
done < <(go list -f '{{.ImportPath}} {{.Dir}}' ./test/bench ./...)
mapfile -t benched < <(printf '%s\n' "${benched[@]}" | awk '!seen[$0]++')

# Tests that need a build of one kind (test/node's race report needs
# -race) fail rather than skip under make test.
export KMAINT_MAKE_TEST=1

cores="$(nproc)"
race_p="${KMAINT_RACE_P:-${cores}}"
((race_p >= 1)) || race_p=1
rest_p="${cores}"

# short PKGS... prints the packages without the module's path, on one line.
short() { echo "${*//${module}\//}"; }
echo "go-test: under -race, ${race_p} at a time: $(short "${raced[@]}")"
echo "go-test: without, ${rest_p} at a time: $(short "${rest[@]}")"
echo "go-test: benchmarks once, one package at a time: $(short "${benched[@]}")"

go test -race -p "${race_p}" "$@" "${raced[@]}" &
race_pid=$!
# sed names each result line's package as its benchmarks' (its tests'
# line is the other run's); pipefail keeps go test's failure.
(go test -race=false -run '^$' -bench . -benchtime 1x "$@" "${benched[@]}" |
	sed -u -E 's/^(ok|FAIL)( *\t[^\t]+)\t/\1\2 (benchmarks)\t/') &
bench_pid=$!
trap 'kill "${race_pid}" "${bench_pid}" 2>/dev/null || true' INT TERM
rc=0
go test -race=false -p "${rest_p}" "$@" "${rest[@]}" || rc=$?
race_rc=0
wait "${race_pid}" || race_rc=$?
bench_rc=0
wait "${bench_pid}" || bench_rc=$?
if ((race_rc != 0)); then
	echo "go-test: the packages under -race failed (${race_rc})" >&2
fi
if ((rc != 0)); then
	echo "go-test: the packages without -race failed (${rc})" >&2
fi
if ((bench_rc != 0)); then
	echo "go-test: the benchmarks failed (${bench_rc})" >&2
fi
((rc == 0 && race_rc == 0 && bench_rc == 0))
