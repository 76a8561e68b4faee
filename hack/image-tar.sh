#!/usr/bin/env bash
# image-tar.sh builds kmaint's image from the repository's Dockerfile,
# unchanged, on a machine that reaches no container registry, and prints the
# path of a docker-archive tarball that `ctr -n k8s.io images import` (and
# `docker load`) take. Tests that run kmaint as a cluster runs it import it
# into their nodes' containerd.
#
# The Dockerfile's FROM lines name images that only a registry has, so they
# are made here first, from Debian's packages and the Go module proxy, and
# stored under exactly those names; then buildah (daemonless) builds the
# Dockerfile with --pull=never, so nothing but those local images can be used:
#   - debian:bookworm-slim: `debootstrap --variant=minbase bookworm` (what
#     Debian's official images start from), with their apt configuration,
#     trimmed as their -slim variant is (no man pages, docs but copyrights,
#     locales or info), one layer;
#   - golang:<GO_VERSION>-bookworm, GO_VERSION read from the Dockerfile: the
#     untrimmed root (as debian:bookworm), the official golang image's
#     compilers and tools (gcc, g++, libc6-dev, make, pkg-config, git,
#     ca-certificates; not its mercurial or subversion), and the Go
#     toolchain from the module proxy (golang.org/toolchain, checked against
#     the checksum database as every module is) in /usr/local/go, with that
#     image's GOPATH=/go, PATH and GOTOOLCHAIN=local.
# test/image opens the tarball and checks it against the Dockerfile.
#
# Cached in the machine's cache (hack/cache.sh), so that only a change to
# what the image is built from rebuilds it, in any checkout of the machine:
#   image-base/<key>/   the two base images as docker-archives; key = the Go
#                       version, the mirror and the functions that make them
#   image/<key>/kmaint.tar   the image; key = the base's key and a hash of
#                       the files the build context lets in (.dockerignore),
#                       the Dockerfile and this script
#   image-go/go<GO_VERSION>/ the build stage's Go module and build caches
#                       (its cache mounts): the go command's own, trusted
#                       as the host's GOMODCACHE and GOCACHE are (a module
#                       is checked against go.sum when it is downloaded),
#                       not checked by hack/cache.sh
# Each image is built in a buildah store of its own, made from the base's
# archives (checked against the cache's record) and removed afterwards.
# VERSION and COMMIT are stamped as `make docker-build` stamps them; a cached
# image keeps those of the build that made it (its code is the same).
# bin/image/kmaint.tar links to the newest image.
#
# Nothing of the host changes: buildah's store, run root, temporary files and
# cache mounts are in the cache (vfs storage: no overlay mounts), it runs
# with chroot isolation in a private mount and PID namespace (whatever it or
# debootstrap mounts, and every process, ends with it), and /var/lib is
# read-only there so buildah cannot leave its blob-info cache in
# /var/lib/containers.
#
# The image has two layers, the base's and one for the final stage's
# instructions: buildah builds with --layers=false, which commits each stage
# once, since every intermediate layer in vfs storage is a full copy. Its
# configuration and history are the Dockerfile's, step by step.
#
# Needs root, buildah and debootstrap (hack/install-test-deps.sh installs
# them). Cold, on a 2-core machine busy with other builds: 13 minutes for
# the base images (debootstrap 5), 35 for the image (two cold Go builds of
# the binaries, modules downloaded); after a change to the code: about a
# minute; unchanged: at once.
#
# Usage: hack/image-tar.sh [BIN_DIR]   (default: ./bin)
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=hack/cache.sh
source hack/cache.sh
BIN_DIR="$(mkdir -p "${1:-bin}" && cd "${1:-bin}" && pwd)"
# The name the tarball gives the image; test values install it with
# imagePullPolicy Never.
IMAGE_NAME="${IMAGE_NAME:-localhost/kmaint:local}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

log() { echo "image-tar: $*" >&2; }
die() { log "$*"; exit 1; }

GO_VERSION="$(sed -n 's/^ARG GO_VERSION=\([0-9.]*\)$/\1/p' Dockerfile)"
[[ -n "${GO_VERSION}" ]] || die "no 'ARG GO_VERSION=' line in the Dockerfile"
# The images this script knows how to make; a Dockerfile that names others
# needs them added here.
want_from=("FROM golang:\${GO_VERSION}-bookworm AS build" "FROM debian:bookworm-slim AS kmaint")
mapfile -t have_from < <(grep '^FROM ' Dockerfile)
[[ "${have_from[*]}" == "${want_from[*]}" ]] ||
	die "the Dockerfile's FROM lines changed (${have_from[*]}); teach hack/image-tar.sh to make their images"
BASES=(docker.io/library/debian:bookworm-slim "docker.io/library/golang:${GO_VERSION}-bookworm")

cache_init

