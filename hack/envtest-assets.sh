#!/usr/bin/env bash
# envtest-assets.sh prints a directory holding kube-apiserver, etcd and kubectl
# at the pinned versions, building them from the Go module proxy when the
# machine's cache (hack/cache.sh) has no build of them yet. The binaries
# cannot be downloaded on CI's network, so the build is the normal path
# there; setup-envtest is tried first where it works. bin/k8s/VERSIONS
# links to the cached directory.
#
# Usage: hack/envtest-assets.sh [BIN_DIR]   (default: ./bin)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/cache.sh
source "${here}/cache.sh"
# shellcheck source=hack/kube-module.sh
source "${here}/kube-module.sh"

KUBE_VERSION="${KUBE_VERSION:-1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
BIN_DIR="$(mkdir -p "${1:-bin}" && cd "${1:-bin}" && pwd)"

log() { echo "envtest-assets: $*" >&2; }

# build OUT builds the three binaries into OUT.
build() {
	local out="$1" dir
	# Where downloads work (a laptop), setup-envtest is much faster than a build.
	if [[ -z "${KMAINT_BUILD_ENVTEST:-}" ]]; then
		if dir=$(GOFLAGS=-mod=mod timeout 120 go run sigs.k8s.io/controller-runtime/tools/setup-envtest@release-0.22 \
			use "${KUBE_VERSION}" --bin-dir "${out}/.setup-envtest" -p path 2>/dev/null) && [[ -x "${dir}/kube-apiserver" ]]; then
			cp "${dir}"/* "${out}/"
			chmod -R u+w "${out}/.setup-envtest" && rm -rf "${out}/.setup-envtest"
			return 0
		fi
		rm -rf "${out}/.setup-envtest"
		log "setup-envtest could not download; building from the Go module proxy (about 11 minutes)"
	fi

	# Not local: the EXIT trap runs after build returns.
	work="$(mktemp -d)"
	trap 'rm -rf "${work}"' EXIT
	cd "${work}"

	kube_module kmaint.local/envtest-build "${KUBE_VERSION}" kube-apiserver kubectl
	log "building kube-apiserver v${KUBE_VERSION}"
	GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "${out}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
	log "building kubectl v${KUBE_VERSION}"
	GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "${out}/kubectl" k8s.io/kubernetes/cmd/kubectl

	# etcd lives in its own module graph.
	mkdir etcd && cd etcd
	go mod init kmaint.local/etcd-build >/dev/null 2>&1
	GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" >/dev/null 2>&1
	log "building etcd v${ETCD_VERSION}"
	GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "${out}/etcd" go.etcd.io/etcd/server/v3
}

cache_init
key="$(cache_key envtest "kube ${KUBE_VERSION}" "etcd ${ETCD_VERSION}" "$(go env GOVERSION)" "$(cache_recipe "${BASH_SOURCE[0]}" "${here}/kube-module.sh")")"
dir="$(cache_build envtest "${key}" 3 build)"
cache_link "${BIN_DIR}/k8s/${KUBE_VERSION}-etcd${ETCD_VERSION}" "${dir}"
echo "${dir}"
