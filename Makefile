# kmaint's build and test entry points. `make` alone lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := $(BIN)/controller-gen
KUBECTL ?= kubectl

# What the binaries report (--version, and at start): stamped in by `make
# build` and `make docker-build` through internal/version.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
VERSION_PKG := github.com/kmaint/kmaint/internal/version
LDFLAGS = -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT)
CONTAINER_TOOL ?= docker

# The image `make deploy` runs: it holds both binaries, /kmaint-operator and
# /kmaint-daemon (Dockerfile). Override it with e.g.
# make deploy IMG=registry.example/kmaint:dev (a tag or @sha256:digest; no tag
# means latest). Tagged with $(VERSION) where the Makefile defines one, else
# with the release config/default names.
IMG ?= ghcr.io/kmaint/kmaint:$(or $(VERSION),v0.1.0)

# Extra targets `make test` needs before it runs; later work hooks its
# prerequisites in here (e.g. TEST_PREREQS += demo-assets).
TEST_PREREQS ?=
TEST_PREREQS += helm bin-module image-tar-for-tests realcluster-assets

# `make test` times its steps (hack/steps.sh): each step's recipe runs
# through $(STEP) NAME, which appends NAME's time to $(STEPS_LOG) when make
# test set KMAINT_STEPS_LOG, and the test prints where the time went at its
# end, with the slowest packages of go test's output ($(TEST_LOG)).
STEP := hack/steps.sh run
STEPS_LOG := $(BIN)/test-steps.log
TEST_LOG := $(BIN)/test.log

# go test starts packages in the order it is given them (hack/test-packages.sh),
# one more at a time than the machine has cores: the packages that start a
# real cluster spend most of their time waiting for nodes to reboot, and
# take turns on the machine (one that waits for its turn holds its place).
# The longest of them goes first, the others last; the slowest of the rest
# (make test's summary names them) come next, so that none starts at the end
# and runs alone.
TEST_FIRST := ./test/realkmaint ./test/e2e ./test/soak ./operator/gate ./operator/policy ./daemon ./test/testbed
TEST_LAST := ./test/demo ./test/realcluster

# The packages whose code runs kmaint's goroutines (the operator's
# controllers, drain workers, kept views and watches; the daemon; what they
# share) and the test helpers their tests start run under the race detector
# (-race); a race fails the test it happens in. One go test builds all its
# packages one way, so make test runs two side by side (hack/go-test.sh):
# these, and the rest without -race (the real-cluster, end-to-end, soak,
# demo and install tests, which run the same code at sizes or in processes
# where the detector would cost more than it finds; test/README.md, Where
# the time goes; make test-race-more runs those of them that run kmaint's
# code in their own process under -race). TEST_RACE_P packages run at a time
# under -race; empty, as many as the machine has cores.
TEST_RACE := ./api/... ./internal/... ./policies/... ./operator/... ./daemon/... \
	./test/testbed ./test/harness ./test/sim ./test/memcluster ./test/node ./test/promtest ./test/soak/checker
TEST_RACE_P ?=

.PHONY: help
help: ## List the targets
	@echo 'Usage: make <target>'
	@echo
	@awk 'BEGIN {FS = ":.*## "} /^##@/ {printf "\n%s\n", substr($$0, 5)} /^[a-zA-Z_-]+:.*## / {printf "  %-15s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Code generation

.PHONY: controller-gen
controller-gen: ## Install controller-gen at the pinned version into bin/ if missing
	@if ! [[ -x "$(CONTROLLER_GEN)" ]] || ! "$(CONTROLLER_GEN)" --version 2>/dev/null | grep -qx 'Version: $(CONTROLLER_GEN_VERSION)'; then \
		echo "installing controller-gen $(CONTROLLER_GEN_VERSION) into bin/"; \
		GOBIN="$(BIN)" go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION); \
	fi

.PHONY: manifests generate
manifests: controller-gen ## Generate deepcopy code, CRDs (config/crd/bases), the operator's and the daemon's roles (config/rbac)
	"$(CONTROLLER_GEN)" object paths=./api/...
	"$(CONTROLLER_GEN)" crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	"$(CONTROLLER_GEN)" rbac:roleName=kmaint-operator paths=./operator/... output:rbac:artifacts:config=config/rbac
	"$(CONTROLLER_GEN)" rbac:roleName=kmaint-daemon paths=./daemon/... \
		output:rbac:artifacts:config=config/rbac/daemon

