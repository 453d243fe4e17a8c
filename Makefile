# levers9 — see README.md. `make run` starts the server on the embedded
# default; `make test` runs every test on SQLite and PostgreSQL.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
export GOFLAGS := -buildvcs=false
WITHPG := $(GO) run ./internal/dbtest/withpg --
# Container tests need a Docker daemon: withdocker starts a private one
# when none answers (Debian's docker.io) and stops it afterwards.
WITHDOCKER := $(GO) run ./internal/dockertest/withdocker --
# The MinIO server the object storage tests run against, built once from the
# module proxy (a few minutes) and kept in GOPATH/bin.
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
MINIO := $(shell $(GO) env GOPATH)/bin/minio
export LEVERS9_MINIO := $(MINIO)

.PHONY: all build run generate check test bench fuzz screenshots clean

all: build

# The version and commit levers9 version, /readyz and the dashboard footer
# show; override with make build VERSION=1.2.3 COMMIT=… (no git checkout).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/levers9 ./cmd/levers9
	$(GO) build -o bin/levers9-supervise ./cmd/levers9-supervise

## run: the server on the embedded default (SQLite and buckets in ./levers9-data)
run:
	$(GO) run ./cmd/levers9 server

## generate: regenerate ent and gqlgen code (committed)
generate:
	cd ent && $(GO) run -mod=mod ./entc.go
	$(GO) run github.com/99designs/gqlgen generate
	$(GO) run github.com/a-h/templ/cmd/templ generate -path ui

## check: fail when generated code is stale, code is unformatted or vet complains
check: generate
	@if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		echo "not a git checkout: cannot check generated code for drift"; \
	elif [ -n "$$(git status --porcelain -- ent graph ui gqlgen.yml)" ]; then \
		echo "generated code is stale: run make generate and commit"; \
		git status --porcelain -- ent graph ui gqlgen.yml; exit 1; fi
	@if [ -n "$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*'))" ]; then \
		echo "unformatted:"; gofmt -l $$(find . -name '*.go' -not -path './.git/*'); exit 1; fi
	$(GO) vet ./...
	$(GO) test -count=1 ./internal/layering

$(MINIO):
	@echo "building the MinIO server for the tests (once; a few minutes)"
	GOFLAGS= $(GO) install github.com/minio/minio@$(MINIO_VERSION)

## test: the drift check, then every test; database tests on SQLite and on a
## private PostgreSQL started from the installed server binaries; object
## storage tests on a private MinIO; container tests on Docker (a private
## daemon when none answers). The e2e package alone runs 20-25 minutes on
## 2 cores: the timeout leaves it headroom on a busy machine until it is
## split (issue 44).
test: check $(MINIO)
	@rm -f test.log
	@status=0; $(WITHDOCKER) $(WITHPG) $(GO) test -count=1 -timeout 40m -v ./... > test.log 2>&1 || status=$$?; \
	grep -E '^(ok|FAIL|panic:)|^\s*--- FAIL' test.log || true; \
	if [ $$status -ne 0 ]; then echo "failure details:"; grep -E -e '--- FAIL|panic:|_test\.go:[0-9]+:|\.go:[0-9]+ \+0x|^#|\.go:[0-9]+:[0-9]+: ' test.log | tail -200; fi; \
	echo "database tests passed: $$(grep -c -E -- '--- PASS: .*/sqlite \(' test.log) on SQLite, $$(grep -c -E -- '--- PASS: .*/postgres \(' test.log) on PostgreSQL (full log: test.log)"; \
	exit $$status

## bench: benchmarks; they print their numbers. One package at a time
## (-p 1): go test would otherwise run two packages' benchmarks at once,
## each slowing the other's figures.
bench:
	$(WITHDOCKER) $(WITHPG) $(GO) test -p 1 -run '^$$' -bench . -benchtime 1x -timeout 60m ./graph/ ./internal/metering/ ./internal/ledger/ ./internal/scheduling/ ./internal/scheduler/ ./e2e/ ./ui/ ./agent/runtime/docker/ ./internal/relay/ ./internal/wire/ ./internal/deployapi/ ./internal/functions/ ./internal/metrics/dbstate/ ./internal/joblog/ ./agent/runtime/ ./workers/ | grep -v -E '^(goos|goarch|pkg|cpu):'

## screenshots: regenerate docs/screenshots (the README's) with Chromium
screenshots:
	LEVERS9_SCREENSHOTS=1 $(GO) test ./e2e -run '^TestBrowserScreenshots$$' -count=1

## fuzz: a short run of every fuzz target
fuzz:
	$(GO) test ./internal/jobspec -run '^$$' -fuzz FuzzValidate -fuzztime 30s
	$(GO) test ./internal/billing -run '^$$' -fuzz FuzzTokensRoundTrip -fuzztime 30s
	$(GO) test ./internal/ids -run '^$$' -fuzz FuzzPrefix -fuzztime 30s
	$(GO) test ./internal/wire -run '^$$' -fuzz FuzzDecode -fuzztime 30s
	$(GO) test ./storage -run '^$$' -fuzz FuzzCheckKey -fuzztime 30s
	$(GO) test ./internal/scheduling -run '^$$' -fuzz FuzzPlace -fuzztime 30s
	$(GO) test ./graph -run '^$$' -fuzz FuzzGraphQLLimits -fuzztime 30s
	$(GO) test ./internal/deployapi -run '^$$' -fuzz FuzzDispatch -fuzztime 30s
	$(GO) test ./internal/secrets -run '^$$' -fuzz FuzzParseAssignment -fuzztime 30s
	$(GO) test ./agent/supervise -run '^$$' -fuzz FuzzTask -fuzztime 30s

clean:
	rm -rf bin test.log
