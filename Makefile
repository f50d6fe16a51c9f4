# webhook-inbox. `make` alone lists the targets.

GO       ?= go
CFN_LINT ?= cfn-lint
TEMPLATE ?= template.yaml

# `sam build` sets ARTIFACTS_DIR for each build-<LogicalId> target; a plain
# `make build-IngestFunction` writes to .build/IngestFunction/bootstrap.
ARTIFACTS_DIR ?= .build/$*

# Lambda binaries: provided.al2023 on arm64, static, no RPC shim, no paths or
# symbols baked in (smaller binary, faster cold start).
LAMBDA_ENV   := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w'

# Function logical ID in template.yaml -> its main package.
LAMBDA_FUNCTIONS          := IngestFunction ProcessorFunction ReplayFunction
LAMBDA_PKG_IngestFunction    := ./functions/ingest
LAMBDA_PKG_ProcessorFunction := ./functions/processor
LAMBDA_PKG_ReplayFunction    := ./functions/replay

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
