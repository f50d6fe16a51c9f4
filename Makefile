# webhook-inbox. `make` alone lists the targets.

SHELL    := /bin/bash
GO       ?= go
CFN_LINT ?= $(shell command -v cfn-lint 2>/dev/null || echo $(CURDIR)/.venv/bin/cfn-lint)
TEMPLATE ?= template.yaml

# `sam build` sets ARTIFACTS_DIR for each build-<LogicalId> target; a plain
# `make build-IngestFunction` writes to .build/IngestFunction/bootstrap.
ARTIFACTS_DIR ?= .build/$*

# Lambda binaries: provided.al2023 on arm64, static, no RPC shim, no paths or
# symbols baked in (smaller binary, faster cold start). The SDK (its generated
# service clients, serializers, endpoint rules, its core, and smithy-go under
# it: code that waits on the network) is compiled without inlining, which
# keeps each bootstrap under 10 MB (docs/performance.md, "Binary size and
# dependencies").
LAMBDA_ARCH  ?= arm64
LAMBDA_ENV   := CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_ARCH)
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w' -gcflags='github.com/aws/aws-sdk-go-v2/...=-l' -gcflags='github.com/aws/smithy-go/...=-l'

# Function logical ID in template.yaml -> its main package.
LAMBDA_FUNCTIONS          := IngestFunction ProcessorFunction ReplayFunction
LAMBDA_PKG_IngestFunction    := ./functions/ingest
LAMBDA_PKG_ProcessorFunction := ./functions/processor
LAMBDA_PKG_ReplayFunction    := ./functions/replay

# Tools installed into the project's bin/, never into go.mod.
BIN         := $(CURDIR)/bin
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
SC_VERSION  := v0.8.2
# The local AWS but DynamoDB (SQS, S3, Secrets Manager, EventBridge): kumo,
# one Go binary: the one on PATH, else installed into bin/ (constant time
# per call, where moto's SQS is O(queue)). LOCAL_AWS=moto puts moto in its
# place: moto's server on PATH, else a project virtualenv made on demand
# (needs Python and PyPI).
KUMO_VERSION := v0.33.1
KUMO        ?= $(shell command -v kumo 2>/dev/null || echo $(BIN)/kumo)
LOCAL_AWS   ?= kumo
export KUMO LOCAL_AWS
MOTO_SERVER ?= $(shell command -v moto_server 2>/dev/null || echo $(CURDIR)/.venv/bin/moto_server)
export MOTO_SERVER
# dynoxide (a DynamoDB emulator, atomic and fast at any table size): the
# one on PATH, else npm's package for this platform in the project's
# .tools. Where there is none, the tests' DynamoDB is moto (they say so).
DYNOXIDE_PKG := $(if $(filter Linux-x86_64,$(shell uname -s)-$(shell uname -m)),@dynoxide/linux-x64)
DYNOXIDE ?= $(shell command -v dynoxide 2>/dev/null || echo $(CURDIR)/.tools/node_modules/$(or $(DYNOXIDE_PKG),@dynoxide/none)/dynoxide)
DYNOXIDE_VERSION := 1.2.1
export DYNOXIDE

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[A-Za-z_-]+:.*## / {printf "  %-24s %s\n", $$1, $$2} /^##  / {print substr($$0, 3)}' $(MAKEFILE_LIST)

# SAM's BuildMethod: makefile contract: one build-<LogicalId> target per
# function, each writing $(ARTIFACTS_DIR)/bootstrap.
##  build-IngestFunction     Build a function's linux/arm64 bootstrap into $(ARTIFACTS_DIR)
##  build-ProcessorFunction  (sam build sets ARTIFACTS_DIR; default .build/<Function>).
##  build-ReplayFunction
.PHONY: $(addprefix build-,$(LAMBDA_FUNCTIONS))
$(addprefix build-,$(LAMBDA_FUNCTIONS)): build-%:
	@mkdir -p "$(ARTIFACTS_DIR)"
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" $(LAMBDA_PKG_$*)

.PHONY: cfn-lint
cfn-lint: ## Lint template.yaml (what `sam validate --lint` runs).
	$(CFN_LINT) $(TEMPLATE)

