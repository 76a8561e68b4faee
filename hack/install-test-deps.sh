#!/usr/bin/env bash
# install-test-deps.sh installs the Debian packages the tests need and are
# missing. Idempotent: with everything installed (or nothing listed) it does
# nothing, and it runs apt-get update at most once, only when it installs.
#
# Add packages to APT_PACKAGES as tests come to need them (prometheus next).
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
)

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

log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
