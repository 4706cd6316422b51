# chatgen — the two commands a new user needs are `make demo` and `make test`.

GO ?= go

.PHONY: demo terminal counter helpdesk helpdesk-terminal test test-stress fmt-check vet lint generate-check gotest fleet failover golden bench bench-peers bench-durable numbers fuzz

## demo: generate the weaponbuilder example and serve it offline (Ctrl-C stops it).
demo:
	$(GO) generate ./examples/...
	$(GO) run ./examples/weaponbuilder

## terminal: the weaponbuilder example as a terminal chat.
terminal:
	$(GO) generate ./examples/...
	$(GO) run ./examples/weaponbuilder -terminal

## helpdesk: the agents example (hand-off, sub-agent fan-out, plan) served offline.
helpdesk:
	$(GO) generate ./examples/helpdesk
	$(GO) run ./examples/helpdesk

## helpdesk-terminal: the agents example as a terminal chat.
helpdesk-terminal:
	$(GO) generate ./examples/helpdesk
	$(GO) run ./examples/helpdesk -terminal

## counter: the scoped-bean scenarios of the Quarkus guide.
counter:
	$(GO) run ./examples/counter

## test: everything CI checks.
test: fmt-check vet lint generate-check gotest

# gofmt -l is given directories, never an empty list (which would read stdin),
# so this also works outside a git checkout.
fmt-check:
	@out=$$(gofmt -l cmd docs examples gen internal runtime); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## lint: staticcheck, dead code (U1000) included.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) run $(STATICCHECK) ./...

generate-check:
	$(GO) generate ./...
	@if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		echo "not a git checkout: generated files regenerated, not compared"; exit 0; fi; \
	git diff --exit-code -- . || { echo "generated files are stale: run go generate ./... and commit"; exit 1; }; \
	untracked=$$(git ls-files --others --exclude-standard -- '*chat_gen.go'); \
	if [ -n "$$untracked" ]; then echo "untracked generated files: $$untracked"; exit 1; fi

# gotest runs the tests of TESTPKGS (every package) with the race
# detector, through internal/cmd/testsummary: it prints what go test
# prints, then a summary of the failing packages and tests (those that
# failed without a --- FAIL too, with their last lines), and last a line
# "N passed, M failed" (built, not go run, which would add a line after it).
TESTPKGS ?= ./...
gotest:
	@dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; trap 'exit 130' INT TERM; \
	$(GO) build -o "$$dir/testsummary" ./internal/cmd/testsummary || exit 1; \
	echo "$(GO) test -race -json $(GOTESTFLAGS) $(TESTPKGS) | testsummary"; \
	"$$dir/testsummary" $(GO) test -race -json $(GOTESTFLAGS) $(TESTPKGS)

## fleet: the fleet test (internal/fleet, 2-3 minutes): three server
## processes on Redis, then on PostgreSQL, behind nginx and HAProxy
## configured by docs/deploy, 200 clients chatting while each node is
## drained (SIGTERM) and restarted, then one killed; no turn may be lost
## or run twice. Needs nginx, haproxy, redis-server and the PostgreSQL at
## 127.0.0.1:5432; .ci/run runs it after make test. FLEETFLAGS is passed
## to go test; CHATGEN_FLEET_RUNS picks the runs (say haproxy/postgres).
FLEETFLAGS ?=
fleet:
	CHATGEN_FLEET=1 $(GO) test ./internal/fleet -run TestFleet -count=1 -v -timeout 15m $(FLEETFLAGS)

## failover: the store tests that restart, fail over or reshard servers
## of their own under load (a few minutes): a Redis Cluster resharded by
## redis-cli --cluster reshard, PostgreSQL restarted and failed over.
## Needs redis-server, redis-cli and PostgreSQL's binaries; .ci/run runs
## it after make test. FAILOVERFLAGS is passed to go test.
FAILOVERFLAGS ?=
failover:
	CHATGEN_FAILOVER=1 $(GO) test ./runtime/redisstore ./runtime/pgstore -run TestFailover -count=1 -v -timeout 20m $(FAILOVERFLAGS)

