# The front door. `make run` and `make test` are the only two commands a fresh
# machine needs; everything else they need is installed from here.
SHELL := /bin/bash
GO ?= go
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck
ASL_VALIDATOR_VERSION := 4.0.0
ASL_FILE := statemachines/action-lifecycle.asl.json
NODE_TOOLS := .tools/node
ASL_VALIDATOR := $(NODE_TOOLS)/node_modules/.bin/asl-validator
FUNCTIONS := authorize approval dispatch record project api recover
BUILD_DIR := build
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1
# jsii also warns, loudly, on every run under a Node release it calls end-of-life.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20

.PHONY: run sandbox-check test unit lint bench build synth tools clean fuzz infra-test asl-validate chaos

## run: the whole embedded stack in one process (SQLite store, embedded Step Functions, API, UI, host worker)
run: sandbox-check
	@$(MAKE) --no-print-directory ui-assets || echo "WARNING: could not install the graph layout library; the console view lists the path without the graph"
	$(GO) run ./cmd/lifecycle serve

# sandbox-check: host tools run inside bubblewrap (issue 20); without it they are
# refused unless the policy says sandbox: off. Installed with apt where we are root.
sandbox-check:
	@if ! command -v bwrap >/dev/null 2>&1; then \
	  if [ "$$(uname -s)" = Linux ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap (the host tools' sandbox)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null || \
	      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; } || \
	      echo "WARNING: could not install bubblewrap; host tools will be refused (apt-get install bubblewrap)"; \
	  elif [ "$$(uname -s)" = Linux ]; then \
	    echo "WARNING: bubblewrap (bwrap) is not installed: host tools will be refused. Fix: sudo apt-get install bubblewrap"; \
	  else \
	    echo "WARNING: no bubblewrap sandbox on $$(uname -s): host tools are refused unless the policy says sandbox: off"; \
	  fi; \
	fi

## test: lint, then every test (unit, contract, end to end, browser when chromium is present, infra, ASL validation)
test: lint unit infra-test asl-validate

unit:
	$(GO) test -count=1 -tags faultinject -timeout 20m ./...

## lint: gofmt, go vet, staticcheck (pinned), go mod tidy diff
lint: tools
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags faultinject ./...
	$(STATICCHECK) -tags faultinject ./...
	@cp go.mod /tmp/lifecycle.go.mod.bak; cp go.sum /tmp/lifecycle.go.sum.bak; \
	$(GO) mod tidy; \
	if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changed go.mod/go.sum:"; git --no-pager diff -- go.mod go.sum; \
	  cp /tmp/lifecycle.go.mod.bak go.mod; cp /tmp/lifecycle.go.sum.bak go.sum; exit 1; fi

tools: $(STATICCHECK)
$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## build: one linux/arm64 `bootstrap` per function, zipped to build/<name>.zip (each under 20 MB)
build:
	GO=$(GO) BUILD_DIR=$(BUILD_DIR) scripts/build-functions.sh $(FUNCTIONS)

## synth: the CloudFormation template in infra/cdk.out (the Go app synthesizes itself; no CDK CLI needed)
synth: build
	cd infra && CDK_OUTDIR=$(CURDIR)/infra/cdk.out LIFECYCLE_ASSET_DIR=$(CURDIR)/$(BUILD_DIR) $(GO) run .
	@ls -l infra/cdk.out/*.template.json

## infra-test: vet, staticcheck and the template tests of the CDK app (its own module)
infra-test: tools
	cd infra && $(GO) vet ./... && $(STATICCHECK) ./... && $(GO) test -count=1 ./...

## asl-validate: the ASL file against the asl-validator npm package (pinned, installed under .tools/)
asl-validate: $(NODE_TOOLS)/asl-validator-$(ASL_VALIDATOR_VERSION).stamp
	$(ASL_VALIDATOR) --json-path $(ASL_FILE)

$(NODE_TOOLS)/asl-validator-$(ASL_VALIDATOR_VERSION).stamp:
	npm install --prefix $(NODE_TOOLS) --no-save --no-package-lock --no-audit --no-fund asl-validator@$(ASL_VALIDATOR_VERSION)
	touch $@

## api-lint: api/openapi.yaml against Redocly CLI's recommended-strict rules (pinned npm package, installed once
## under .tools/; redocly.yaml says which rules are off and why, .redocly.lint-ignore.yaml which single findings).
## Any finding fails. Runs on the machine's Node 20 (2.x supports >=20.19); no telemetry, no update check.
REDOCLY_VERSION := 2.77.0
REDOCLY_DIR := .tools/redocly-$(REDOCLY_VERSION)
REDOCLY := $(REDOCLY_DIR)/node_modules/.bin/redocly
.PHONY: api-lint
test: api-lint
api-lint: $(REDOCLY_DIR)/installed.stamp
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(REDOCLY) lint --lint-config=error --format=stylish
$(REDOCLY_DIR)/installed.stamp:
	npm install --no-save --no-package-lock --no-audit --no-fund --loglevel=error --prefix $(@D) @redocly/cli@$(REDOCLY_VERSION)
	test -x $(REDOCLY)
	touch $@

## ui-assets: the graph layout library of the Activity UI's console view (@dagrejs/dagre, pinned; the version is
## httpapi.DagreVersion), installed once under .tools/; the API serves it at /ui/vendor/dagre.min.js. Not
## committed: a build without it compiles and serves the view without its graph.
DAGRE_VERSION := 3.1.3
DAGRE_DIR := .tools/dagre-$(DAGRE_VERSION)
.PHONY: ui-assets
ui-assets: $(DAGRE_DIR)/installed.stamp
$(DAGRE_DIR)/installed.stamp:
	npm install --no-save --no-package-lock --no-audit --no-fund --loglevel=error --prefix $(@D) @dagrejs/dagre@$(DAGRE_VERSION)
	test -f $(DAGRE_DIR)/node_modules/@dagrejs/dagre/dist/dagre.min.js
	touch $@
unit: ui-assets
unit: export LIFECYCLE_UI_DAGRE_REQUIRED = 1
## api-docs: the API reference page served at /docs (by `lifecycle serve` and the api function), rendered from
## api/openapi.yaml by the same pinned Redocly CLI (Redoc, bundled inline: one self-contained HTML file, no CDN,
## works offline). Embedded at compile time; a build without it answers /docs with 503 naming this target.
## `make run`, `make test` and `make build` build it first. The one thing the bundle would still fetch is
## Redocly's attribution logo from its CDN: the sed below swaps it for the same word as an inline SVG (the
## "API docs by" link to Redocly stays). shared/httpapi's chromium test fails on any request off the server.
API_DOCS_PAGE := shared/httpapi/apidocs/index.html
API_DOCS_LOGO := data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22 width=%2264%22 height=%2216%22%3E%3Ctext x=%220%22 y=%2212%22 font-family=%22sans-serif%22 font-size=%2212%22%3ERedocly%3C/text%3E%3C/svg%3E
.PHONY: api-docs
api-docs: $(API_DOCS_PAGE)
$(API_DOCS_PAGE): api/openapi.yaml redocly.yaml $(REDOCLY_DIR)/installed.stamp
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(REDOCLY) build-docs api/openapi.yaml \
	  --inlineBundle --lint-config=error --output $@.tmp
	sed -e 's|https://cdn\.redoc\.ly/redoc/logo-mini[a-z-]*\.svg|$(API_DOCS_LOGO)|g' $@.tmp > $@.sed && rm $@.tmp
	if grep -o 'https://cdn\.[a-z.]*/[^`"]*\.\(svg\|png\|js\|css\|woff2\?\)' $@.sed; then echo "api-docs: the page still loads the files above from a CDN" >&2; rm $@.sed; exit 1; fi
	mv $@.sed $@
run: api-docs
build: api-docs
unit: api-docs
unit: export LIFECYCLE_API_DOCS_REQUIRED = 1

## mcp-everything: the reference MCP server the downstream proxy test runs over stdio (npm, pinned,
## installed once under .tools/; `make unit` uses it and passes its path as LIFECYCLE_MCP_EVERYTHING)
MCP_EVERYTHING_VERSION := 2026.8.31
MCP_EVERYTHING_DIR := .tools/mcp-everything
MCP_EVERYTHING := $(MCP_EVERYTHING_DIR)/node_modules/.bin/mcp-server-everything
.PHONY: mcp-everything
mcp-everything: $(MCP_EVERYTHING_DIR)/server-everything-$(MCP_EVERYTHING_VERSION).stamp
$(MCP_EVERYTHING_DIR)/server-everything-$(MCP_EVERYTHING_VERSION).stamp:
	npm install --prefix $(MCP_EVERYTHING_DIR) --no-save --no-package-lock --no-audit --no-fund @modelcontextprotocol/server-everything@$(MCP_EVERYTHING_VERSION)
	test -x $(MCP_EVERYTHING)
	touch $@
unit: mcp-everything
unit: export LIFECYCLE_MCP_EVERYTHING := $(CURDIR)/$(MCP_EVERYTHING)

## MCP clients nobody here wrote (issue 13), pinned npm packages each installed once under .tools/<name>-<version>/
## (no network once installed): the MCP conformance suite and Codex CLI run in `make test` (tests/mcpconformance,
## tests/agents); Claude Code, large, only in `make test-agents`.
MCP_CONFORMANCE_VERSION := 0.1.16
CODEX_VERSION := 0.169.0
CLAUDE_CODE_VERSION := 2.1.328
MCP_CONFORMANCE_DIR := .tools/mcp-conformance-$(MCP_CONFORMANCE_VERSION)
CODEX_DIR := .tools/codex-$(CODEX_VERSION)
CLAUDE_CODE_DIR := .tools/claude-code-$(CLAUDE_CODE_VERSION)
# The conformance CLI needs Node.js 22 (fs.globSync); the machine's is 20. The npm registry ships Node's own
# binary as node-linux-<arch>: installed beside the suite, used only to run it.
NODE22_VERSION := 22.23.5
NODE22_ARCH := $(if $(filter aarch64 arm64,$(shell uname -m)),arm64,x64)
NODE22_DIR := .tools/node-$(NODE22_VERSION)
NPM_TOOL_INSTALL := npm install --no-save --no-package-lock --no-audit --no-fund --loglevel=error
.PHONY: mcp-clients test-agents
mcp-clients: $(MCP_CONFORMANCE_DIR)/installed.stamp $(NODE22_DIR)/installed.stamp $(CODEX_DIR)/installed.stamp
unit: mcp-clients
unit: export LIFECYCLE_MCP_CLIENTS_REQUIRED = 1
$(MCP_CONFORMANCE_DIR)/installed.stamp:
	$(NPM_TOOL_INSTALL) --prefix $(@D) @modelcontextprotocol/conformance@$(MCP_CONFORMANCE_VERSION)
	touch $@
$(NODE22_DIR)/installed.stamp:
	$(NPM_TOOL_INSTALL) --prefix $(@D) node-linux-$(NODE22_ARCH)@$(NODE22_VERSION)
	touch $@
$(CODEX_DIR)/installed.stamp:
	$(NPM_TOOL_INSTALL) --prefix $(@D) @openai/codex@$(CODEX_VERSION)
	touch $@
$(CLAUDE_CODE_DIR)/installed.stamp:
	$(NPM_TOOL_INSTALL) --prefix $(@D) @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)
	touch $@
## test-agents: the scripted-model agent tests with every client, Claude Code included
test-agents: mcp-clients $(CLAUDE_CODE_DIR)/installed.stamp
	LIFECYCLE_MCP_CLIENTS_REQUIRED=1 LIFECYCLE_CLAUDE_CODE_REQUIRED=1 $(GO) test -count=1 -v ./tests/agents/

## test-aws: AWS mode on one machine (tests/awsmode): every function's bootstrap under the AWS Lambda Runtime
## Interface Emulator (pinned, go-installed once under .tools/), the ASL on the embedded engine invoking them through
## the Lambda Invoke API, DynamoDB on minidyn, EventBridge/S3/SQS on moto (python3 -m moto.server, on the machine),
## the api function behind an API Gateway stand-in, `lifecycle host`; and the store contract's sequential part on
## moto's DynamoDB. `make unit` runs the same tests (go test ./...) with both emulators required; this runs only them.
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE_DIR := .tools/aws-lambda-rie-$(RIE_VERSION)
RIE := $(RIE_DIR)/aws-lambda-rie
.PHONY: test-aws
test-aws: $(RIE)
	LIFECYCLE_AWS_MODE_REQUIRED=1 LIFECYCLE_AWS_RIE=$(CURDIR)/$(RIE) $(GO) test -count=1 -timeout 10m ./tests/awsmode/
	LIFECYCLE_AWS_MODE_REQUIRED=1 $(GO) test -count=1 -run '^TestContractMoto$$' ./shared/store/dynamostore/
$(RIE):
	GOOS=$$($(GO) env GOHOSTOS) GOARCH=$$($(GO) env GOHOSTARCH) GOBIN=$(CURDIR)/$(RIE_DIR) $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)
unit: $(RIE)
unit: export LIFECYCLE_AWS_RIE := $(CURDIR)/$(RIE)
unit: export LIFECYCLE_AWS_MODE_REQUIRED := 1

## bench: store operation cost at 1k and 100k stored actions, the engine alone, and the whole lifecycle
## end to end (allow/ask/deny, empty and with 100k actions stored; the 100k store is built once and cached
## under $$TMPDIR)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2000x ./shared/store/sqlitestore/
	$(GO) test -run '^$$' -bench AllowPath -benchtime 2000x ./shared/sfnlocal/
	$(GO) test -run '^$$' -bench Decide -benchmem ./shared/permission/
	$(GO) test -run '^$$' -bench Replay100k -benchtime 1x ./shared/replay/
	$(GO) test -run '^$$' -bench Lifecycle -benchtime 3000x -timeout 60m ./shared/embedded/
	$(GO) test -run '^$$' -bench SubmitRequestValidation ./shared/httpapi/
	$(GO) test -run '^$$' -bench HostBashSandbox -benchtime 300x ./shared/hosttools/

## chaos: the black-box chaos run at scale: a real `lifecycle serve` SIGKILLed and restarted under load
## (N actions, default 10000; a kill from outside every 5 s on average and 0.2% per lifecycle point from inside,
## KILL_EVERY_MS= and FAULT_PERMILLE= to change; CHAOS_SEED=<seed> replays a run; a failed run is kept under artifacts/chaos/)
N ?= 10000
chaos:
	CHAOS_N=$(N) CHAOS_KILL_EVERY_MS=$(or $(KILL_EVERY_MS),5000) CHAOS_FAULT_PERMILLE=$(or $(FAULT_PERMILLE),2) \
	  $(GO) test -count=1 -run '^TestChaosBlackBox$$' -timeout 240m -v ./tests/chaos/

## fuzz: a short fuzzing pass over the rule parser, the Bash analysis and its program model, protected paths,
## symbolic-link resolution, decisions under a deny policy and the auto-mode reviewer
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseRule$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./shared/permission/
	$(GO) test -run '^$$' -fuzz '^FuzzAnalyzeBash$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./shared/permission/bashscan/
	$(GO) test -run '^$$' -fuzz '^FuzzBashProgramRule$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./shared/permission/
	$(GO) test -run '^$$' -fuzz '^FuzzProtectedPaths$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./shared/permission/
	$(GO) test -run '^$$' -fuzz '^FuzzPhysical$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./shared/permission/
	$(GO) test -run '^$$' -fuzz '^FuzzDecideBash$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./shared/permission/
	$(GO) test -run '^$$' -fuzz '^FuzzReviewBash$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./shared/permission/riskreview/

clean:
	rm -rf $(BUILD_DIR) infra/cdk.out artifacts
