# kmaint's image: one image, both binaries, /kmaint-operator and /kmaint-daemon;
# the Deployment and the DaemonSet pick theirs with `command`
# (config/manager, config/daemon). Build it with `make docker-build`, which
# passes VERSION and COMMIT from git; a plain `docker build .` works too and
# reports version "dev".
#
# Why one image on debian:bookworm-slim rather than a distroless operator
# image and a separate daemon image: the daemon needs glibc and
# libsystemd.so.0 (go-systemd's sdjournal dlopens it), which distroless/static
# lacks and distroless/base would need copied in by hand with its six
# libraries, from an arch-specific path, outside Debian's dependency
# tracking. The operator is a static binary that needs nothing from the base
# but CA certificates, so it runs unchanged on the same base, as uid 65532
# with a read-only root file system; one image means one thing to build,
# push, scan and pin in the manifests.
#
# BuildKit (docker 23+, or podman/buildah) for the cache mounts.

# Keep in step with go.mod's go line; bookworm to match the runtime's glibc.
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
# sdjournal's cgo needs the headers only: it dlopens libsystemd at run time.
RUN apt-get update \
	&& apt-get install -y --no-install-recommends libsystemd-dev \
	&& rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
# .dockerignore lets in the Go packages and nothing else.
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
# The same flags as `make build`, plus -trimpath and -s -w (no host paths, no
# symbol table or DWARF in the image). The operator needs no cgo, so it is
# static; the daemon needs it for sdjournal.
RUN --mount=type=cache,target=/go/pkg/mod \
	--mount=type=cache,target=/root/.cache/go-build \
	set -eu; \
	pkg=github.com/kmaint/kmaint/internal/version; \
	ldflags="-s -w -X ${pkg}.version=${VERSION} -X ${pkg}.commit=${COMMIT}"; \
	CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o /out/kmaint-operator ./cmd/kmaint-operator; \
	CGO_ENABLED=1 go build -trimpath -ldflags "${ldflags}" -o /out/kmaint-daemon ./cmd/kmaint-daemon; \
	/out/kmaint-operator --version; \
	/out/kmaint-daemon version

FROM debian:bookworm-slim AS kmaint
# libsystemd0 for the daemon (already in the base, as apt depends on it; named
# so that it stays if that changes), ca-certificates for the operator's
# Prometheus over https.
RUN apt-get update \
	&& apt-get install -y --no-install-recommends libsystemd0 ca-certificates \
	&& rm -rf /var/lib/apt/lists/*
COPY --from=build /out/kmaint-operator /out/kmaint-daemon /
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="kmaint" \
	org.opencontainers.image.description="One gate for every node reboot in a Kubernetes cluster: kmaint-operator and kmaint-daemon" \
	org.opencontainers.image.source="https://github.com/kmaint/kmaint" \
	org.opencontainers.image.version="${VERSION}" \
	org.opencontainers.image.revision="${COMMIT}"
# The operator's user (distroless's nonroot); the DaemonSet runs the daemon as
# root, which it must be (config/daemon/daemonset.yaml says why).
USER 65532:65532
ENTRYPOINT ["/kmaint-operator"]
