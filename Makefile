# ovn-sync. `make demo` runs the embedded demo; `make test` runs every test.
GO      ?= go
PKGS    := ./...
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build test test-unit lint generate manifests demo bench bench-e2e fuzz clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ovn-sync ./cmd/ovn-sync

# test runs everything: unit, data-driven, property and fuzz seeds, integration
# against a real ovsdb-server (Debian's ovn-central), each benchmark once, and
# each fuzz target for a budget of executions (about 10s here). A count, not a
# duration: with -fuzztime as a duration, Go 1.26's fuzz coordinator can
# report "context deadline exceeded" at the deadline on a busy machine
# (golang/go#75804, fixed in Go 1.27).
test: lint
	$(GO) test -count=1 -timeout 30m $(PKGS)
	$(GO) test -count=1 -short -run '^$$' -bench . -benchtime=1x ./bench/
	$(GO) test -run '^$$' -fuzz '^FuzzBuildHostileInput$$' -fuzztime 10000x -fuzzminimizetime 100x ./desired/
	$(GO) test -run '^$$' -fuzz '^FuzzComputeApply$$' -fuzztime 60000x -fuzzminimizetime 100x ./diff/
	$(GO) test -run '^$$' -fuzz '^FuzzOutsideEdits$$' -fuzztime 3000x -fuzzminimizetime 100x ./reconcile/
	$(GO) test -run '^$$' -fuzz '^FuzzSimpleYAML$$' -fuzztime 5000x -fuzzminimizetime 100x ./sources/

# test-unit skips the tests that need ovsdb-server.
test-unit:
	OVN_SYNC_SKIP_INTEGRATION=1 $(GO) test -count=1 $(PKGS)

# lint is gofmt, go vet and staticcheck (pinned in go.mod as a tool), each
# kept at zero findings.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^nbdb/')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

# generate regenerates the NB models from the schema kept beside them.
generate:
	$(GO) tool modelgen -extended -p nbdb -o nbdb nbdb/ovn-nb.ovsschema

# manifests renders the files of deploy/ made from the Helm chart in
# deploy/chart/ovn-sync: the plain manifests, the alerting rules and the
# dashboard (deploy's tests fail while one differs from the chart).
manifests:
	$(GO) run ./deploy/cmd/render

demo:
	$(GO) run ./cmd/ovn-sync demo

bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./bench/

# fuzz searches longer for input that breaks Build's or Compute's guarantees,
# or leaves an address held twice after outside edits of the NB
# (make test runs the seeds, then each target briefly). One -fuzz target per
# invocation: go test allows no more.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzBuildHostileInput$$' -fuzztime $(FUZZTIME) ./desired/
	$(GO) test -run '^$$' -fuzz '^FuzzComputeApply$$' -fuzztime $(FUZZTIME) ./diff/
	$(GO) test -run '^$$' -fuzz '^FuzzOutsideEdits$$' -fuzztime $(FUZZTIME) ./reconcile/
	$(GO) test -run '^$$' -fuzz '^FuzzSimpleYAML$$' -fuzztime $(FUZZTIME) ./sources/

bench-e2e:
	$(GO) run ./bench/cmd/ovn-sync-bench

clean:
	rm -rf bin
