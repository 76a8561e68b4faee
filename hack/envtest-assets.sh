#!/usr/bin/env bash
# envtest-assets.sh prints a directory holding kube-apiserver, etcd and kubectl
# at the pinned versions, building them from the Go module proxy when they are
# not cached yet. The binaries cannot be downloaded on CI's network, so the
# build is the normal path there; setup-envtest is tried first where it works.
#
# Usage: hack/envtest-assets.sh [BIN_DIR]   (default: ./bin)
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
BIN_DIR="$(mkdir -p "${1:-bin}" && cd "${1:-bin}" && pwd)"
ASSETS="${BIN_DIR}/k8s/${KUBE_VERSION}-etcd${ETCD_VERSION}"

have_all() {
	[[ -x "${ASSETS}/kube-apiserver" && -x "${ASSETS}/etcd" && -x "${ASSETS}/kubectl" ]]
}

if have_all; then
	echo "${ASSETS}"
	exit 0
fi

mkdir -p "${ASSETS}"
log() { echo "envtest-assets: $*" >&2; }

# Where downloads work (a laptop), setup-envtest is much faster than a build.
if [[ -z "${KMAINT_BUILD_ENVTEST:-}" ]]; then
	if dir=$(GOFLAGS=-mod=mod timeout 120 go run sigs.k8s.io/controller-runtime/tools/setup-envtest@release-0.22 \
		use "${KUBE_VERSION}" --bin-dir "${BIN_DIR}/setup-envtest" -p path 2>/dev/null) && [[ -x "${dir}/kube-apiserver" ]]; then
		cp "${dir}"/* "${ASSETS}/"
		echo "${ASSETS}"
		exit 0
	fi
	log "setup-envtest could not download; building from the Go module proxy (about 11 minutes)"
fi

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
cd "${work}"

# A throwaway module: k8s.io/kubernetes refers to its staging modules by
# relative path, so each gets replaced by the release of the same number.
go mod init kmaint.local/envtest-build >/dev/null 2>&1
gomod="$(go mod download -json "k8s.io/kubernetes@v${KUBE_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
staging_version="v0.${KUBE_VERSION#1.}"
{
	echo "require k8s.io/kubernetes v${KUBE_VERSION}"
	grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "${gomod}" |
		awk -v v="${staging_version}" '{print "replace " $1 " => " $1 " " v}'
} >>go.mod
cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true
log "building kube-apiserver v${KUBE_VERSION}"
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "${ASSETS}/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
log "building kubectl v${KUBE_VERSION}"
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "${ASSETS}/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl

# etcd lives in its own module graph.
mkdir etcd && cd etcd
go mod init kmaint.local/etcd-build >/dev/null 2>&1
GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" >/dev/null 2>&1
log "building etcd v${ETCD_VERSION}"
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "${ASSETS}/etcd.tmp" go.etcd.io/etcd/server/v3

for b in kube-apiserver kubectl etcd; do mv "${ASSETS}/${b}.tmp" "${ASSETS}/${b}"; done
echo "${ASSETS}"
