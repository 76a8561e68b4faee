#!/usr/bin/env bash
# steps.sh times the steps of `make test` and says at its end where the time
# went, so that a slow addition is seen when it lands.
#
#   hack/steps.sh start                 starts KMAINT_STEPS_LOG anew, with the
#                                       time make test began
#   hack/steps.sh run NAME COMMAND...   runs COMMAND; when KMAINT_STEPS_LOG is
#                                       set (make test sets it), appends
#                                       "NAME SECONDS EXIT" to it
#   hack/steps.sh summary GO_TEST_LOG   prints each step's time and the ten
#                                       slowest packages of GO_TEST_LOG (go
#                                       test's output), marking those that
#                                       ran under -race (hack/go-test.sh)
set -euo pipefail

start() {
	mkdir -p "$(dirname "${KMAINT_STEPS_LOG:?}")"
	echo "start $(date +%s.%N)" >"${KMAINT_STEPS_LOG}"
}

run() {
	local name="$1" start rc=0
	shift
	start="$(date +%s.%N)"
	"$@" || rc=$?
	if [[ -n "${KMAINT_STEPS_LOG:-}" ]]; then
		mkdir -p "$(dirname "${KMAINT_STEPS_LOG}")"
		awk -v n="${name}" -v a="${start}" -v b="$(date +%s.%N)" -v rc="${rc}" 'BEGIN { printf "%s %.1f %d\n", n, b - a, rc }' >>"${KMAINT_STEPS_LOG}"
	fi
	return "${rc}"
}

# clock SECONDS prints 1h02m03s, 2m03s or 3.4s.
clock() {
	awk -v s="$1" 'BEGIN {
		if (s < 60) { printf "%.1fs", s; exit }
		h = int(s / 3600); m = int((s % 3600) / 60); r = int(s % 60)
		if (h > 0) printf "%dh%02dm%02ds", h, m, r; else printf "%dm%02ds", m, r
	}'
}

summary() {
	local tests="$1" name secs rc began=""
	echo
	echo "make test: where the time went"
	if [[ -s "${KMAINT_STEPS_LOG:-}" ]]; then
		echo "  steps, as they ended (the builds run side by side):"
		while read -r name secs rc; do
			if [[ "${name}" == start ]]; then
				began="${secs}"
				continue
			fi
			printf '    %-22s %10s%s\n' "${name}" "$(clock "${secs}")" "$( ((rc == 0)) || echo "  (failed: ${rc})")"
		done <"${KMAINT_STEPS_LOG}"
		if [[ -n "${began}" ]]; then
			printf '    %-22s %10s\n' "make test" "$(clock "$(awk -v a="${began}" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')")"
		fi
	fi
	if [[ -s "${tests}" ]]; then
		echo "  the ten slowest packages (go test runs several at once):"
		# hack/go-test.sh's first line names the packages it ran under -race.
		local raced
		raced=" $(sed -n 's/^go-test: under -race[^:]*: //p' "${tests}") "
		# go test's result lines: "ok  <tab>PKG<tab>12.3s" and "FAIL<tab>PKG<tab>12.3s".
		# A benchmark run's lines name "PKG (benchmarks)" (hack/go-test.sh).
		awk -F'\t' '($1 ~ /^(ok|FAIL) *$/) && $3 ~ /^[0-9.]+s/ { sub(/s.*/, "", $3); sub(/ *$/, "", $1); print $3 "\t" $2 "\t" $1 }' "${tests}" |
			sort -rn | head -n 10 | while IFS=$'\t' read -r secs name rc; do
			name="${name#github.com/kmaint/kmaint/}"
			printf '    %10s  %s%s%s\n' "$(clock "${secs}")" "${name}" "$([[ "${raced}" != *" ${name} "* ]] || echo "  (-race)")" \
				"$([[ "${rc}" == ok ]] || echo "  (FAIL)")"
		done
	fi
}

case "${1:-}" in
start)
	start
	;;
run)
	shift
	run "$@"
	;;
summary)
	shift
	summary "$@"
	;;
*)
	echo "usage: hack/steps.sh start | run NAME COMMAND... | summary GO_TEST_LOG" >&2
	exit 2
	;;
esac
