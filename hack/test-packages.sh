#!/usr/bin/env bash
# test-packages.sh prints the packages of ./... in the order `make test`
# hands them to go test: FIRST, then the rest in go list's order, then LAST.
# go test starts packages in the order given, as many at a time as the
# machine has cores, so a long package given last makes the whole run wait
# for it alone; and a package that waits for the machine's real-cluster lock
# (test/realcluster) holds one of the cores while it waits.
#
# Usage: hack/test-packages.sh "FIRST..." "LAST..."   (./dir patterns of
# single packages)
set -euo pipefail

read -r -a first <<<"${1:-}"
read -r -a last <<<"${2:-}"
module="$(go list -m)"
mapfile -t all < <(go list ./...)

declare -A known placed
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
for p in "${first[@]}"; do path "${p}"; done
for p in "${all[@]}"; do
	[[ -n "${placed[${p}]:-}" ]] || echo "${p}"
done
for p in "${last[@]}"; do path "${p}"; done
