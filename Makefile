# agentpty: the two commands people run first are `make demo` and `make test`.
GO ?= go
STATICCHECK_VERSION ?= v0.8.2
FUZZTIME ?= 10s
PROPERTY_BUDGET ?= 10m
# PROXYCHECK: the install check make test ends with (PROXYCHECK=true skips it).
PROXYCHECK ?= scripts/proxycheck.sh
# MODULES: every module of the repository.
MODULES := . examples kubepty cmd/agentpty-mcp

.PHONY: test demo bench lint limits cross fuzz conformance tidy proxycheck shellcheck

# test: in every module (the library, examples, kubepty, cmd/agentpty-mcp),
# vet and the race-checked tests (internal/limits among them: no function
# over 60 lines, no file over 800, in every module); then the proxy check
# (scripts/proxycheck.sh: go install of agentpty-mcp from a file:// proxy
# of a tagged clone). A failing module does not stop the others; the last
# lines say how each went, and the exit code is non-zero if any failed.
# internal/cmd/skips prints go test's usual output and lists the tests
# that skipped, and why, before each module's result lines; pipefail
# keeps go test's exit code.
test: SHELL := /bin/bash
test:
	@sum=""; fail=0; \
	for d in $(MODULES); do \
	  echo "== $$d"; \
	  if (cd $$d && $(GO) vet ./... && set -o pipefail && $(GO) test -race -count=1 -json ./... 2>&1 | $(GO) -C $(CURDIR) run ./internal/cmd/skips); \
	  then sum="$$sum"$$'\n'"ok    $$d"; else sum="$$sum"$$'\n'"FAIL  $$d"; fail=1; fi; \
	done; \
	echo "== proxycheck"; \
	if $(PROXYCHECK); then sum="$$sum"$$'\n'"ok    proxycheck"; else sum="$$sum"$$'\n'"FAIL  proxycheck"; fail=1; fi; \
	echo "$$sum"; exit $$fail

# proxycheck: agentpty-mcp installs with go install from a file:// module
# proxy of a tagged clone into an empty module cache, answers --version
# and an MCP initialize and tools/list; kubepty resolves the same way.
proxycheck:
	scripts/proxycheck.sh

# demo: drives python3, bash and vim through the library and prints each
# tool call with what the model gets back.
demo:
	cd examples && $(GO) run ./demo

# bench: the library beside the bare creack/pty floor, and over SSH beside a
# bare x/crypto/ssh session, measured in one run; one package at a time
# (-p 1), so that neither measures beside the other.
bench:
	AGENTPTY_BENCH=1 $(GO) test -p 1 -count=1 -run TestBenchReport -v -timeout 30m . ./sshpty

lint: cross limits tidy shellcheck
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: the files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	cd examples && $(GO) vet ./...
	cd cmd/agentpty-mcp && $(GO) vet ./...

# shellcheck: the shell remote terminals run on their host (remote/*.sh,
# embedded in the library) and the repository's scripts, as POSIX sh
# where they are sh.
shellcheck:
	shellcheck -s sh remote/*.sh
	shellcheck scripts/*.sh

# tidy: every go.mod and go.sum is what go mod tidy leaves (scripts/tidy.sh
# -diff; the modules that require agentpty's own by version are tidied
# against the checkout, as go.work builds them).
tidy:
	scripts/tidy.sh -diff

# limits: no function over 60 lines but the parser's dispatch tables, no
# file over 800, in every module, and Session within 30 fields and 2
# mutexes; prints the longest function and file and Session's shape.
limits:
	$(GO) test -count=1 -v -run 'TestLimits|TestMeasure|TestSessionShape|TestStructShape' ./internal/limits

# cross: every OS builds; elsewhere than Linux and macOS (FreeBSD, Windows)
# local sessions report ErrUnsupported and Options.Backend still works.
cross:
	GOOS=darwin $(GO) vet ./...
	GOOS=freebsd $(GO) vet ./...
	GOOS=windows $(GO) build ./...

# fuzz: a short run of every fuzz target, one at a time, then the rules'
# property test (commands the rules approve, run for real under strace in
# the sandbox) for PROPERTY_BUDGET from a new seed; make test runs it for
# about half a minute from a fixed one.
fuzz: SHELL := /bin/bash
fuzz:
	set -o pipefail; AGENTPTY_PROPERTY_BUDGET=$(PROPERTY_BUDGET) AGENTPTY_PROPERTY_SEED=random $(GO) test -count=1 -timeout 0 -run '^TestApproveRulesProperty$$' -v ./rules/ | grep -v '^=== '
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# conformance: the screen against 76 screens captured from real xterm.
conformance:
	$(GO) test -count=1 -run 'Conformance' -v ./internal/screen/
