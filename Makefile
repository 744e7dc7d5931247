# OCC build and test entry points. `make test` is the command CI runs.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
# Pinned tools, run through the module proxy (nothing to install).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOCYCLO     := github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0

.PHONY: build install test vet cyclo fmt bench clean image dev kube-bin otelcol-bin fuzz screenshots console-measure

build: ## Build a static bin/occ
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/occ ./cmd/occ

# install puts bin/occ into $GOBIN when set (go env GOBIN), else /usr/local/bin (which needs root:
# sudo make install, or make install GOBIN=~/.local/bin).
GOBIN ?= $(shell $(GO) env GOBIN)
INSTALL_DIR := $(if $(GOBIN),$(GOBIN),/usr/local/bin)

install: build ## Install bin/occ as $GOBIN/occ, else /usr/local/bin/occ
	install -d "$(INSTALL_DIR)"
	install -m 0755 bin/occ "$(INSTALL_DIR)/occ"
	@echo "Installed $(INSTALL_DIR)/occ ($(VERSION))"

vet: ## gofmt, go vet and staticcheck on the module and deploy/helmtest; any finding fails
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd deploy/helmtest && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

cyclo: ## Report the functions of internal/ (test files aside) over cyclomatic complexity 40; never fails
	@$(GO) run $(GOCYCLO) -over 40 -ignore '_test\.go$$' internal || true

test: vet kube-bin otelcol-bin ## Vet, then run every test (private PostgreSQL, Kubernetes control planes and an OpenTelemetry Collector; then the chart and bench modules; see docs/development.md)
	$(GO) test -race -count=1 -timeout 30m ./...
	cd deploy/helmtest && $(GO) test -count=1 -timeout 15m ./...
	cd bench && $(GO) vet ./... && $(GO) test -count=1 ./...

kube-bin: ## Build etcd, kube-apiserver and kube-controller-manager for the tests when missing (first time ~10 min)
	tools/kube/build.sh

otelcol-bin: ## Build the test OpenTelemetry Collector (tools/otelcol) when missing (first time a few minutes)
	tools/otelcol/build.sh

FUZZTIME ?= 30s
fuzz: ## Run every fuzz target for FUZZTIME each (default 30s); what a run finds is kept in the Go cache (docs/development.md)
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' internal); do \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "==> $$t (./$$(dirname $$f))"; go test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./$$(dirname $$f); \
	  done; \
	done

bench: ## Every benchmark, one table of figures (BENCH_FULL=1: scalecheck at full size); docs/performance.md
	cd bench && $(GO) run ./cmd/benchall

screenshots: ## Regenerate the console screenshots of docs/console.md (needs Chromium)
	mkdir -p docs/console
	OCC_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run '^TestConsole(Layout|SignInLayout)$$' ./cmd/occ

console-measure: ## Print the console's first-load bytes and 1 000-Agent list time (docs/performance.md; needs Chromium)
	OCC_CONSOLE_MEASURE=1 $(GO) test -count=1 -v -run '^TestConsoleMeasure$$' ./cmd/occ | grep -E '^(console|agents list)'

IMAGE ?= occ:dev

image: ## Build the container image $(IMAGE) with the local Docker Engine (nothing is pulled)
	rm -rf bin/image bin/image-state
	mkdir -p bin/image/etc/ssl/certs bin/image/tmp bin/image-state
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/image/occ ./cmd/occ
	printf 'root:x:0:0:root:/:/sbin/nologin\nocc:x:65532:65532:occ:/tmp:/sbin/nologin\n' > bin/image/etc/passwd
	printf 'root:x:0:\nocc:x:65532:\n' > bin/image/etc/group
	if [ -f /etc/ssl/certs/ca-certificates.crt ]; then cp /etc/ssl/certs/ca-certificates.crt bin/image/etc/ssl/certs/; fi
	chmod 1777 bin/image/tmp
	docker build -t $(IMAGE) --label org.opencontainers.image.version=$(VERSION) .

dev: build ## Run OCC locally: private PostgreSQL, migrate, bootstrap, API and worker (Ctrl-C stops)
	bin/occ dev $(DEV_FLAGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
