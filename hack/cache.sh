# shellcheck shell=bash
# cache.sh is sourced by the build scripts (hack/envtest-assets.sh,
# hack/cluster-assets.sh, hack/helm-assets.sh, hack/node-rootfs.sh,
# hack/image-tar.sh). It keeps what they make in a cache of the machine,
# outside any checkout, so that a fresh clone on a machine that built once
# finds kube-apiserver, the node root, the image's base and the rest ready.
#
# Where: $KMAINT_CACHE, else $XDG_CACHE_HOME/kmaint, else ~/.cache/kmaint.
# `make cache-clean` (and `make distclean`) removes it.
#
#   v1/<kind>/<key>/             one entry: the artifact, and .kmaint-cache
#   v1/<kind>/<key>/.kmaint-cache  the record written with it: format, kind
#                                and key, then every path's type, mode and
#                                owner, a link's target and a file's SHA-256
#   v1/<kind>/.lock              held while an entry of that kind is built
#   v1/<kind>/.tmp.<key>.XXXXXX  an entry being built; a killed build's is
#                                removed by the next build of that kind
#
# The key is a hash of exactly what makes the artifact: the versions, the
# recipe (the script that builds it) and, for Go builds, the Go version.
# An entry is built in a temporary directory and renamed into place whole,
# so a reader sees a complete entry or none. Every read checks the entry
# against its record: a file changed, added or removed since it was written,
# an entry of another key or kind, or one not owned by this user is removed
# and built again, never used.

# cache_init sets CACHE_ROOT and makes it if missing. The root must be this
# user's and writable by no one else: whoever can write there decides what
# the tests (and a demo cluster) run as root.
cache_init() {
	local base="${KMAINT_CACHE:-${XDG_CACHE_HOME:-${HOME:?}/.cache}/kmaint}"
	CACHE_ROOT="${base}/v1"
	mkdir -p "${CACHE_ROOT}"
	chmod 0700 "${base}" "${CACHE_ROOT}"
	local d
	for d in "${base}" "${CACHE_ROOT}"; do
		if [[ "$(stat -c %u "${d}")" != "${EUID}" ]]; then
			echo "cache: ${d} belongs to another user; set KMAINT_CACHE to a directory of your own" >&2
			return 1
		fi
	done
}

# cache_key PART...: the key of an artifact made from PARTs (versions,
# recipe hashes, the Go version).
cache_key() {
	printf '%s\0' "$@" | sha256sum | cut -c1-20
}

# cache_recipe FILE...: a hash of the files that say how an artifact is made.
cache_recipe() {
	cat -- "$@" | sha256sum | cut -c1-20
}

# cache_listing DIR prints what the record of DIR holds: for every path
# (DIR itself as ".") its type, mode, owner and group, a link's target, then
# every regular file's SHA-256. Modification times are left out: reading an
# entry must not change it.
cache_listing() {
	(
		cd "$1" || exit 1
		find . ! -path ./.kmaint-cache -printf '%y %m %U:%G %p\t%l\n' | LC_ALL=C sort
		find . -type f ! -path ./.kmaint-cache -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum --
	)
}

cache_log() { echo "cache: $*" >&2; }

# cache_check KIND KEY DIR tells whether DIR is a whole, unchanged entry of
# KIND and KEY; if not, it says why on stderr.
cache_check() {
	local kind="$1" key="$2" dir="$3" record="$3/.kmaint-cache"
	if [[ ! -f "${record}" || -L "${record}" ]]; then
		cache_log "${kind}/${key} has no record"
		return 1
	fi
	local path
	for path in "${dir}" "${record}"; do
		if [[ "$(stat -c %u "${path}")" != "${EUID}" ]] || [[ -n "$(find "${path}" -maxdepth 0 -perm /022)" ]]; then
			cache_log "${kind}/${key}: ${path} belongs to another user or others may write it"
			return 1
		fi
	done
	if [[ "$(head -n 1 "${record}")" != "kmaint-cache 1 ${kind} ${key}" ]]; then
		cache_log "${kind}/${key}: its record is of another entry ($(head -c 200 "${record}" | head -n 1))"
		return 1
	fi
	local diffs
	if ! diffs="$(diff <(tail -n +2 "${record}") <(cache_listing "${dir}"))"; then
		cache_log "${kind}/${key} differs from what was written:"
		head -n 10 <<<"${diffs}" >&2
		return 1
	fi
}

# cache_remove_tree DIR removes DIR, first unmounting whatever a killed
# build left mounted inside it (debootstrap mounts /proc and /sys), so that
# rm never descends into a mount.
cache_remove_tree() {
	local dir="$1" m
	[[ -e "${dir}" || -L "${dir}" ]] || return 0
	dir="$(realpath -s "${dir}")"
	while read -r m; do
		umount -l "${m}" 2>/dev/null || true
	done < <(findmnt --list --noheadings --output TARGET 2>/dev/null | grep -F "${dir}/" | sort -r)
	rm -rf --one-file-system "${dir}"
}