.PHONY: run
run: local-aws dynoxide-if-any ## Run the whole system locally: the local AWS on :4566 (kumo, dynoxide for DynamoDB), the API on 127.0.0.1:3000, the processor polling; logs as text (RUN_FLAGS="-log json -metrics": as in Lambda).
	@# Built, then run: under `go run`, Ctrl-C made the go command exit 1
	@# (make: *** Error 1) though the stack had stopped cleanly with 0.
	$(GO) build -o .build/run ./infra/local/cmd/run
	./.build/run $(RUN_FLAGS)

RUN_FLAGS ?=

.PHONY: send
SOURCE ?= stripe
send: ## Sign a local source's sample, or any body, as its provider would and POST it: SOURCE=github, SEND_FLAGS="-repeat 2", -new-id, "-body my.json", "-type issues", "-header 'Name: v'".
	$(GO) run ./infra/local/cmd/send -source $(SOURCE) $(SEND_FLAGS)

.PHONY: burst
BURST_FLAGS ?=
burst: ## Against the `make run` stack: 2,000 distinct Stripe invoices, each delivered twice, 32 at a time; ingest req/s and p99, then time until all processed (BURST_FLAGS="-n 500 -c 8").
	$(GO) run ./infra/local/cmd/burst $(BURST_FLAGS)

.PHONY: replay
replay: ## Run one replay request against the `make run` stack, with progress: ARGS='{"action":"inspect","event_key":"stripe##evt_1"}' (events/replay-*.json).
	$(GO) run ./infra/local/cmd/replay '$(ARGS)'

.PHONY: events
events: ## Write the sample events, the ingest event signed now (Stripe signatures expire after 5 minutes), into .local/events/.
	$(GO) run ./infra/local/cmd/events

.PHONY: test
# -timeout: the short torture run takes one to two minutes, more on a loaded
# machine, its kills and faults settling in their own time (bounded by its
# settle option); go test's default of 10 minutes a package cut it short once.
# -p 4: the suites against the emulators mostly wait (visibility timeouts,
# leases, long polls, the settling run), not compute: with go test's default
# of one package per core, a 2-core machine was a third busy over the run,
# and two waiting packages at a time set its length. GOTESTP overrides it.
GOTESTP ?= 4
test: local-aws dynoxide-if-any $(BIN)/aws-lambda-rie ## Run every test: unit, against the emulators, end to end, and the bootstraps under the Runtime Interface Emulator.
	$(GO) test -count=1 -race -p $(GOTESTP) -timeout 20m ./...
	# The benchmarks behind the figures, once each, so that none stops running unseen.
	DYNOXIDE=$(DYNOXIDE) $(GO) test -count=1 -run='^$$' -bench='^Benchmark(ColdStart|ExamplePaths|Batch)$$' -benchtime=1x ./infra/local/ ./internal/processor/

.PHONY: test-short
test-short: ## Unit tests only (nothing to install or start).
	$(GO) test -short ./...

.PHONY: upgrade-check
REF ?=
upgrade-check: ## What updating a stack deployed from REF (default: the last earlier commit that changed template.yaml) would do to its state: replacements, removals, index changes DynamoDB refuses.
	$(GO) run ./infra/deploy/cmd/upgrade-check $(if $(REF),-ref $(REF)) -template $(TEMPLATE)

.PHONY: lint
lint: $(BIN)/staticcheck $(CFN_LINT) ## gofmt, go vet, staticcheck and cfn-lint (defaults, then every condition both ways: infra/deploy's Matrix).
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.venv/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(BIN)/staticcheck ./...
	$(CFN_LINT) $(TEMPLATE)
	$(GO) run ./infra/deploy/cmd/lint-matrix -cfn-lint $(CFN_LINT) -template $(TEMPLATE)

# One process per round, so that a scheme and its baseline are measured
# seconds apart rather than each after the other's repeats (go test -count).
.PHONY: bench
bench: ## Signature benchmarks beside the bare primitive and the provider SDK over the same bytes, in BENCH_COUNT rounds; ratios are medians of per-round ratios.
	@mkdir -p .build
	$(GO) test -c -o .build/signature.test ./internal/signature/
	set -o pipefail; for i in $$(seq $(BENCH_COUNT)); do \
	  echo "bench: round $$i of $(BENCH_COUNT) (about 90 s each; the table comes at the end)" >&2; \
	  (cd internal/signature && ../../.build/signature.test -test.run='^$$' -test.bench=. -test.benchmem) || exit 1; \
	done | tee .build/bench.txt | $(GO) run ./infra/bench
