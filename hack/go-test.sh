#!/usr/bin/env bash
# go-test.sh is make test's go test. The packages RACE matches run under the
# race detector (-race), the others without it: one go test builds all its
# packages one way, so two run side by side, each handed its packages in
# make test's order (hack/test-packages.sh: the longest first). Their output
# comes here as each package ends, the two mixed; it first names the
# packages of each, which hack/steps.sh summary reads. It fails if either
# failed.
#
# Each runs as many packages at a time as the machine has cores (go test
# -p, which bounds its compiles too), so together twice as many: the tests
# mostly wait on API servers, journald and nodes (on the two-core machine
# make test keeps the cores about half busy), and a go test given one at a
# time would compile the race detector's builds of every dependency one
# after the other on a machine that has none yet. KMAINT_RACE_P sets the
# -race side's share.
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

cores="$(nproc)"
race_p="${KMAINT_RACE_P:-${cores}}"
((race_p >= 1)) || race_p=1
rest_p="${cores}"

# short PKGS... prints the packages without the module's path, on one line.
short() { echo "${*//${module}\//}"; }
echo "go-test: under -race, ${race_p} at a time: $(short "${raced[@]}")"
echo "go-test: without, ${rest_p} at a time: $(short "${rest[@]}")"

go test -race -p "${race_p}" "$@" "${raced[@]}" &
race_pid=$!
trap 'kill "${race_pid}" 2>/dev/null || true' INT TERM
rc=0
go test -race=false -p "${rest_p}" "$@" "${rest[@]}" || rc=$?
race_rc=0
wait "${race_pid}" || race_rc=$?
if ((race_rc != 0)); then
	echo "go-test: the packages under -race failed (${race_rc})" >&2
fi
if ((rc != 0)); then
	echo "go-test: the packages without -race failed (${rc})" >&2
fi
((rc == 0 && race_rc == 0))
