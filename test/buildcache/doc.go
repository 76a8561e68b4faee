// Package buildcache tests hack/cache.sh, the machine's cache of what the
// build scripts make (kube-apiserver, the node root, the image and the
// rest): that an entry is built once and then used by any checkout, that an
// entry changed, added to or planted by someone else after it was written
// is built again rather than used, and that a build killed at any moment
// leaves nothing a later build takes for an entry.
package buildcache