BENCH_COUNT ?= 3

# The processor's batch against one event, 20 ms added to every AWS call,
# against dynoxide (see internal/processor/bench_test.go).
.PHONY: bench-processor
bench-processor: $(DYNOXIDE) ## Processor: a batch of 10 events against one, with 20 ms on every AWS call; prints the ratios.
	@mkdir -p .build
	set -o pipefail; DYNOXIDE=$(DYNOXIDE) $(GO) test -run='^$$' -bench='^BenchmarkBatch$$' -benchtime=$(BENCH_BATCHES)x -count=$(BENCH_COUNT) ./internal/processor/ \
	  | tee .build/bench-processor.txt \
	  | awk '/^BenchmarkBatch\// { split($$1, p, "/"); sub(/-[0-9]+$$/, "", p[3]); k = p[2] "/" p[3]; sum[k] += $$3; n[k]++ } \
	    END { one = sum["events=1/concurrency=10"] / n["events=1/concurrency=10"]; \
	      for (k in sum) printf "%-32s %8.1f ms  %5.2fx one event\n", k, sum[k] / n[k] / 1e6, sum[k] / n[k] / one }' | sort
BENCH_BATCHES ?= 20

.PHONY: cost
COST_N ?= 200
cost: local-aws dynoxide-if-any ## The AWS bill per million events of each example path, measured through the local stack, beside its floor (COST_N deliveries a path).
	$(GO) run ./infra/cost -n $(COST_N)

.PHONY: bench-coldstart
bench-coldstart: $(BIN)/aws-lambda-rie ## Each real bootstrap started under the Runtime Interface Emulator, start to first answer, beside a hello-world Go bootstrap in the same run (round robin); prints the ratios.
	set -o pipefail; $(GO) test -run='^$$' -bench='^BenchmarkColdStart$$' -benchtime=$(BENCH_STARTS)x -count=$(BENCH_COUNT) ./infra/local/ \
	  | awk '/^BenchmarkColdStart/ { for (i = 3; i < NF; i += 2) { v[$$(i+1)] += $$i; n[$$(i+1)]++ } } \
	    END { for (k in v) if (k != "ns/op") printf "%-18s %8.2f\n", k, v[k] / n[k] }' | sort
BENCH_STARTS ?= 30

.PHONY: bench-units
bench-units: $(DYNOXIDE) ## Each example path: DynamoDB capacity per event (as dynoxide reports it) and commit-to-receipt time.
	DYNOXIDE=$(DYNOXIDE) $(GO) test -run='^$$' -bench='^BenchmarkExamplePaths$$' -benchtime=50x ./internal/processor/

# The torture run (infra/torture): the real handlers, the processor as
# worker processes SIGKILLed every ~2 s, faults on every AWS call, then an
# audit of the table, the DLQ and the receiver's log. Needs dynoxide.
.PHONY: torture
TORTURE_FLAGS ?=
torture: local-aws dynoxide-if-any ## Everything at once, then an audit; one verdict line (TORTURE_FLAGS="-seed 2 -events 1000").
	$(GO) run ./infra/torture $(TORTURE_FLAGS)

.PHONY: torture-load
torture-load: local-aws dynoxide-if-any ## The torture run as a load benchmark: no faults or kills, beside the floor of minimal calls per event.
	$(GO) run ./infra/torture -load $(TORTURE_FLAGS)

