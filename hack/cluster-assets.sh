#!/usr/bin/env bash
# cluster-assets.sh prints a directory holding what the real test cluster
# (test/realcluster) runs besides kube-apiserver and etcd: kubelet,
# kube-controller-manager and kube-scheduler at the pinned Kubernetes
# version, and two container images as docker-archive tarballs that
# containerd imports (`ctr images import`): the pause image and a busybox
# image. Nothing can be downloaded from a release page or a registry on CI's
# network, so everything is built here and cached: the binaries from the Go
# module proxy (as hack/envtest-assets.sh builds kube-apiserver), the pause
# image from pause.c in the same k8s.io/kubernetes module (gcc -static), the
# busybox image from Debian's busybox-static.
#
# No kube-proxy: kube-proxy on these nodes would need the host kernel's
# br_netfilter module (service traffic that returns over the same bridge)
# and writes conntrack limits that are the host's, and nothing of the host
# may change. In-cluster clients reach the API server unchanged instead: the
# `kubernetes` Service's cluster IP is an address of the cluster's network
# namespace, where the API server listens on 443 (test/realcluster).
#
# Cached in the machine's cache (hack/cache.sh) under a key of the
# Kubernetes version, the pause tag, the Go and gcc versions and this
# script; bin/cluster/VERSION links to it. A change to the recipe builds
# anew: the Go build cache makes that a matter of linking, where the
# machine built before.
#
# Usage: hack/cluster-assets.sh [BIN_DIR]   (default: ./bin)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/cache.sh
source "${here}/cache.sh"
# shellcheck source=hack/kube-module.sh
source "${here}/kube-module.sh"

KUBE_VERSION="${KUBE_VERSION:-1.37.2}"
# The pause image's tag is the one kubelet 1.37 and containerd ask for by
# default (sandbox_image in the node's containerd config).
PAUSE_TAG="${PAUSE_TAG:-3.10}"
BIN_DIR="$(mkdir -p "${1:-bin}" && cd "${1:-bin}" && pwd)"
BINARIES=(kubelet kube-controller-manager kube-scheduler)

log() { echo "cluster-assets: $*" >&2; }

# kube_module in a directory of its own, made once.
kube_module_dir() {
	mkdir -p "${work}/mod" && cd "${work}/mod"
	[[ -f go.mod ]] || kube_module kmaint.local/cluster-build "${KUBE_VERSION}" "${BINARIES[@]}"
}

build_binaries() {
	kube_module_dir
	# Without these the components report v0.0.0-master, and kubelet's
	# version is what `kubectl get nodes` and the API server's skew checks see.
	local v="k8s.io/component-base/version" minor="${KUBE_VERSION#1.}"
	minor="${minor%%.*}"
	local ldflags="-s -X ${v}.gitVersion=v${KUBE_VERSION} -X ${v}.gitMajor=1 -X ${v}.gitMinor=${minor}"
	ldflags+=" -X ${v}.gitTreeState=clean -X ${v}.buildDate=1970-01-01T00:00:00Z"
	local b
	for b in "${BINARIES[@]}"; do
		log "building ${b} v${KUBE_VERSION}"
		GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags="${ldflags}" -o "${ASSETS}/${b}" "k8s.io/kubernetes/cmd/${b}"
	done
}

# docker_archive REF ROOTFS OUT ENTRYPOINT...: a one-layer docker-archive
# image (what `ctr images import` reads) of ROOTFS, with reproducible bytes:
# sorted names, owner root, mtime 0.
docker_archive() {
	local ref="$1" rootfs="$2" out="$3"
	shift 3
	local dir="${work}/archive"
	rm -rf "${dir}" && mkdir -p "${dir}"
	tar -C "${rootfs}" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=posix \
		--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "${dir}/layer.tar" .
	local layer_sha entrypoint config config_sha
	layer_sha="$(sha256sum "${dir}/layer.tar" | cut -d' ' -f1)"
	entrypoint="$(printf '"%s",' "$@")"
	config="{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Entrypoint\":[${entrypoint%,}],\"Env\":[\"PATH=/bin\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:${layer_sha}\"]}}"
	config_sha="$(printf '%s' "${config}" | sha256sum | cut -d' ' -f1)"
	mkdir "${dir}/${layer_sha}"
	mv "${dir}/layer.tar" "${dir}/${layer_sha}/layer.tar"
	printf '%s' "${config}" >"${dir}/${config_sha}.json"
	printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "${config_sha}" "${ref}" "${layer_sha}" >"${dir}/manifest.json"
	tar -C "${dir}" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "${out}" manifest.json "${config_sha}.json" "${layer_sha}"
}

build_pause() {
	local dir
	dir="$(go mod download -json "k8s.io/kubernetes@v${KUBE_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
	log "building the pause image from ${dir}/build/pause/linux/pause.c"
	mkdir -p "${work}/pause"
	gcc -Os -static -DVERSION="v${PAUSE_TAG}-kmaint" -o "${work}/pause/pause" "${dir}/build/pause/linux/pause.c"
	strip "${work}/pause/pause"
	docker_archive "registry.k8s.io/pause:${PAUSE_TAG}" "${work}/pause" "${ASSETS}/images/pause.tar" /pause
}

build_busybox() {
	log "building the busybox image from Debian's busybox-static"
	mkdir -p "${work}/deb" "${work}/busybox/bin" "${work}/busybox/tmp"
	# apt-get download needs the package lists, which a fresh machine may
	# not have yet.
	(cd "${work}/deb" && { apt-get download busybox-static >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get download busybox-static >/dev/null; }; })
	dpkg-deb -x "${work}"/deb/busybox-static_*.deb "${work}/deb/x"
	cp "${work}/deb/x/bin/busybox" "${work}/busybox/bin/busybox"
	local applet
	# The applets the test workloads and a person poking at a pod use.
	for applet in sh ls cat echo sleep date id ps mount df wget nc ip hostname env true false test printf grep tail head; do
		ln -s busybox "${work}/busybox/bin/${applet}"
	done
	chmod 1777 "${work}/busybox/tmp"
	docker_archive "docker.io/library/busybox:kmaint" "${work}/busybox" "${ASSETS}/images/busybox.tar" /bin/sh
}

# build OUT builds everything into OUT, the images under OUT/images.
build() {
	ASSETS="$1"
	work="$(mktemp -d)"
	trap 'rm -rf "${work}"' EXIT
	mkdir -p "${ASSETS}/images"
	build_pause
	build_busybox
	build_binaries
}

cache_init
key="$(cache_key cluster "kube ${KUBE_VERSION}" "pause ${PAUSE_TAG}" "$(go env GOVERSION)" "$(gcc -dumpfullversion 2>/dev/null)" \
	"$(cache_recipe "${BASH_SOURCE[0]}" "${here}/kube-module.sh")")"
dir="$(cache_build cluster "${key}" 3 build)"
cache_link "${BIN_DIR}/cluster/${KUBE_VERSION}" "${dir}"
echo "${dir}"
