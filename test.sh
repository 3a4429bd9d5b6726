#!/usr/bin/env bash
# Runs every test of the repository on a fresh machine: installs
# redis-server and python3 when they are missing, then checks that the generated files are
# up to date, that the code is gofmt- and vet-clean, and runs go test;
# the TypeScript SDK (sdk/ts) is built before the root module's tests
# (internal/chaos runs it), then format-checked and tested; the Python SDK
# (sdk/python) gets a virtual environment with its hash-locked packages
# before the root module's tests too (internal/chaos runs its chaos programs
# in it, the conformance suite its testee) and is checked with ruff, mypy
# --strict and pytest.
set -euo pipefail
cd "$(dirname "$0")"

# Each phase is announced by phase; on exit (pass or fail) the phases'
# wall times are printed, so a slow phase is seen in every CI log.
PHASE="" PHASE_T=$SECONDS PHASE_TIMES=()
phase() {
  [ -n "$PHASE" ] && PHASE_TIMES+=("$(printf '%5ds  %s' $((SECONDS - PHASE_T)) "$PHASE")")
  PHASE="$1" PHASE_T=$SECONDS
  echo "== $1"
}
phase_report() {
  local rc=$?
  [ -n "$PHASE" ] && PHASE_TIMES+=("$(printf '%5ds  %s' $((SECONDS - PHASE_T)) "$PHASE")")
  echo "== phase times (total ${SECONDS}s, load $(cut -d" " -f1-3 /proc/loadavg 2>/dev/null))"
  printf '%s\n' "${PHASE_TIMES[@]}"
  return $rc
}
trap phase_report EXIT

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  phase "installing redis-server and redis-tools (Debian packages)"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server redis-tools >/dev/null
fi
redis-server --version

# The dashboard's browser test drives a real headless Chromium (Debian's package).
if ! command -v chromium >/dev/null 2>&1; then
  phase "installing chromium (Debian package) for the dashboard's browser test"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

# python3 runs the Python target (gen/plugins/python, declared in emqgen.yaml)
# and the Python test plugin (gen/plugin/testdata/echo-py); the Python SDK's
# checks need its venv module (Debian's python3-venv).
if ! command -v python3 >/dev/null 2>&1; then
  phase "installing python3 (Debian package)"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3 >/dev/null
fi
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  phase "installing python3-venv (Debian package) for the Python SDK's virtual environment"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
fi

# The TypeScript SDK is installed and built first: emqgen check reads its
# public API with its tsc when the baseline release records one, and the
# root module's tests run it (internal/chaos's interop scenario runs its
# chaos worker and driver under node; the TypeScript API gate's test).
phase "TypeScript SDK (sdk/ts): npm ci, tsc (before check and the root module's tests, which run it)"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "node and npm are needed for sdk/ts (Node 20 or later: apt-get install nodejs npm)"; exit 1
fi
(
  cd sdk/ts
  npm ci --no-audit --no-fund --loglevel=error
  npx --no-install tsc -p tsconfig.json
)

# The Python SDK's virtual environment is made before the root module's tests
# too: internal/chaos's interop scenario runs its chaos worker and driver
# (sdk/python/chaos) in it, and the conformance suite its testee.
phase "Python SDK (sdk/python): virtual environment with the locked packages (before the root module's tests, which run it)"
(
  cd sdk/python
  [ -x .venv/bin/python ] || python3 -m venv .venv
  # requirements-dev.lock pins every package with its hashes (uv pip compile --generate-hashes)
  .venv/bin/python -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r requirements-dev.lock
)

phase "generated files up to date (emqgen gen -check)"
go run ./cmd/emqgen gen -check

phase "protocol gate against the newest frozen release (emqgen check)"
go run ./cmd/emqgen check

phase "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

phase "go vet (generator module, SDK module)"
go vet ./...
(cd sdk/go && go vet ./...)

# The install steps of the benchmark's peers (bench/node's npm lockfile,
# arq and RQ into bench/python/.venv) run before the test groups.
phase "benchmark peers: bench/node (npm ci), bench/python (arq and RQ from the hashed lock)"
(cd bench/node && npm ci --no-audit --no-fund --loglevel=error)
bench/python/setup.sh

# The test groups below run beside each other, at most EMQ_TEST_JOBS at a
# time (default 3; 1 runs them one after another), longest first. Most of
# their time is spent waiting on servers, child processes and paced
# loads, not on both cores. Each writes its own log, printed whole when it
# ends; every group runs to its end, and the suite fails when any failed.
# A group must not write what another reads: the TypeScript build is
# made above and rebuilt by nothing below (the conformance testee's build
# is a no-op on an up-to-date dist/), the Python venv likewise.