.PHONY: model
model: ## Model-check the protocol (model/inbox.pml) with spin: safety exhaustively, then liveness under weak fairness, each for the receipt's row and for a forwarding row put ahead of the commit (AHEAD); then facts across the upgrade to scopes (model/twins.pml) and the operator's paths (model/operator.pml).
	@command -v spin >/dev/null || { echo "spin not found: apt-get install spin"; exit 1; }
	@rm -rf .build/model && mkdir -p .build/model && cp model/inbox.pml .build/model/
	cd .build/model && spin -a inbox.pml >/dev/null && cc -O2 -DSAFETY -DNOCLAIM -DCOLLAPSE -o safety pan.c
	cd .build/model && ./safety -m200000 > safety.txt; grep -E 'errors:|states, stored|assertion violated' safety.txt
	@grep -q 'errors: 0$$' .build/model/safety.txt || { echo "model: safety FAILED (trail: .build/model/inbox.pml.trail; spin -t -p inbox.pml)"; exit 1; }
	@# Liveness with CRASH_FIRST (see inbox.pml): every crash point would not fit in memory.
	@mkdir -p .build/model/live && cp model/inbox.pml .build/model/live/
	cd .build/model/live && spin -DCRASH_FIRST -a inbox.pml >/dev/null && cc -O2 -DCOLLAPSE -DNFAIR=8 -o liveness pan.c
	cd .build/model/live && ./liveness -a -f -m200000 > ../liveness.txt; grep -E 'errors:|states, stored|acceptance cycle' ../liveness.txt
	@grep -q 'errors: 0$$' .build/model/liveness.txt || { echo "model: liveness FAILED (trail: .build/model/live/inbox.pml.trail)"; exit 1; }
	@# The same with AHEAD: the row a FORWARD route's that retries unknowns,
	@# its entry put under the event's lease before the commit.
	@mkdir -p .build/model/ahead .build/model/ahead-live && cp model/inbox.pml .build/model/ahead/ && cp model/inbox.pml .build/model/ahead-live/
	cd .build/model/ahead && spin -DAHEAD -a inbox.pml >/dev/null && cc -O2 -DSAFETY -DNOCLAIM -DCOLLAPSE -o safety pan.c
	cd .build/model/ahead && ./safety -m200000 > safety.txt; grep -E 'errors:|states, stored|assertion violated' safety.txt
	@grep -q 'errors: 0$$' .build/model/ahead/safety.txt || { echo "model: AHEAD safety FAILED (trail: .build/model/ahead/inbox.pml.trail)"; exit 1; }
	cd .build/model/ahead-live && spin -DAHEAD -DCRASH_FIRST -a inbox.pml >/dev/null && cc -O2 -DCOLLAPSE -DNFAIR=8 -o liveness pan.c
	cd .build/model/ahead-live && ./liveness -a -f -m200000 > liveness.txt; grep -E 'errors:|states, stored|acceptance cycle' liveness.txt
	@grep -q 'errors: 0$$' .build/model/ahead-live/liveness.txt || { echo "model: AHEAD liveness FAILED (trail: .build/model/ahead-live/inbox.pml.trail)"; exit 1; }
	@# Each property of inbox.pml, broken on purpose by its switch, fails
	@# (model/README.md says which finds what).
	@for v in UNFENCED_COMMIT UNFENCED_FIRST STATUS_FIRST RESEND_STOPPED REPORT_HELD NO_SWEEP AHEAD_FIRST AHEAD_BLIND; do \
	  d=.build/model/inbox-$$v; mkdir -p $$d && cp model/inbox.pml $$d/ && \
	  flags=-D$$v; case $$v in AHEAD_*) flags="-DAHEAD $$flags";; esac; \
	  (cd $$d && spin $$flags -a inbox.pml >/dev/null && cc -O2 -DSAFETY -DNOCLAIM -DCOLLAPSE -o safety pan.c && ./safety -m200000 > safety.txt); \
	  s=$$(grep -oE 'errors: [0-9]+' $$d/safety.txt); echo "inbox.pml $$v: safety $$s, $$(grep -oE 'assertion violated [^ ]+' $$d/safety.txt | head -1)"; \
	  [ "$$s" != "errors: 0" ] || { echo "model: inbox.pml with $$v did not fail: the property proves nothing"; exit 1; }; \
	done
	@# Facts across the upgrade to scopes (model/twins.pml): the twin checks
	@# keep each tenant's fact once, and without them the property fails.
	@mkdir -p .build/model/twins .build/model/notwins && cp model/twins.pml .build/model/twins/ && cp model/twins.pml .build/model/notwins/
	cd .build/model/twins && spin -a twins.pml >/dev/null && cc -O2 -DSAFETY -o pan pan.c && ./pan > safety.txt; grep -E 'errors:|states, stored|assertion violated' safety.txt
	@grep -q 'errors: 0$$' .build/model/twins/safety.txt || { echo "model: twins FAILED (trail: .build/model/twins/twins.pml.trail)"; exit 1; }
	cd .build/model/notwins && spin -DNOTWINS -a twins.pml >/dev/null && cc -O2 -DSAFETY -o pan pan.c && ./pan > safety.txt; grep -E 'errors:|assertion violated' safety.txt
	@grep -q 'errors: [1-9]' .build/model/notwins/safety.txt || { echo "model: twins without their checks did not fail: the property proves nothing"; exit 1; }
	@# The operator's and the sweep's paths (model/operator.pml): safety and
	@# liveness pass; each of issue 28's findings, restored by its switch, fails.
	@for v in fixed SHARED_CLOCK SAME_GEN UNGUARDED; do \
	  d=.build/model/operator-$$v; mkdir -p $$d && cp model/operator.pml $$d/ && \
	  flag=$$( [ $$v = fixed ] || echo -D$$v ) && \
	  (cd $$d && spin $$flag -a operator.pml >/dev/null && cc -O2 -DSAFETY -DNOCLAIM -o safety pan.c && ./safety > safety.txt; \
	   cc -O2 -DNFAIR=8 -o liveness pan.c && ./liveness -a -f > liveness.txt); \
	  s=$$(grep -oE 'errors: [0-9]+' $$d/safety.txt); l=$$(grep -oE 'errors: [0-9]+' $$d/liveness.txt); \
	  echo "operator.pml $$v: safety $$s, liveness $$l"; \
	  if [ $$v = fixed ]; then [ "$$s" = "errors: 0" ] && [ "$$l" = "errors: 0" ] || { echo "model: operator.pml FAILED (trail in $$d)"; exit 1; }; \
	  else [ "$$s" != "errors: 0" ] || [ "$$l" != "errors: 0" ] || { echo "model: operator.pml with $$v did not fail: the property proves nothing"; exit 1; }; fi; \
	done
	@echo "model: ok"

