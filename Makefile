# The front door. `make run` and `make test` are the only two commands a fresh
# machine needs; everything else they need is installed from here.
SHELL := /bin/bash
GO ?= go
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck
ASL_VALIDATOR_VERSION := 4.1.0
FUNCTIONS := authorize approval dispatch record project api recover
BUILD_DIR := build
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1

.PHONY: run test unit lint bench build synth tools clean fuzz

## run: the whole embedded stack in one process (SQLite store, embedded Step Functions, API, UI, host worker)
run:
	$(GO) run ./cmd/lifecycle serve

## test: lint, then every test (unit, contract, end to end, browser when chromium is present, infra, ASL validation)
test: lint unit

unit:
	$(GO) test -count=1 -timeout 20m ./...

## lint: gofmt, go vet, staticcheck (pinned), go mod tidy diff
lint: tools
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@cp go.mod /tmp/lifecycle.go.mod.bak; cp go.sum /tmp/lifecycle.go.sum.bak; \
	$(GO) mod tidy; \
	if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changed go.mod/go.sum:"; git --no-pager diff -- go.mod go.sum; \
	  cp /tmp/lifecycle.go.mod.bak go.mod; cp /tmp/lifecycle.go.sum.bak go.sum; exit 1; fi

tools: $(STATICCHECK)
$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## bench: store operation cost at 1k and 100k stored actions, end-to-end lifecycle throughput
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2000x ./shared/store/sqlitestore/
	$(GO) test -run '^$$' -bench AllowPath -benchtime 2000x ./shared/sfnlocal/

## fuzz: a short fuzzing pass over the rule parser and the Bash analysis
fuzz:
	@echo "fuzz targets are added with the permission engine"

clean:
	rm -rf $(BUILD_DIR) .lifecycle
