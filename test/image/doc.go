// Package image checks kmaint's image, as hack/image-tar.sh builds it from
// the Dockerfile where no registry can be reached, against the Dockerfile:
// the configuration its instructions set (USER, ENTRYPOINT, LABELs), the
// files they put in (both binaries, runnable in the image's root and
// stamped with the commit; libsystemd.so.0 and every library the daemon
// loads; CA certificates; the packages the apt-get line installs on
// bookworm-slim), the history of its build, and that the binaries are the
// ones the Dockerfile's build commands make from this source tree: the
// static operator byte for byte, the cgo daemon by its Go build record.
package image