## test-stress: the race-enabled tests (of TESTPKGS) STRESS_N times, with
## -count=1, beside STRESS_HOGS busy loops (a loaded machine), which stop
## when it ends or after STRESS_HOG_SECONDS; prints each round's summary
## and, at the end, the failures of every round. Not part of make test.
STRESS_N ?= 5
STRESS_HOGS ?= 2
STRESS_HOG_SECONDS ?= 7200
test-stress:
	@dir=$$(mktemp -d); hogs=""; \
	trap 'kill $$hogs 2>/dev/null; rm -rf "$$dir"' EXIT; trap 'exit 130' INT TERM; \
	$(GO) build -o "$$dir/testsummary" ./internal/cmd/testsummary || exit 1; \
	for i in $$(seq $(STRESS_HOGS)); do \
		timeout $(STRESS_HOG_SECONDS) sh -c 'while :; do :; done' & hogs="$$hogs $$!"; \
	done; \
	start=$$(date +%s); failed=0; \
	for i in $$(seq $(STRESS_N)); do \
		echo "=== stress round $$i of $(STRESS_N), beside $(STRESS_HOGS) busy loops"; \
		t0=$$(date +%s); \
		{ "$$dir/testsummary" $(GO) test -race -json -count=1 $(GOTESTFLAGS) $(TESTPKGS); \
			echo $$? > "$$dir/rc$$i"; } 2>&1 | tee "$$dir/round$$i.log"; \
		res=ok; if [ "$$(cat "$$dir/rc$$i")" != 0 ]; then res=FAIL; failed=$$((failed+1)); fi; \
		echo "=== stress round $$i: $$res in $$(( $$(date +%s) - t0 )) s: $$(tail -n 1 "$$dir/round$$i.log")"; \
	done; \
	echo "=== test-stress: $(STRESS_N) rounds in $$(( $$(date +%s) - start )) s, $$failed failed"; \
	for i in $$(seq $(STRESS_N)); do \
		if [ "$$(cat "$$dir/rc$$i")" != 0 ]; then \
			echo "round $$i:"; sed -n '/^=== Summary$$/,$$p' "$$dir/round$$i.log" | sed '1d; s/^/    /'; \
		fi; \
	done; \
	[ $$failed -eq 0 ]

## golden: rewrite the generator's golden files and docs/directives.md.
golden:
	$(GO) test ./gen -run 'TestGolden|TestDirectivesDoc' -update

## bench: every benchmark once.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## bench-peers: chatgen beside what users would write instead, in one run
## per package, interleaved (-count): the ratios of docs/numbers.md.
## Feed the output to benchstat to read medians.
PEERCOUNT ?= 5
bench-peers:
	$(GO) test ./gen -run '^$$' -bench 'BenchmarkGeneratePeers' -count $(PEERCOUNT)
	$(GO) test ./runtime/chat -run '^$$' -bench 'BenchmarkLocalTurn$$|BenchmarkLocalTurnPeerMinimalRouter' -benchmem -count $(PEERCOUNT)
	$(GO) test ./runtime/ai -run '^$$' -bench 'BenchmarkAITurn' -benchmem -count $(PEERCOUNT)
	$(GO) test ./runtime/memory -run '^$$' -bench 'BenchmarkWindowAdd|BenchmarkWindowMessages|BenchmarkWindowHeld' -benchmem -count $(PEERCOUNT)
	$(GO) test ./runtime/ws -run '^$$' -bench 'BenchmarkLoad$$|BenchmarkIdleMemory' -benchtime 1x -count $(PEERCOUNT)

## bench-durable: the "Durable turns" of docs/numbers.md: 1,000 sessions
## chatting at once over each store (no store, in memory, bbolt with and
## without group commit, Redis, PostgreSQL), DURABLECOUNT rounds of all
## stores one after the other, each round logging its ratios to no store;
## bbolt's saves alone, by one writer and by 1,000, with and without
## group commit; the round
## trips of a turn (counted). Needs Redis at 127.0.0.1:6379 and
## PostgreSQL at 127.0.0.1:5432 (database test).
DURABLECOUNT ?= 3
DURABLETURNS ?= 20000
bench-durable:
	for i in $$(seq $(DURABLECOUNT)); do \
		$(GO) test ./internal/durable -run '^$$' -bench 'BenchmarkConcurrentTurns' -benchtime $(DURABLETURNS)x -count 1 -timeout 60m -v || exit 1; \
	done
	$(GO) test ./runtime/boltstore -run '^$$' -bench 'BenchmarkSaveTurn' -benchmem -count $(DURABLECOUNT)
	$(GO) test ./runtime/boltstore -run '^$$' -bench 'BenchmarkConcurrentSaves' -benchmem -benchtime $(DURABLETURNS)x -count $(DURABLECOUNT)
	$(GO) test ./internal/durable -run 'TestRoundTripsPerTurn' -count 1 -v

## numbers: the token and round-trip comparisons of docs/numbers.md.
numbers:
	CHATGEN_NUMBERS=1 $(GO) test ./examples/weaponbuilder -run TestTokenEfficiency -count=1 -v
	$(GO) test ./runtime/memory -run '^$$' -bench LongConversation -benchtime 1x
	CHATGEN_NUMBERS=1 $(GO) test ./runtime/memory -run '^TestConversationCost$$' -count=1 -v -timeout 30m
	$(GO) test ./runtime/longterm/recall -run 'TestTwentyConversations' -count=1 -v
	$(GO) test ./runtime/knowledge -run Evaluation -count=1 -v
	$(GO) test ./runtime/ai -run 'TestKnowledge.*Tokens' -count=1 -v

## fuzz: a short run of each fuzz target.
fuzz:
	$(GO) test ./gen -run '^$$' -fuzz FuzzParseDirective -fuzztime 30s
	$(GO) test ./runtime/ws -run '^$$' -fuzz FuzzFrames -fuzztime 30s
	$(GO) test ./runtime/knowledge -run '^$$' -fuzz FuzzDecode -fuzztime 30s
	$(GO) test ./runtime/ws -run '^$$' -fuzz FuzzScanObject -fuzztime 30s