# A snapshot of the build context as .dockerignore lets it in (go.mod,
# go.sum, the Go packages' files but tests and documents), the Dockerfile
# and this script: the image is built from it and cached under its hash, so
# that an edit made during a build cannot end up in an image cached as other
# code.
CONTEXTS="${CACHE_ROOT}/image-context"
mkdir -p "${CONTEXTS}"
find "${CONTEXTS}" -mindepth 1 -maxdepth 1 -name 'context.*' -mmin +180 -exec rm -rf {} + # of killed runs
SNAP="$(mktemp -d "${CONTEXTS}/context.XXXXXX")"
trap 'rm -rf "${SNAP}"' EXIT
{
	git ls-files --cached --others --exclude-standard -- go.mod go.sum api cmd daemon internal operator policies |
		grep -vE '(_test\.go$|\.md$|(^|/)testdata/)'
	printf '%s\n' Dockerfile .dockerignore hack/image-tar.sh
} | while read -r f; do if [[ -f "$f" ]]; then printf '%s\0' "$f"; fi; done | xargs -0 cp --parents -t "${SNAP}" --
context_key="$(cd "${SNAP}" && find . -type f -print0 | sort -z | xargs -0 sha256sum -- | sha256sum | cut -c1-16)"

# A build's buildah store, run root and scratch files are under WORK, its
# temporary files and cache mounts under BUILDAH_TMP; build_base and
# build_image set both.
WORK=""
BUILDAH_TMP=""

# in_namespace runs a command in a private mount and PID namespace with
# /var/lib read-only, with buildah's temporary files and cache mounts under
# BUILDAH_TMP. When this script dies, even by SIGKILL, the namespace and all
# in it die too: unshare gets SIGKILL when its parent dies, and kills the
# namespace's first process, which takes every other with it.
in_namespace() {
	mkdir -p "${BUILDAH_TMP}"
	TMPDIR="${BUILDAH_TMP}" setpriv --pdeathsig SIGKILL -- \
		unshare --mount --propagation private --pid --fork --kill-child --mount-proc -- \
		bash -euo pipefail -c 'mount --bind /var/lib /var/lib && mount -o remount,bind,ro /var/lib && exec "$@"' bash "$@"
}

bah() {
	in_namespace buildah --root "${WORK}/storage" --runroot "${WORK}/run" --storage-driver vfs "$@"
}

build() {
	bah build --isolation chroot --pull=never --layers=false \
		--signature-policy "${WORK}/policy.json" "$@" >&2
}

# new_store WORK makes the directory of a buildah store, and points WORK at
# it.
new_store() {
	WORK="$1"
	mkdir -p "${WORK}"
	echo '{"default":[{"type":"insecureAcceptAnything"}]}' >"${WORK}/policy.json"
}

