#!/usr/bin/env bash
# helm-assets.sh prints a directory holding helm at the pinned version and
# the Prometheus Operator's CRDs for the objects the chart can render
# (ServiceMonitor, PodMonitor, PrometheusRule), fetching them from the Go
# module proxy when the machine's cache (hack/cache.sh) has none yet.
# test/helm renders the chart with this helm and installs these CRDs into
# its API server. Debian has no helm package and get.helm.sh cannot be
# reached on CI's network, so helm is built from its module (4 CPU-minutes;
# 7.5 minutes on a busy 2-core machine, downloads included); the CRDs are
# the prometheus-operator module's example/prometheus-operator-crd.
# bin/helm/VERSIONS links to the cached directory.
#
# Usage: hack/helm-assets.sh [BIN_DIR]   (default: ./bin)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/cache.sh
source "${here}/cache.sh"

HELM_VERSION="${HELM_VERSION:-3.22.0}"
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-0.85.0}"
BIN_DIR="$(mkdir -p "${1:-bin}" && cd "${1:-bin}" && pwd)"
CRDS=(servicemonitors podmonitors prometheusrules)

log() { echo "helm-assets: $*" >&2; }

# build OUT puts helm and the CRDs (OUT/crds) into OUT.
build() {
	local out="$1" gomod kube_minor ldflags pkg dir c
	# The ldflags of helm's own release build: without them `helm version`
	# says v3.22 and `helm template` assumes Kubernetes 1.20, older than the
	# chart's kubeVersion. Helm's Makefile takes the Kubernetes version from
	# its client-go (v0.37 -> 1.37).
	gomod="$(go mod download -json "helm.sh/helm/v3@v${HELM_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
	kube_minor="$(sed -n 's/^\s*k8s\.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "${gomod}")"
	ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=v${HELM_VERSION}"
	for pkg in pkg/lint/rules pkg/chartutil; do
		ldflags+=" -X helm.sh/helm/v3/${pkg}.k8sVersionMajor=1 -X helm.sh/helm/v3/${pkg}.k8sVersionMinor=${kube_minor}"
	done
	log "building helm v${HELM_VERSION} (Kubernetes 1.${kube_minor})"
	GOBIN="${out}" CGO_ENABLED=0 go install -trimpath -ldflags="${ldflags}" "helm.sh/helm/v3/cmd/helm@v${HELM_VERSION}"

	dir="$(go mod download -json "github.com/prometheus-operator/prometheus-operator@v${PROMETHEUS_OPERATOR_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
	mkdir -p "${out}/crds"
	for c in "${CRDS[@]}"; do
		install -m 0644 "${dir}/example/prometheus-operator-crd/monitoring.coreos.com_${c}.yaml" "${out}/crds/"
	done
}

cache_init
key="$(cache_key helm "helm ${HELM_VERSION}" "prometheus-operator ${PROMETHEUS_OPERATOR_VERSION}" "$(go env GOVERSION)" \
	"$(cache_recipe "${BASH_SOURCE[0]}")")"
dir="$(cache_build helm "${key}" 3 build)"
cache_link "${BIN_DIR}/helm/${HELM_VERSION}-prometheus-operator${PROMETHEUS_OPERATOR_VERSION}" "${dir}"
echo "${dir}"
