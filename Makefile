# RL — native rate-limit commands for Redis.
# `make run` and `make test` install what is missing (Debian/apt), then build.

PORT ?= 6379
BASE_PORT ?= 7000
# LIBRARY=1: `make run` and `make cluster` serve the Functions library instead of the module.
LIBRARY ?=
HOST ?= 127.0.0.1
CARGO ?= cargo

.PHONY: help deps build run test unit lint commands-json lua clients fmt clean bench fuzz examples cluster plot compat load-library dist test-dist

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'
	@echo "  PORT=$(PORT) picks the port for 'make run'; LIBRARY=1 serves functions/rl.lua instead of the module."

deps: ## Install redis-server, redis-cli and bindgen's libclang when missing
	@scripts/deps.sh

build: deps ## Build the module (target/release/librl.so)
	$(CARGO) build --release

run: build ## Start redis-server with the module on PORT (default 6379); LIBRARY=1: the Functions library instead
	@PORT=$(PORT) LIBRARY=$(LIBRARY) scripts/run.sh

load-library: ## Load functions/rl.lua into HOST:PORT (every primary, if it is a cluster node)
	@scripts/load-library.sh $(HOST):$(PORT)

# The integration tests load the release .so that `make build` ships (Redis's
# allocator, no test hooks); only the panic test loads a build with --features testing.
TARGET_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
RELEASE_SO := $(TARGET_DIR)/release/librl.so
TESTING_SO := $(TARGET_DIR)/testing/librl.so

test: build ## Unit, property and integration tests (module, then library backend), examples, bench smoke
	@CARGO="$(CARGO)" RL_MODULE=$(RELEASE_SO) RL_TESTING_MODULE=$(TESTING_SO) scripts/test.sh

unit: deps ## Only the unit and property tests (no server)
	$(CARGO) test -p rl-core --features model
	$(CARGO) test --lib

lint: deps ## rustfmt check, the docs' vector tables, commands.json, rl.lua's generated parts and the clients' generated surface up to date, clippy with warnings as errors
	$(CARGO) fmt --all -- --check
	python3 scripts/vectors.py --check
	$(CARGO) run -q -p rl-core --example commands_json -- --check commands.json
	$(CARGO) run -q -p rl-core --example lua_data -- --check functions/rl.lua
	python3 scripts/clientgen --check
	$(CARGO) clippy --workspace --all-targets --all-features -- -D warnings

compat: build ## The integration suite on Redis 7.0/7.2/7.4/8.0/8.2/8.10 and Valkey 8.0/8.1/9.1 (servers cached in RL_COMPAT_CACHE, sources from RL_VENDOR)
	@scripts/compat.sh

dist: ## Release artefacts into dist/: the module for x86-64/arm64 x glibc 2.17+/musl, the library, SHA256SUMS (docs/install.md)
	@CARGO="$(CARGO)" scripts/dist.sh

test-dist: dist ## Load each artefact of dist/ into a real server of its platform (qemu for arm64, a musl-built Redis) and run the smoke suite
	@CARGO="$(CARGO)" scripts/test-dist.sh

examples: build ## Smoke-test the HTTP examples (Python, Node, Rust) against a fresh redis-server
	@scripts/examples.sh

cluster: build ## Start a local 3-shard Redis Cluster with RL on ports BASE_PORT.. (default 7000); LIBRARY=1: the library; Ctrl-C stops it
	@BASE_PORT=$(BASE_PORT) LIBRARY=$(LIBRARY) scripts/cluster.sh

plot: build ## Draw docs/algorithms.png (the same traffic on every rate limiter) and write docs/accuracy.md (PLOT_OUT=path)
	@scripts/plot.sh

commands-json: ## Write commands.json (every command's arguments, options and replies) from the command table
	$(CARGO) run -q -p rl-core --example commands_json -- --write commands.json

lua: ## Write the generated parts of functions/rl.lua (usage, limits, error texts, policies, function map, registration) from the command table
	$(CARGO) run -q -p rl-core --example lua_data -- --write functions/rl.lua

clients: ## Write the typed clients' per-command surface (clients/*) from commands.json
	python3 scripts/clientgen --write

fmt: ## Format the code
	$(CARGO) fmt --all

clean: ## Remove build output
	$(CARGO) clean

bench: build ## Benchmark RL against native commands, the module-API floor, redis-cell and the Functions library; writes docs/performance.md (~10 min; BENCH_ROUNDS, BENCH_SECONDS)
	@scripts/bench.sh

fuzz: ## Fuzz parsing and decisions for FUZZ_SECONDS (default 60)
	@scripts/fuzz.sh