# debootstrap's root, made once: minbase is what Debian's official images are
# made from. Its apt configuration is theirs (debuerreotype's): the three
# suites, no recommends kept on autoremove, no package cache, no translations.
make_rootfs() {
	local root="${WORK}/rootfs"
	log "debootstrap bookworm (minbase) from ${DEBIAN_MIRROR}"
	in_namespace debootstrap --variant=minbase --merged-usr bookworm "${root}" "${DEBIAN_MIRROR}" >"${WORK}/debootstrap.log" 2>&1 ||
		{ tail -20 "${WORK}/debootstrap.log" >&2; die "debootstrap failed"; }
	rm -f "${root}/etc/apt/sources.list"
	cat >"${root}/etc/apt/sources.list.d/debian.sources" <<-EOF
		Types: deb
		URIs: ${DEBIAN_MIRROR}
		Suites: bookworm bookworm-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb
		URIs: ${DEBIAN_MIRROR}-security
		Suites: bookworm-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	if [[ "${DEBIAN_MIRROR}" != http://deb.debian.org/debian ]]; then
		sed -i 's|^URIs: .*-security$|URIs: http://deb.debian.org/debian-security|' "${root}/etc/apt/sources.list.d/debian.sources"
	fi
	cat >"${root}/etc/apt/apt.conf.d/docker-clean" <<-'EOF'
		DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		Dir::Cache::pkgcache "";
		Dir::Cache::srcpkgcache "";
	EOF
	echo 'Acquire::Languages "none";' >"${root}/etc/apt/apt.conf.d/docker-no-languages"
	echo 'Acquire::GzipIndexes "true";' >"${root}/etc/apt/apt.conf.d/docker-gzip-indexes"
	echo 'Apt::AutoRemove::SuggestsImportant "false";' >"${root}/etc/apt/apt.conf.d/docker-autoremove-suggests"
	printf '#!/bin/sh\n# Containers start no services.\nexit 101\n' >"${root}/usr/sbin/policy-rc.d"
	chmod 0755 "${root}/usr/sbin/policy-rc.d"
	# The runtime makes /dev; debootstrap's device nodes stay out.
	rm -rf "${root}"/dev/*
	rm -rf "${root}"/var/lib/apt/lists/* "${root}"/var/cache/apt/*.bin "${root}"/var/cache/apt/archives/*.deb \
		"${root}"/var/log/* "${root}"/tmp/* "${root}"/root/.bash_history
	tar --numeric-owner --xattrs -C "${root}" -cf "${WORK}/bookworm-rootfs.tar" .
	rm -rf "${root}"
}

# debian:bookworm-slim and debian:bookworm as Debian's official images are:
# FROM scratch, the root in one layer, CMD bash. -slim drops what dpkg is
# told to leave out from then on too.
make_debian() {
	local ctx="${WORK}/debian"
	mkdir -p "${ctx}"
	ln "${WORK}/bookworm-rootfs.tar" "${ctx}/rootfs.tar"
	printf 'FROM scratch\nADD rootfs.tar /\nCMD ["bash"]\n' >"${ctx}/Containerfile"
	log "making docker.io/library/debian:bookworm"
	build -t docker.io/library/debian:bookworm -f "${ctx}/Containerfile" "${ctx}"
	cat >"${ctx}/Containerfile.slim" <<-'EOF'
		FROM docker.io/library/debian:bookworm AS trim
		RUN set -eu; \
			printf '%s\n' \
				'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
				'path-exclude /usr/share/groff/*' 'path-exclude /usr/share/info/*' \
				'path-exclude /usr/share/linda/*' 'path-exclude /usr/share/lintian/overrides/*' \
				'path-exclude /usr/share/locale/*' 'path-exclude /usr/share/man/*' \
				>/etc/dpkg/dpkg.cfg.d/docker; \
			find /usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete; \
			find /usr/share/doc -mindepth 1 -type d -empty -delete; \
			rm -rf /usr/share/groff/* /usr/share/info/* /usr/share/linda/* /usr/share/lintian/overrides/* \
				/usr/share/locale/* /usr/share/man/*
		FROM scratch
		COPY --from=trim / /
		CMD ["bash"]
	EOF
	log "making docker.io/library/debian:bookworm-slim"
	build -t docker.io/library/debian:bookworm-slim -f "${ctx}/Containerfile.slim" "${ctx}"
}

# golang:<GO_VERSION>-bookworm as the official image's Dockerfile makes it.
make_golang() {
	local ctx="${WORK}/golang" mod
	mkdir -p "${ctx}"
	log "fetching Go ${GO_VERSION} (golang.org/toolchain) from the module proxy"
	# Outside any module, so that no go.sum is touched.
	mod="$(cd "${WORK}" && GOFLAGS= go mod download -json "golang.org/toolchain@v0.0.1-go${GO_VERSION}.linux-amd64" |
		sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
	[[ -x "${mod}/bin/go" || -f "${mod}/bin/go" ]] || die "no Go toolchain in ${mod}"
	cp -r "${mod}" "${ctx}/go"
	chmod -R u+w "${ctx}/go"
	# As the go command does when it switches to a downloaded toolchain: the
	# module zip carries no file modes.
	chmod 0755 "${ctx}/go/bin/"* "${ctx}/go/pkg/tool/"*/*
	# The build stage fetches modules over HTTPS from inside the image. Where
	# the network intercepts TLS with a CA of its own, which the host trusts
	# (/usr/local/share/ca-certificates, the Debian way), the stand-in for
	# golang:<GO_VERSION>-bookworm trusts it too. Only the build stage does:
	# kmaint's image gets Debian's ca-certificates alone.
	mkdir -p "${ctx}/local-ca"
	find /usr/local/share/ca-certificates -maxdepth 2 -name '*.crt' -exec cp {} "${ctx}/local-ca/" \; 2>/dev/null || true
	cat >"${ctx}/Containerfile" <<-EOF
		FROM docker.io/library/debian:bookworm
		RUN apt-get update \\
			&& apt-get install -y --no-install-recommends ca-certificates curl git netbase procps \\
				g++ gcc libc6-dev make pkg-config \\
			&& rm -rf /var/lib/apt/lists/*
		ENV GOLANG_VERSION=${GO_VERSION} GOTOOLCHAIN=local GOPATH=/go
		ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		COPY local-ca/ /usr/local/share/ca-certificates/
		RUN update-ca-certificates
		COPY go /usr/local/go
		RUN mkdir -p "\$GOPATH/src" "\$GOPATH/bin" && chmod -R 1777 "\$GOPATH" && go version
		WORKDIR /go
	EOF
	log "making docker.io/library/golang:${GO_VERSION}-bookworm"
	build -t "docker.io/library/golang:${GO_VERSION}-bookworm" -f "${ctx}/Containerfile" "${ctx}"
}

# build_base OUT makes the base images in a store of its own and saves them
# in OUT as docker-archives, one per image.
build_base() {
	local out="$1" i
	new_store "${out}.work"
	BUILDAH_TMP="${WORK}/buildah-tmp"
	make_rootfs
	make_debian
	make_golang
	for i in "${!BASES[@]}"; do
		bah push --signature-policy "${WORK}/policy.json" "${BASES[i]}" "docker-archive:${out}/base-${i}.tar:${BASES[i]}" >&2
	done
	cache_remove_tree "${WORK}"
}

# The build stage's `go mod download` fills its cache mount at /go/pkg/mod
# (buildah keeps it at buildah-cache/go/pkg/mod). On a fresh machine it
# would download every module again that `make mod-download` already put in
# the host's module cache; copying go.sum's modules from there first saves
# that. Best effort: whatever is missing is downloaded as before, and the
# go command checks every module against go.sum either way.
seed_module_cache() {
	local from to line path version esc f
	from="$(GOFLAGS= go env GOMODCACHE 2>/dev/null)/cache/download"
	to="${BUILDAH_TMP}/buildah-cache/go/pkg/mod/cache/download"
	[[ -d "${from}" ]] || return 0
	while read -r path version _; do
		version="${version%/go.mod}"
		esc="$(sed 's/[A-Z]/!\L&/g' <<<"${path}")"
		for f in "${esc}/@v/${version}".{info,mod,zip,ziphash}; do
			if [[ -f "${from}/${f}" && ! -e "${to}/${f}" ]]; then
				mkdir -p "$(dirname "${to}/${f}")"
				cp "${from}/${f}" "${to}/${f}"
			fi
		done
	done <"${SNAP}/go.sum"
}

# build_image OUT BASE builds the Dockerfile into OUT/kmaint.tar, in a new
# store that holds the base images of BASE (build_base's OUT), and with the
# build stage's Go caches of this Go version.
build_image() {
	local out="$1" base="$2" i id
	new_store "${out}.work"
	local caches="${CACHE_ROOT}/image-go"
	BUILDAH_TMP="${caches}/go${GO_VERSION}"
	# Caches of other Go versions would never be used again; what buildah
	# left of a killed build (cache_build holds the image lock) neither.
	find "${caches}" -mindepth 1 -maxdepth 1 ! -name "go${GO_VERSION}" -exec rm -rf {} + 2>/dev/null || true
	rm -rf "${BUILDAH_TMP}"/buildah[0-9]*
	for i in "${!BASES[@]}"; do
		id="$(bah pull --quiet --signature-policy "${WORK}/policy.json" "docker-archive:${base}/base-${i}.tar")"
		bah tag "${id}" "${BASES[i]}" >/dev/null
	done
	seed_module_cache
	log "building ${IMAGE_NAME} from the Dockerfile (VERSION=${VERSION} COMMIT=${COMMIT})"
	build --build-arg "VERSION=${VERSION}" --build-arg "COMMIT=${COMMIT}" -t "${IMAGE_NAME}" -f "${SNAP}/Dockerfile" "${SNAP}"
	bah push --signature-policy "${WORK}/policy.json" "${IMAGE_NAME}" "docker-archive:${out}/kmaint.tar:${IMAGE_NAME}" >&2
	cache_remove_tree "${WORK}"
}

base_key="$(cache_key image-base "go ${GO_VERSION}" "mirror ${DEBIAN_MIRROR}" \
	"$(declare -f in_namespace bah build new_store make_rootfs make_debian make_golang build_base | sha256sum)" \
	"$(cat /usr/local/share/ca-certificates/*.crt /usr/local/share/ca-certificates/*/*.crt 2>/dev/null | sha256sum)")"
key="$(cache_key image "${context_key}" "${base_key}" "image ${IMAGE_NAME}")"

if (( EUID != 0 )); then
	dir="$(cache_found image "${key}")" || die "building the image needs root (debootstrap, buildah with chroot isolation)"
else
	for tool in buildah debootstrap unshare setpriv flock; do
		command -v "${tool}" >/dev/null 2>&1 || die "${tool} is missing: run hack/install-test-deps.sh"
	done
	VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
	COMMIT="${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}"
	start=${SECONDS}
	if ! dir="$(cache_found image "${key}")"; then
		base="$(cache_build image-base "${base_key}" 2 build_base)"
		dir="$(cache_build image "${key}" 3 build_image "${base}")"
		log "built ${dir}/kmaint.tar ($(du -m "${dir}/kmaint.tar" | cut -f1) MB) in $((SECONDS - start))s"
	fi
fi
cache_link "${BIN_DIR}/image/kmaint.tar" "${dir}/kmaint.tar"
echo "${dir}/kmaint.tar"