# internal/chaos's mixed-fleet scenario builds its old side from the frozen
# 2.2.1 release's sdk/go in git history: the clone must not be shallow.
group_root() { # go test: the generator, governance and tools (root module)
  go test -count=1 "$@" ./...
}
group_sdk_go() { # go test: the Go SDK (sdk/go, its own module)
  cd sdk/go && go test -count=1 "$@" ./...
}
group_ts() { # TypeScript SDK (sdk/ts): prettier --check, node --test
  cd sdk/ts
  npx --no-install prettier --check .
  # the TypeScript the target writes for every golden case is prettier-clean too
  npx --no-install prettier --check --ignore-path /dev/null ../../golden/cases/*/out/sdk/ts
  node --test --test-concurrency=1 dist/test/
}
group_python() { # Python SDK (sdk/python): ruff format --check, ruff check, mypy --strict, pytest
  cd sdk/python
  .venv/bin/ruff format --check .
  .venv/bin/ruff check .
  .venv/bin/mypy
  .venv/bin/pytest -q -p no:cacheprovider
  # the plugin itself (gen/plugins/python, standard library only) is ruff-clean and type-checks
  .venv/bin/ruff format --check ../../gen/plugins/python
  .venv/bin/ruff check ../../gen/plugins/python
  .venv/bin/mypy --strict --no-error-summary ../../gen/plugins/python/main.py
  # the Python the plugin writes for every golden case is ruff-clean and type-checks too
  .venv/bin/ruff format --check ../../golden/cases/*/out/sdk/python
  .venv/bin/ruff check ../../golden/cases/*/out/sdk/python
  for d in ../../golden/cases/*/out/sdk/python/src/echomq/_gen; do
    .venv/bin/mypy --strict --no-error-summary "$d"
  done
}
group_dashboard() { # the dashboard (dashboard/, its own module on the public SDK): vet and tests, the browser test in headless Chromium
  cd dashboard
  go vet ./...
  go test -count=1 "$@" ./...
  # its load benchmark, small: no KEYS, no command of 10 ms or more, no failed page (timings reported, not judged)
  go run ./cmd/dashbench -jobs 20000 -clients 20 -loads 5 -max-p99 0
}
group_exporters() { # metrics exporters (exporters/prometheus, exporters/otel: modules of their own): vet and tests
  (cd exporters/prometheus && go vet ./... && go test -count=1 "$@" ./...)
  (cd exporters/otel && go vet ./... && go test -count=1 "$@" ./...)
}
group_conformance() { # conformance suite: every language of conformance/languages.json against its own redis-server, wire traces compared
  go run ./cmd/emqconform -trace
}
group_bench() { # benchmark smoke test (bench/ is its own module: Go SDK vs asynq, TypeScript SDK vs BullMQ, Python SDK vs arq and RQ, quick mode)
  cd bench && go vet ./... && go test -count=1 ./...
}

phase "test groups, ${EMQ_TEST_JOBS:-3} at a time (each group's log follows when it ends)"
GROUP_LOGS=$(mktemp -d)
declare -A GROUP_PID=() GROUP_T0=()
GROUP_FAILED=()
group_done() { # group_done NAME STATUS: prints the group's log and its verdict
  local name=$1 rc=$2 took=$((SECONDS - GROUP_T0[$1])) cpu
  cpu=$(awk 'NR == 2 { u = $1; s = $2; sub(/m/, " ", u); sub(/s$/, "", u); sub(/m/, " ", s); sub(/s$/, "", s); split(u, a, " "); split(s, b, " "); printf "%d", a[1] * 60 + a[2] + b[1] * 60 + b[2] }' "$GROUP_LOGS/$name.cpu" 2>/dev/null || echo "?")
  PHASE_TIMES+=("$(printf '%5ds  group %s (CPU %ss)%s' "$took" "$name" "$cpu" "$([ "$rc" -eq 0 ] || echo " (FAILED, exit $rc)")")")
  echo "== group $name: $([ "$rc" -eq 0 ] && echo passed || echo "FAILED (exit $rc)") in ${took}s"
  sed 's/^/  | /' "$GROUP_LOGS/$name.log"
  [ "$rc" -eq 0 ] || GROUP_FAILED+=("$name")
}
group_wait() { # waits for one running group to end
  local pid rc=0 name
  wait -n -p pid "${GROUP_PID[@]}" || rc=$?
  for name in "${!GROUP_PID[@]}"; do
    if [ "${GROUP_PID[$name]}" = "$pid" ]; then
      unset "GROUP_PID[$name]"
      group_done "$name" "$rc"
    fi
  done
}
for name in root sdk_go python ts bench conformance dashboard exporters; do
  while [ "${#GROUP_PID[@]}" -ge "${EMQ_TEST_JOBS:-3}" ]; do group_wait; done
  echo "== group $name: started"
  GROUP_T0[$name]=$SECONDS
  # times, on the subshell's exit: the CPU its children used (user, system)
  (trap 'times > "$GROUP_LOGS/$name.cpu"' EXIT; set -e; "group_$name" "$@"; true) > "$GROUP_LOGS/$name.log" 2>&1 &
  GROUP_PID[$name]=$!
done
while [ "${#GROUP_PID[@]}" -gt 0 ]; do group_wait; done
rm -rf "$GROUP_LOGS"
if [ "${#GROUP_FAILED[@]}" -gt 0 ]; then
  echo "== FAILED: ${GROUP_FAILED[*]}"
  exit 1
fi
echo "== every test group passed"