.PHONY: fuzz
fuzz: ## Every fuzz target of the parsers in turn, FUZZTIME each (FUZZTIME=5m for a long run).
	@set -e; for pkg in $(FUZZ_PKGS); do \
	  for t in $$($(GO) test -list='^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$t $$pkg"; \
	    $(GO) test -run='^$$' -fuzz="^$$t\$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done
FUZZTIME ?= 30s
FUZZ_PKGS ?= ./internal/signature/ ./internal/apigw/ ./internal/source/ ./internal/inbox/ ./internal/forward/ ./infra/local/

.PHONY: moto
moto: $(MOTO_SERVER)

.PHONY: kumo
kumo: $(KUMO)

# The emulator LOCAL_AWS names: kumo (the default) or moto.
.PHONY: local-aws
local-aws: $(if $(filter moto,$(LOCAL_AWS)),moto,kumo)

$(BIN)/kumo:
	GOBIN=$(BIN) $(GO) install github.com/sivchari/kumo/cmd/kumo@$(KUMO_VERSION)

.PHONY: dynoxide
dynoxide: $(DYNOXIDE)

$(CURDIR)/.tools/node_modules/$(DYNOXIDE_PKG)/dynoxide:
	@if [ -z "$(DYNOXIDE_PKG)" ]; then echo "no dynoxide package for $$(uname -sm)"; exit 1; fi
	npm install --silent --prefix .tools $(DYNOXIDE_PKG)@$(DYNOXIDE_VERSION)

# dynoxide where it can be had; where not, a note, and moto serves DynamoDB.
.PHONY: dynoxide-if-any
dynoxide-if-any:
	@[ -x "$(DYNOXIDE)" ] || $(MAKE) --no-print-directory dynoxide \
	  || echo "note: dynoxide unavailable here: the tests' DynamoDB is moto (slower, and serialized)"

$(CURDIR)/.venv/bin/moto_server:
	python3 -m venv .venv
	.venv/bin/pip install --quiet 'moto[server]>=5.2,<6'

$(CURDIR)/.venv/bin/cfn-lint:
	python3 -m venv .venv
	.venv/bin/pip install --quiet 'cfn-lint>=1.51,<2'

$(BIN)/aws-lambda-rie:
	GOBIN=$(BIN) $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

$(BIN)/staticcheck:
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(SC_VERSION)

.PHONY: clean
clean: ## Remove build output and installed tools.
	rm -rf .build .local bin .tools
