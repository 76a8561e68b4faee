#!/usr/bin/env bash
# install-test-deps.sh installs the Debian packages the tests need and are
# missing. Idempotent: with everything installed (or nothing listed) it does
# nothing, and it runs apt-get update at most once, only when it installs.
#
# Add packages to APT_PACKAGES as tests come to need them.
#
# It installs programs, not services: while apt-get runs, a policy-rc.d that
# answers 101 keeps every package's postinst from starting its service (so
# the install works without a running systemd, and no packaged Prometheus is
# left listening on :9090), and the prometheus unit is disabled afterwards so
# that a reboot does not start it either. Tests run their own Prometheus on a
# free port (test/promtest).
#
# Usage: hack/install-test-deps.sh   (as root, or with sudo available)
set -euo pipefail

APT_PACKAGES=(
	gcc libc6-dev   # cgo, for go-systemd's sdjournal
	libsystemd-dev  # sdjournal's headers (daemon/journal)
	systemd         # systemd-journald, one per simulated node (test/node)
	mount           # bind mounts inside each simulated node's namespace
	dbus-daemon     # a private bus for the logind rebooter's tests
	util-linux      # unshare, nsenter, setpriv: simulated nodes' namespaces
	bsdutils        # logger: a journal entry written as another user
	prometheus      # prometheus and promtool for test/promtest and test/alerts (2.42 in bookworm)
	prometheus-alertmanager # a real Alertmanager for kmaint's silences (test/amtest; 0.25 in bookworm)
	chromium        # headless render test of the rollout report (cmd/kubectl-kmaint/report)
	fonts-dejavu-core # a font for chromium's text (recommended, so not pulled in)
	systemd-container # systemd-nspawn: the real cluster's nodes (test/realcluster)
	debootstrap       # Debian root file systems: the nodes' (hack/node-rootfs.sh), the image's base layers (hack/image-tar.sh)
	buildah           # kmaint's image from the Dockerfile without a registry (hack/image-tar.sh)
	iproute2          # the real cluster's network namespace, bridge and routes
)

# Services the packages above ship, which must not run on a test machine.
DISABLE_SERVICES=(prometheus.service prometheus-alertmanager.service)

POLICY_RC_D=/usr/sbin/policy-rc.d
POLICY_MARK='# written by kmaint hack/install-test-deps.sh'

log() { echo "install-test-deps: $*" >&2; }

installed() {
	[[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

(( ${#APT_PACKAGES[@]} > 0 )) || exit 0

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
	log "no dpkg/apt-get here; make sure these are installed: ${APT_PACKAGES[*]}"
	exit 0
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
	installed "${pkg}" || missing+=("${pkg}")
done
(( ${#missing[@]} > 0 )) || exit 0

sudo=()
if (( EUID != 0 )); then
	if ! command -v sudo >/dev/null 2>&1; then
		log "missing packages and not root: apt-get install ${missing[*]}"
		exit 1
	fi
	sudo=(sudo)
fi

# Keep postinst scripts from starting services, unless the machine already
# has a policy-rc.d (a container image's usually says 101 already): then it
# is the machine's, and it is left alone.
ours_policy=0
remove_policy() {
	if (( ours_policy )); then
		"${sudo[@]}" rm -f "${POLICY_RC_D}"
	fi
}
if [[ ! -e "${POLICY_RC_D}" ]] || grep -qxF "${POLICY_MARK}" "${POLICY_RC_D}" 2>/dev/null; then
	ours_policy=1
	trap remove_policy EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	printf '#!/bin/sh\n%s\n# Start no services while test dependencies install.\nexit 101\n' "${POLICY_MARK}" |
		"${sudo[@]}" tee "${POLICY_RC_D}" >/dev/null
	"${sudo[@]}" chmod 0755 "${POLICY_RC_D}"
fi

log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"

# The packages enabled their units even though nothing started them; disable
# them (systemctl does that without a running systemd too) and stop them in
# case something started them anyway.
if command -v systemctl >/dev/null 2>&1; then
	for unit in "${DISABLE_SERVICES[@]}"; do
		"${sudo[@]}" systemctl disable --quiet "${unit}" >/dev/null 2>&1 || true
		if [[ -d /run/systemd/system ]]; then
			"${sudo[@]}" systemctl stop "${unit}" >/dev/null 2>&1 || true
		fi
	done
fi
