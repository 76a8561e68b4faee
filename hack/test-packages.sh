#!/usr/bin/env bash
# test-packages.sh prints the packages of ./... in the order `make test`
# hands them to go test: FIRST, then the rest in go list's order, then LAST.
# go test starts packages in the order given, as many at a time as the
# machine has cores, so a long package given last makes the whole run wait
# for it alone; and a package that waits for the machine's real-cluster lock
# (test/realcluster) holds one of the cores while it waits.
#
# make test runs two go tests side by side (hack/go-test.sh): one builds
# every package with the race detector, the other without. With race, only
# the packages RACE matches are printed, in that order; with rest, only the
# others.
#
# Usage: hack/test-packages.sh "FIRST..." "LAST..." [race|rest "RACE..."]
# (FIRST and LAST: ./dir patterns of single packages; RACE: go list's
# patterns, ./dir/... among them)
set -euo pipefail

read -r -a first <<<"${1:-}"
read -r -a last <<<"${2:-}"
mode="${3:-all}"
read -r -a race <<<"${4:-}"
module="$(go list -m)"
mapfile -t all < <(go list ./...)

declare -A known placed raced
for p in "${all[@]}"; do known["${p}"]=1; done

# path PATTERN turns ./test/e2e into the package's import path.
path() { echo "${module}/${1#./}"; }

for p in "${first[@]}" "${last[@]}"; do
	if [[ -z "${known[$(path "${p}")]:-}" ]]; then
		echo "test-packages: ${p} is not a package of ./... (the Makefile's TEST_FIRST or TEST_LAST names it)" >&2
		exit 1
	fi
	placed[$(path "${p}")]=1
done

case "${mode}" in
all) ;;
race | rest)
	for r in "${race[@]}"; do
		mapfile -t matched < <(go list "${r}" 2>/dev/null || true)
		if ((${#matched[@]} == 0)); then
			echo "test-packages: ${r} matches no package of ./... (the Makefile's TEST_RACE names it)" >&2
			exit 1
		fi
		for p in "${matched[@]}"; do raced["${p}"]=1; done
	done
	;;
*)
	echo "usage: hack/test-packages.sh \"FIRST...\" \"LAST...\" [race|rest \"RACE...\"]" >&2
	exit 2
	;;
esac

# show PKG prints the package if the mode takes it.
show() {
	case "${mode}" in
	race) [[ -z "${raced[$1]:-}" ]] || echo "$1" ;;
	rest) [[ -n "${raced[$1]:-}" ]] || echo "$1" ;;
	*) echo "$1" ;;
	esac
}

for p in "${first[@]}"; do show "$(path "${p}")"; done
for p in "${all[@]}"; do
	[[ -n "${placed[${p}]:-}" ]] || show "${p}"
done
for p in "${last[@]}"; do show "$(path "${p}")"; done