# cache_lock KIND takes the kind's build lock (an flock: it goes with its
# holder however that ends) on file descriptor CACHE_LOCK_FD.
cache_lock() {
	mkdir -p "${CACHE_ROOT}/$1"
	exec {CACHE_LOCK_FD}>"${CACHE_ROOT}/$1/.lock"
	flock "${CACHE_LOCK_FD}"
}

cache_unlock() { exec {CACHE_LOCK_FD}>&-; }

# cache_lookup KIND KEY prints the entry's directory when it is there and
# whole. An entry that is not is removed, under the kind's lock, so that it
# is built again; cache_lookup_locked is the same for a caller that holds
# the lock already.
cache_lookup() {
	cache_found "$1" "$2" && return 0
	[[ -e "${CACHE_ROOT}/$1/$2" || -L "${CACHE_ROOT}/$1/$2" ]] || return 1
	cache_lock "$1"
	local rc=0
	cache_lookup_locked "$1" "$2" || rc=$?
	cache_unlock
	return "${rc}"
}

cache_lookup_locked() {
	# Quiet: the caller's own look said what was wrong.
	cache_found "$1" "$2" 2>/dev/null && return 0
	local dir="${CACHE_ROOT}/$1/$2"
	if [[ -e "${dir}" || -L "${dir}" ]]; then
		cache_log "removing ${dir}; it is built again"
		cache_remove_tree "${dir}"
	fi
	return 1
}

# cache_found KIND KEY prints the entry's directory when it is there and
# whole, and marks it used.
cache_found() {
	local dir="${CACHE_ROOT}/$1/$2"
	[[ -d "${dir}" && ! -L "${dir}" ]] || return 1
	cache_check "$1" "$2" "${dir}" || return 1
	touch -c "${dir}/.kmaint-cache" # when it was last used, for cache_prune
	echo "${dir}"
}

# cache_build KIND KEY KEEP FUNCTION [ARG...] prints the directory of the
# entry, running `FUNCTION DIR ARG...` to make it first when it is missing
# (or was not whole). FUNCTION fills DIR, a new empty directory (mode 0755),
# with the artifact; it may use DIR.* beside it as scratch space (removed
# when it fails, or by the next build of KIND when it was killed). It runs
# in a subshell with errexit: it fails on the first failing command, and
# its traps and variables stay its own. The KEEP most recently used entries
# of KIND stay; older ones are removed.
cache_build() {
	local kind="$1" key="$2" keep="$3" fn="$4"
	shift 4
	cache_found "${kind}" "${key}" && return 0
	cache_lock "${kind}"
	# Another build of this kind may have made it while this one waited.
	if cache_lookup_locked "${kind}" "${key}"; then
		cache_unlock
		return 0
	fi
	local t
	for t in "${CACHE_ROOT}/${kind}"/.tmp.*; do
		[[ -e "${t}" ]] && cache_remove_tree "${t}"
	done
	local tmp rc=0
	tmp="$(mktemp -d "${CACHE_ROOT}/${kind}/.tmp.${key}.XXXXXX")"
	chmod 0755 "${tmp}"
	# Its output goes to stderr: callers take the entry's path from stdout.
	set +e
	(
		set -e
		"${fn}" "${tmp}" "$@"
	) >&2
	rc=$?
	set -e
	if ((rc != 0)); then
		for t in "${tmp}" "${tmp}".*; do
			cache_remove_tree "${t}"
		done
		cache_unlock
		cache_log "building ${kind}/${key} failed (${rc})"
		return "${rc}"
	fi
	# The record is written beside the entry, so that it does not list
	# itself, then moved in.
	{
		echo "kmaint-cache 1 ${kind} ${key}"
		cache_listing "${tmp}"
	} >"${tmp}.record"
	chmod 0644 "${tmp}.record"
	mv "${tmp}.record" "${tmp}/.kmaint-cache"
	mv -T "${tmp}" "${CACHE_ROOT}/${kind}/${key}"
	cache_prune "${kind}" "${keep}"
	cache_unlock
	echo "${CACHE_ROOT}/${kind}/${key}"
}

# cache_prune KIND KEEP removes all but the KEEP most recently used entries
# of KIND. The caller holds the kind's lock.
cache_prune() {
	local kind="$1" keep="$2" old
	while read -r old; do
		cache_log "removing ${kind}/${old##*/}, used least recently"
		cache_remove_tree "${old}"
	done < <(find "${CACHE_ROOT}/${kind}" -mindepth 2 -maxdepth 2 -name .kmaint-cache -printf '%T@ %h\n' |
		sort -rn | tail -n "+$((keep + 1))" | cut -d' ' -f2-)
}

# cache_link LINK DIR points LINK (in a checkout's bin/) at an entry, for
# the tests that look there when no variable names the directory.
cache_link() {
	mkdir -p "$(dirname "$1")"
	# A directory there is a build of the days before this cache.
	if [[ -d "$1" && ! -L "$1" ]]; then
		cache_remove_tree "$1"
	fi
	ln -sfn "$2" "$1"
}
