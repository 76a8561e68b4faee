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
# is built once. Its directory name holds a hash of this script and of
# hack/node-rootfs/, so a change to the recipe builds a new tree beside the
# old one (delete old ones with `make clean`). Building takes a few minutes,
# mostly downloads from the Debian mirror.
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
BIN_DIR="$(mkdir -p "${1:-bin}" && cd "${1:-bin}" && pwd -P)" # physical: findmnt prints those
recipe="$({
	cat "${BASH_SOURCE[0]}"
	cd "${here}/node-rootfs" && find . -type f | LC_ALL=C sort | xargs sha256sum
} | sha256sum | cut -c1-12)"
ROOTFS="${BIN_DIR}/node-rootfs/${SUITE}-${recipe}"

log() { echo "node-rootfs: $*" >&2; }

if [[ -x "${ROOTFS}/usr/lib/systemd/systemd" && -f "${ROOTFS}/.complete" ]]; then
	echo "${ROOTFS}"
	exit 0
fi
if (( EUID != 0 )); then
	log "debootstrap needs root"
	exit 1
fi

tmp="${ROOTFS}.tmp"
# debootstrap mounts /proc and /sys inside the tree while it installs; a run
# that died may have left them mounted, and rm must never descend into them.
remove_tmp() {
	local m
	if [[ -d "${tmp}" ]]; then
		while read -r m; do
			umount -l "${m}" 2>/dev/null || true
		done < <(findmnt --list --noheadings --output TARGET | grep -F "${tmp}/" | sort -r)
	fi
	rm -rf --one-file-system "${tmp}"
}
remove_tmp
mkdir -p "$(dirname "${ROOTFS}")"
trap remove_tmp EXIT
log "debootstrap ${SUITE} into ${tmp} (a few minutes)"
include="$(IFS=,; echo "${PACKAGES[*]}")"
if ! debootstrap --variant=minbase --include="${include}" "${SUITE}" "${tmp}" "${MIRROR}" >"${tmp}.log" 2>&1; then
	tail -30 "${tmp}.log" >&2
	log "debootstrap failed (full log: ${tmp}.log)"
	exit 1
fi
rm -f "${tmp}.log"

cp -a "${here}/node-rootfs/." "${tmp}/"
# Each node writes its own machine ID before its first boot; an empty file
# would make systemd treat the first boot as a first boot and preset units.
rm -f "${tmp}/etc/machine-id"
# A /var/log/journal directory makes journald keep every boot (Storage=auto).
mkdir -p "${tmp}/var/log/journal" "${tmp}/etc/kubernetes/manifests" "${tmp}/etc/kmaint-node" \
	"${tmp}/opt/kmaint-node/images" "${tmp}/usr/local/bin"
: >"${tmp}/usr/local/bin/kubelet" # the bind mount's target
# debootstrap copies the host's; each node writes its own hostname.
printf '# The test cluster has no DNS.\n' >"${tmp}/etc/resolv.conf"
printf 'node\n' >"${tmp}/etc/hostname"
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"${tmp}/etc/hosts"
chroot "${tmp}" passwd -qd root
chroot "${tmp}" useradd --create-home --uid "${USER_ID}" --shell /bin/sh "${USER_NAME}"
# Units a machine in a container has no use for, which would only fail.
for unit in systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer; do
	chroot "${tmp}" systemctl mask "${unit}" >/dev/null 2>&1 || true
done
chroot "${tmp}" systemctl enable kmaint-node-prep.service kmaint-node-images.service kubelet.service containerd.service >/dev/null
rm -rf "${tmp}"/var/cache/apt/archives/*.deb "${tmp}"/var/lib/apt/lists/*
touch "${tmp}/.complete"
rm -rf "${ROOTFS}"
mv "${tmp}" "${ROOTFS}"
log "built ${ROOTFS} ($(du -sh "${ROOTFS}" | cut -f1))"
echo "${ROOTFS}"
