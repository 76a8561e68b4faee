#!/usr/bin/env bash
# kube-module.sh is sourced by hack/envtest-assets.sh and
# hack/cluster-assets.sh, which build kube binaries from the Go module proxy.

# kube_module NAME VERSION COMMAND... makes the current directory a
# throwaway module NAME that builds the k8s.io/kubernetes commands COMMAND...
# (cmd/COMMAND) of release VERSION. k8s.io/kubernetes refers to its staging
# modules by relative path, so each is replaced by its release of the same
# number. Both scripts build from this one module graph with the same
# flags, so the packages their binaries share compile once on a machine.
kube_module() {
	local name="$1" version="$2" gomod staging c
	shift 2
	go mod init "${name}" >/dev/null 2>&1
	gomod="$(go mod download -json "k8s.io/kubernetes@v${version}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
	staging="v0.${version#1.}"
	{
		echo "require k8s.io/kubernetes v${version}"
		grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "${gomod}" |
			awk -v v="${staging}" '{print "replace " $1 " => " $1 " " v}'
	} >>go.mod
	{
		printf '//go:build tools\n\npackage tools\n\nimport (\n'
		for c in "$@"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "${c}"; done
		printf ')\n'
	} >tools.go
	GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true
}
