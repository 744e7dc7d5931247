# OCC build and test entry points. `make test` is the command CI runs.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: build test vet fmt bench clean

build: ## Build a static bin/occ
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/occ ./cmd/occ

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

test: vet ## Vet, then run every test (starts private PostgreSQL clusters; see docs/development.md)
	$(GO) test -race -count=1 -timeout 30m ./...

bench: ## Hot-path benchmarks (compare runs with benchstat)
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./internal/iam/

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
