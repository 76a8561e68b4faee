#!/usr/bin/env bash
# node-rootfs.sh prints the directory of the Debian 12 root file system that
# every node of the real test cluster (test/realcluster) boots with
# systemd-nspawn, building it with debootstrap when it is not cached yet:
# systemd as PID 1 with journald, dbus and logind, containerd, runc, the CNI
# plugins, iptables, and the units and settings of hack/node-rootfs/ (the
# node's containerd and kubelet configuration, kubelet.service, and the boot-
# time preparation an nspawn machine needs to be a Kubernetes node). kubelet
# itself and the images are not in it: each node gets them bind-mounted from
# hack/cluster-assets.sh's directory, so they can change without a rebuild.
#
# The nodes share this tree read-only as the lower layer of an overlay, so it
# is built once, into the machine's cache (hack/cache.sh) under a key of the
# suite, the mirror, this script and hack/node-rootfs/: a change to the
# recipe builds a new tree beside the old one. bin/node-rootfs/SUITE links
# to it. Building takes a few minutes, mostly downloads from the Debian
# mirror.
#
# Usage: hack/node-rootfs.sh [BIN_DIR]   (default: ./bin)   (as root)
set -euo pipefail

SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES=(
	systemd systemd-sysv dbus libsystemd0 # PID 1, journald, logind, the system bus
	procps iproute2 util-linux kmod       # ps, ip, mount/nsenter/setpriv
	containerd runc containernetworking-plugins iptables
	ca-certificates
)
# An ordinary user, for commands that must be refused to anyone but root.
USER_NAME=kmaint-user
USER_ID=1000

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/cache.sh
source "${here}/cache.sh"
BIN_DIR="$(mkdir -p "${1:-bin}" && cd "${1:-bin}" && pwd)"
recipe="$({
	cat "${BASH_SOURCE[0]}"
	cd "${here}/node-rootfs" && find . -type f | LC_ALL=C sort | xargs sha256sum
} | sha256sum | cut -c1-20)"

log() { echo "node-rootfs: $*" >&2; }

# build ROOT debootstraps the node's root into ROOT, an empty directory.
build() {
	local root="$1" include unit
	log "debootstrap ${SUITE} into ${root} (a few minutes)"
	include="$(IFS=,; echo "${PACKAGES[*]}")"
	if ! debootstrap --variant=minbase --include="${include}" "${SUITE}" "${root}" "${MIRROR}" >"${root}.log" 2>&1; then
		tail -30 "${root}.log" >&2
		log "debootstrap failed"
		rm -f "${root}.log"
		return 1
	fi
	rm -f "${root}.log"

	cp -a "${here}/node-rootfs/." "${root}/"
	# Each node writes its own machine ID before its first boot; an empty file
	# would make systemd treat the first boot as a first boot and preset units.
	rm -f "${root}/etc/machine-id"
	# A /var/log/journal directory makes journald keep every boot (Storage=auto).
	mkdir -p "${root}/var/log/journal" "${root}/etc/kubernetes/manifests" "${root}/etc/kmaint-node" \
		"${root}/opt/kmaint-node/images" "${root}/usr/local/bin"
	: >"${root}/usr/local/bin/kubelet" # the bind mount's target
	# debootstrap copies the host's; each node writes its own hostname.
	printf '# The test cluster has no DNS.\n' >"${root}/etc/resolv.conf"
	printf 'node\n' >"${root}/etc/hostname"
	printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"${root}/etc/hosts"
	chroot "${root}" passwd -qd root
	chroot "${root}" useradd --create-home --uid "${USER_ID}" --shell /bin/sh "${USER_NAME}"
	# Units a machine in a container has no use for, which would only fail.
	for unit in systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer; do
		chroot "${root}" systemctl mask "${unit}" >/dev/null 2>&1 || true
	done
	chroot "${root}" systemctl enable kmaint-node-prep.service kmaint-node-images.service kubelet.service containerd.service >/dev/null
	rm -rf "${root}"/var/cache/apt/archives/*.deb "${root}"/var/lib/apt/lists/*
	touch "${root}/.complete"
	log "built ${root} ($(du -sh "${root}" | cut -f1))"
}

cache_init
key="$(cache_key node-rootfs "${SUITE}" "${MIRROR}" "${recipe}")"
if (( EUID != 0 )); then
	ROOTFS="$(cache_found node-rootfs "${key}")" || { log "debootstrap needs root"; exit 1; }
else
	ROOTFS="$(cache_build node-rootfs "${key}" 3 build)"
fi
cache_link "${BIN_DIR}/node-rootfs/${SUITE}" "${ROOTFS}"
echo "${ROOTFS}"