generate: manifests dashboards helm-files ## manifests, dashboards, then the chart's copies of them

.PHONY: dashboards
dashboards: ## Generate the Grafana dashboards (dashboards/*.json) from dashboards/*.go
	go run ./dashboards/gen -out dashboards

# Helm reads only files inside the chart: it gets copies of the CRDs, the
# dashboards and the PrometheusRule. test/helm fails when they differ.
HELM_CHART := config/helm/kmaint

.PHONY: helm-files
helm-files: ## Copy the CRDs, dashboards and PrometheusRule into the Helm chart (config/helm/kmaint)
	rm -f $(HELM_CHART)/crds/*.yaml $(HELM_CHART)/dashboards/*.json
	mkdir -p $(HELM_CHART)/crds $(HELM_CHART)/dashboards $(HELM_CHART)/files
	cp config/crd/bases/*.yaml $(HELM_CHART)/crds/
	cp dashboards/*.json $(HELM_CHART)/dashboards/
	cp config/prometheus/prometheusrule.yaml $(HELM_CHART)/files/

##@ Testing

.PHONY: mod-download
mod-download: ## Download the Go modules the build and tests need
	$(STEP) mod-download go mod download

.PHONY: test-deps
test-deps: ## Install the system packages the tests need (hack/install-test-deps.sh)
	$(STEP) test-deps hack/install-test-deps.sh

.PHONY: helm
helm: ## Print the dir of helm and the Prometheus Operator CRDs test/helm uses, building helm first if the machine's cache has none
	$(STEP) helm hack/helm-assets.sh bin

# bin/ links into the machine's cache (hack/cache.sh): whole root file
# systems and builds, Go sources among them. A go.mod of its own makes bin/
# a separate module, so that ./... (go test, go vet) never reaches into it.
.PHONY: bin-module
bin-module: ## Fence bin/ off from ./... with a go.mod of its own
	@mkdir -p "$(BIN)"
	@[[ -f "$(BIN)/go.mod" ]] || printf '%s\n' '// Caches, not kmaint code: see the Makefile (bin-module).' 'module kmaint.invalid/bin-cache' >"$(BIN)/go.mod"

.PHONY: envtest
envtest: ## Print the kube-apiserver/etcd/kubectl dir, building them first if the machine's cache has none (~11 min)
	$(STEP) envtest hack/envtest-assets.sh bin

# The builds the tests need run side by side (test-prereqs): on a new
# machine they are Go builds, debootstraps and downloads, and one's
# downloads and single-threaded links leave room for another's compiles.
# Each one's output comes whole when it ends (--output-sync).
.PHONY: test-prereqs
test-prereqs: envtest $(TEST_PREREQS)

# verify runs first and a failure there does not stop the tests, so CI always
# sees go test's own ok/FAIL lines; make test fails if either failed. The
# prerequisites see KMAINT_STEPS_LOG (a target's variables reach its
# prerequisites); verify's own make does not, so its steps count once.
# hack/go-test.sh also runs every benchmark once (-bench . -benchtime 1x),
# so that their own checks run; KMAINT_BENCH_SMOKE=1 has the long ones run
# small and keep no result (test/bench/smoke).
# Everything make test builds is built with -trimpath: a compiled package
# then names no checkout's directory, so a fresh clone reuses what the
# machine compiled for another (go vet ./... in a fresh clone: 150 s
# without, 2 s with). Tests find the checkout from their working directory
# (test/repo).
.PHONY: test test-steps-start
test: export KMAINT_STEPS_LOG := $(STEPS_LOG)
test: export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
test: test-steps-start mod-download test-deps ## Run verify, then every test against a real API server; say where the time went
	@$(MAKE) --no-print-directory -j 8 --output-sync=target test-prereqs
	@verify=0; $(STEP) verify env -u KMAINT_STEPS_LOG $(MAKE) --no-print-directory verify || verify=$$?; \
	assets="$$(hack/envtest-assets.sh bin)"; \
	tests=0; KUBEBUILDER_ASSETS="$$assets" KMAINT_BENCH_SMOKE=1 KMAINT_RACE_P="$(TEST_RACE_P)" $(STEP) go-test \
		hack/go-test.sh "$(TEST_FIRST)" "$(TEST_LAST)" "$(TEST_RACE)" -count=1 -timeout 30m 2>&1 | tee "$(TEST_LOG)" || tests=$$?; \
	hack/steps.sh summary "$(TEST_LOG)"; \
	if (( verify != 0 )); then echo "make test: verify failed, see its output above" >&2; fi; \
	(( verify == 0 && tests == 0 ))

test-steps-start:
	@mkdir -p "$(BIN)" && hack/steps.sh start

# The real cluster's parts (test/realcluster): kubelet, kube-controller-manager,
# kube-scheduler and the images (hack/cluster-assets.sh), and the nodes' root
# file system (hack/node-rootfs.sh), built side by side (one mostly compiles,
# the other mostly downloads) and cached in bin/. The kube binaries are built
# after kube-apiserver and kubectl (hack/envtest-assets.sh, which waits for a
# build of them under way): the five share 1859 of their 2535 packages, same
# module and flags, so built one after the other each of those compiles once
# and comes from the Go build cache the second time; side by side on a new
# machine both compiled them.
REALCLUSTER_NAMES := realcluster-test realcluster-killed kmaint kmaint-demo demo-test

.PHONY: realcluster-assets realcluster-clean
realcluster-assets: ## Build the real test cluster's binaries, images and node root file system if the machine's cache has none
	@$(STEP) realcluster-assets $(MAKE) --no-print-directory realcluster-assets-build

.PHONY: realcluster-assets-build
realcluster-assets-build:
	@if (( EUID == 0 )); then hack/node-rootfs.sh bin & rootfs=$$!; else rootfs=; \
		echo "realcluster-assets: debootstrap needs root; test/realcluster will skip (and fail under CI)" >&2; fi; \
	hack/envtest-assets.sh bin >/dev/null || true; \
	assets=0; hack/cluster-assets.sh bin || assets=$$?; \
	rootfsrc=0; if [[ -n "$$rootfs" ]]; then wait "$$rootfs" || rootfsrc=$$?; fi; \
	if (( rootfsrc != 0 )); then echo "realcluster-assets: hack/node-rootfs.sh failed ($$rootfsrc)" >&2; fi; \
	(( assets == 0 && rootfsrc == 0 ))

realcluster-clean: ## Kill and remove what a killed real-cluster test run left (processes, cgroups, state)
	go run ./test/realcluster/cleanup $(REALCLUSTER_NAMES)

.PHONY: bench
# BENCH picks the rolling-reboot scenarios as N:k:r, e.g. BENCH=100:10:2s;
# the default is 500 nodes at k=25, 2000 at k=100 and 5000 at k=250, r=10s.
# Each result records the command that made it (KMAINT_BENCH_COMMAND) and
# its commit: a work tree that differs from its commit is refused (commit
# first; KMAINT_BENCH_RESULTS=dir keeps results elsewhere). Then
# test/bench/plot draws every result into test/bench/results/scaling.svg.
# The API server's audit log breaks requests down by verb and resource;
# KMAINT_BENCH_AUDIT=off runs without it. To profile a rollout: the operator
# serves pprof on a free port of its own (--pprof-bind-address),
# KMAINT_BENCH_PPROF=host:port serves the bench process's, and
# KMAINT_BENCH_KUBECONFIG=path writes a kubeconfig for the API server's
# (kubectl --kubeconfig path get --raw '/debug/pprof/profile?seconds=30').
BENCH ?=

bench: mod-download test-deps envtest $(TEST_PREREQS) ## Run the rolling-reboot benchmarks; results and their picture in test/bench/results/
	assets="$$(hack/envtest-assets.sh bin)"; \
	KMAINT_BENCH="$(BENCH)" KMAINT_BENCH_COMMAND="make bench$(if $(BENCH), BENCH=$(BENCH))" KUBEBUILDER_ASSETS="$$assets" go test -run '^$$' -bench . -benchtime 1x -timeout 180m ./test/bench/
	go run ./test/bench/plot

.PHONY: soak
# SOAK_DURATION is how long requests and faults are made, SOAK_SEED the
# seed of their random schedule (a failing run prints it, to replay it),
# SOAK_NODES the nodes of each of the three pools, SOAK_MIN_EACH the least
# times each kind of request and fault is made, SOAK_FLAGS more of the
# test's flags (-soak.pace, -soak.fault-pace). The result goes to
# test/soak/results/soak-SEED-DURATION.json.
SOAK_DURATION ?= 45m
SOAK_SEED ?= 1
SOAK_NODES ?= 24
SOAK_MIN_EACH ?= 20
SOAK_FLAGS ?=
soak: mod-download test-deps envtest $(TEST_PREREQS) ## Run the whole reboot path under random faults for SOAK_DURATION, then check its history; result and picture in test/soak/results/
	assets="$$(hack/envtest-assets.sh bin)"; \
	KUBEBUILDER_ASSETS="$$assets" go test -count=1 -run '^TestSoak$$' -timeout 0 ./test/soak/ -v \
		-soak.duration=$(SOAK_DURATION) -soak.seed=$(SOAK_SEED) -soak.nodes=$(SOAK_NODES) -soak.min-each=$(SOAK_MIN_EACH) \
		-soak.results=$(CURDIR)/test/soak/results $(SOAK_FLAGS)
	go run ./test/soak/plot

# The packages make test runs without the race detector that run kmaint's
# code in their own process (the operator's replicas and the simulated
# nodes' daemons): the end-to-end tests, the short soak, the demo and the
# kubectl plugin's tests, under -race (test/README.md, Where the time goes).
TEST_RACE_MORE := ./test/e2e ./test/soak ./test/demo ./cmd/...

.PHONY: test-race-more
test-race-more: export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
test-race-more: mod-download test-deps envtest $(TEST_PREREQS) ## Run the in-process end-to-end, soak, demo and plugin tests under the race detector (make test runs them without)
	assets="$$(hack/envtest-assets.sh bin)"; \
	KUBEBUILDER_ASSETS="$$assets" go test -race -count=1 -timeout 60m -p $$(nproc) $(TEST_RACE_MORE)

.PHONY: mutants
# Each mutant (test/mutants) breaks one of the design's invariants on
# purpose, as a patch applied to a scratch copy of the tree; the tests named
# for it must catch it. MUTANTS=name1,name2 runs those only; MUTANTS_SOAK=0
# leaves out the soak's runs (minutes each). go test's output goes to
# bin/mutants/.
mutants: mod-download test-deps envtest bin-module ## Break each invariant on purpose and fail unless a test that runs real parts catches it; result in test/mutants/results.json
	assets="$$(hack/envtest-assets.sh bin)"; \
	KUBEBUILDER_ASSETS="$$assets" GOFLAGS="$(strip $(GOFLAGS) -trimpath)" go run ./test/mutants/run

.PHONY: bench-controllers
# What one event costs each controller (observe, decide, act: one
# reconcile, with the patches it builds and its watches' handlers) in pools
# of 500, 5000 and 20000 realistic nodes, without an API server (package
# test/memcluster): the gate, aftercare and maintenance; then the gate's
# reads past its cache against the real API server of the gate's tests
# (BenchmarkGateLiveRead). test/bench/perevent saves the figures (per
# event: the operator's time, mean, p50 and p99, less only the memory
# cluster applying the writes as an API server would; that time added
# back; the writes, reads past the cache and Events; bytes and
# allocations) to test/bench/results/event-*.json, refusing a work tree
# that differs from its commit, and test/bench/plot draws them. One
# package at a time (-p 1): side by side, one's benchmark took the other's
# cores (aftercare's p50 at 20000 nodes 8 ms beside the gate's, 2.7 alone).
# BENCH_NOTE='...' says what else ran on the machine, saved with them.
bench-controllers: mod-download envtest ## Benchmark each controller's cost per event at 500, 5000 and 20000 nodes, without an API server
	assets="$$(hack/envtest-assets.sh bin)"; \
	set -o pipefail; { KUBEBUILDER_ASSETS="$$assets" go test -p 1 -run '^$$' -bench 'Benchmark(Gate|Aftercare|Maintenance)Event|BenchmarkAftercareCompletion' -benchtime 40x -timeout 60m \
		./operator/gate/ ./operator/aftercare/ ./operator/maintenance/ && \
		KUBEBUILDER_ASSETS="$$assets" go test -run '^$$' -bench '^BenchmarkGateLiveRead$$' -benchtime 500x -timeout 10m ./operator/gate/; } | \
		go run ./test/bench/perevent -note "$${BENCH_NOTE:-}"
	go run ./test/bench/plot

# The files controller-gen writes. An untracked one is a generated file
# nobody committed; other untracked files (a test being written) are not
# verify's business.
GENERATED_UNTRACKED := ^(config/crd/bases/.*|config/rbac/role\.yaml|config/rbac/daemon/role\.yaml|api/.*zz_generated\..*|dashboards/.*\.json)$$

.PHONY: verify
verify: test-deps bin-module manifests dashboards ## Fail if generated files drift, gofmt finds unformatted files, or go vet complains
	@echo "verify: generated files are committed and up to date"
	@git diff --exit-code -- config/ api/ 'dashboards/*.json' || { echo "verify: generated files differ from the commit; run make generate and commit the result" >&2; exit 1; }
	@untracked="$$(git ls-files --others --exclude-standard -- config api dashboards | grep -E '$(GENERATED_UNTRACKED)' || true)"; \
	if [[ -n "$$untracked" ]]; then echo "$$untracked"; echo "verify: make manifests wrote these files and git does not track them; commit them" >&2; exit 1; fi
	@echo "verify: gofmt"
	@unformatted="$$(find . \( -path ./bin -o -path ./.git -o -path ./.cache \) -prune -o -name '*.go' -print0 | xargs -0 -r gofmt -l)"; \
	if [[ -n "$$unformatted" ]]; then echo "$$unformatted"; echo "verify: these files need gofmt -w" >&2; exit 1; fi
	@echo "verify: go vet"
	go vet ./...

##@ Building and running

.PHONY: build
build: ## Build every binary under cmd/ into bin/, stamped with $(VERSION)
	go build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

.PHONY: docker-build docker-push
docker-build: ## Build the image $(IMG) (both binaries) with $(CONTAINER_TOOL)
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

docker-push: ## Push the image $(IMG)
	$(CONTAINER_TOOL) push $(IMG)

# image-tar builds what docker-build builds, from the same Dockerfile, where
# no registry and no container engine are at hand (buildah, base images made
# from Debian and the Go module proxy; hack/image-tar.sh says how). Cached in
# the machine's cache until the code or the Dockerfile changes: cold up to 50
# minutes on a busy 2-core machine (mostly two cold Go builds), after a code
# change about a minute.
.PHONY: image-tar image-tar-for-tests
image-tar: ## Build the image from the Dockerfile without a registry (root, buildah) into a docker-archive; print its path
	@VERSION='$(VERSION)' COMMIT='$(COMMIT)' hack/image-tar.sh bin

# make test builds the image first unless it cannot (not root) and may skip
# it (not CI): test/image then skips with the reason, or fails under CI.
image-tar-for-tests:
	@if (( EUID != 0 )) && [[ -z "$${CI:-}" ]]; then \
		echo "image-tar: not root, so kmaint's image is not built and test/image skips" >&2; \
	else VERSION='$(VERSION)' COMMIT='$(COMMIT)' $(STEP) image hack/image-tar.sh bin >/dev/null; fi

.PHONY: install
install: ## Install or upgrade the CRDs in the cluster of the current kubeconfig
	$(KUBECTL) apply --server-side --force-conflicts -f config/crd/bases

.PHONY: uninstall
uninstall: ## Remove the CRDs from the cluster, and with them every kmaint object
	$(KUBECTL) delete --ignore-not-found -f config/crd/bases

# deploy-manifests renders config/default with the image set to $(IMG),
# through an overlay in a temporary directory: kubectl kustomize cannot edit
# a kustomization, and config/default stays as committed. (Kustomize takes
# only relative paths to other kustomizations.)
.PHONY: deploy-manifests deploy undeploy
deploy-manifests: ## Print what make deploy applies: config/default with the image $(IMG)
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	img='$(IMG)'; name="$$img"; ref="newTag: latest"; \
	if [[ "$$img" == *@* ]]; then name="$${img%@*}"; ref="digest: $${img#*@}"; \
	elif [[ "$${img##*/}" == *:* ]]; then name="$${img%:*}"; ref="newTag: $${img##*:}"; fi; \
	printf '%s\n' 'apiVersion: kustomize.config.k8s.io/v1beta1' 'kind: Kustomization' \
		'resources:' "- $$(realpath --relative-to="$$tmp" config/default)" \
		'images:' '- name: ghcr.io/kmaint/kmaint' "  newName: $$name" "  $$ref" >"$$tmp/kustomization.yaml"; \
	$(KUBECTL) kustomize "$$tmp"

deploy: install ## Install the CRDs, then kmaint (config/default, image $(IMG)) into the cluster of the current kubeconfig
	$(MAKE) --no-print-directory -s deploy-manifests | $(KUBECTL) apply --server-side -f -

undeploy: ## Remove kmaint (config/default: namespace kmaint-system and all in it) but not the CRDs (make uninstall)
	$(KUBECTL) delete --ignore-not-found -k config/default

.PHONY: run
run: ## Run the operator against the current kubeconfig (make install first)
	go run ./cmd/kmaint-operator --metrics-bind-address=:8080 --health-probe-bind-address=:8081

# DEMO_FLAGS go to the demo, e.g. make demo DEMO_FLAGS='--nodes=30 --exit-when-done'.
DEMO_FLAGS ?=

.PHONY: demo
demo: test-deps envtest ## Run kmaint on a simulated cluster with its own API server (DEMO_FLAGS=--help lists flags)
	go build -o "$(BIN)/demo" ./test/demo
	assets="$$(hack/envtest-assets.sh bin)"; \
	KUBEBUILDER_ASSETS="$$assets" "$(BIN)/demo" $(DEMO_FLAGS)

# demo-cluster is the demo on real nodes: the cluster of test/realcluster
# (systemd-nspawn machines with systemd, containerd and a kubelet) on this
# machine, kmaint installed from its image and chart. Needs root. Cold, the
# builds take the better part of an hour (the image's two Go builds, the
# kube components, two Debian roots); then it starts in about a minute.
.PHONY: demo-cluster
demo-cluster: test-deps envtest helm bin-module realcluster-assets ## Run kmaint on a real cluster on this machine: nodes that really reboot (root; DEMO_FLAGS as for demo)
	go build -o "$(BIN)/demo" ./test/demo
	assets="$$(hack/envtest-assets.sh bin)"; \
	KUBEBUILDER_ASSETS="$$assets" "$(BIN)/demo" --cluster=real $(DEMO_FLAGS)

##@ Cleaning

# The machine's cache (hack/cache.sh) holds what the build scripts make for
# every checkout of this machine: $KMAINT_CACHE, else $XDG_CACHE_HOME/kmaint,
# else ~/.cache/kmaint.
CACHE_DIR = $(or $(KMAINT_CACHE),$(XDG_CACHE_HOME:%=%/kmaint),$(HOME)/.cache/kmaint)

.PHONY: clean
clean: ## Remove bin/ (this checkout's builds and links into the machine's cache, which stays)
	rm -rf bin

.PHONY: cache-clean
cache-clean: ## Remove the machine's build cache (kube binaries, node root, image; a cold make test rebuilds it, ~45 min)
	@echo "removing $(CACHE_DIR)"
	@if [[ -d "$(CACHE_DIR)" ]]; then \
		findmnt --list --noheadings --output TARGET | grep -F "$$(realpath "$(CACHE_DIR)")/" | sort -r | xargs -r umount -l; \
		rm -rf --one-file-system "$(CACHE_DIR)"; fi

.PHONY: distclean
distclean: clean cache-clean ## Remove bin/ and the machine's build cache
