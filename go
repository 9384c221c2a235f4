#!/usr/bin/env bash
# rocmlab's one entry point: Debian 12/13, Ubuntu 22.04/24.04 (AMD's ROCm images and containers), a conda or
# venv Python, as root or as a user (README, "Set up and run" has a row per platform).
#   ./go lab         set up what the labs need, then start JupyterLab on labs/
#   ./go test        set up what the quick tier needs, then run it (the contributor's check: every room, minutes)
#   ./go test all    set up what the whole suite needs (browsers, vLLM, hub), then run every test (CI: .ci/run)
#   ./go preflight   set up what the labs need, then run every lab headless (the instructor's check)
#   ./go setup       only set up (for the whole test suite too)
#   ./go docs        build the documentation site (scripts/docs.sh)
# Set-up steps live in scripts/setup/NN-*.sh and are idempotent: a second run is quick. Each decides by what is
# present and what the command needs; a part that is optional and cannot be installed is reported at the end
# (what is lost, and the fix for this platform) and never stops ./go lab or ./go preflight.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
cmd=${1:-lab}; shift || true

setup() {   # $1: lab | test
  export ROCMLAB_SETUP_FOR=$1
  local t0 log step
  t0=$(date +%s)
  log=$(mktemp)
  for step in scripts/setup/[0-9]*.sh; do
    echo "==> $step"
    bash "$step" 2>&1 | tee -a "$log"
    if [ "${PIPESTATUS[0]}" -ne 0 ]; then
      echo "set-up stopped at $step (a required part; its message above names the fix)" >&2
      rm -f "$log"; exit 1
    fi
  done
  echo "==> set-up for '$1' done in $(( $(date +%s) - t0 )) s"
  if grep -q '^rocmlab-setup: optional part missing: ' "$log"; then
    echo "Optional parts missing (everything else works; nothing was skipped silently):"
    sed -n 's/^rocmlab-setup: optional part missing: /  - /p' "$log" | sed 's/ -- loses: /\n      loses: /; s/ -- fix: /\n      fix:   /'
  fi
  rm -f "$log"
}

case "$cmd" in
  setup) setup test ;;
  lab) setup lab; exec .venv/bin/rocmlab lab "$@" ;;
  preflight) setup lab; exec .venv/bin/rocmlab preflight "$@" ;;
  test)
    # The tier rule is the test's folder (tests/conftest.py, tier_of; tests/README.md): ./go test runs the quick
    # tier, ./go test all every test. Any other arguments go to pytest (./go test tests/sim -x).
    tier=quick
    if [ "${1:-}" = all ]; then tier=all; shift; fi
    setup test
    export ROCMLAB_QUICK=1
    # independent tests run in parallel (pytest-xdist): one worker per core and one more (a test often waits on
    # a server, a browser or a child), at most 4 (memory: the vLLM servers and browsers); tests that change the
    # machine share one worker (tests/conftest.py). ./go test -n 0 runs everything in one process; a later -n wins.
    workers=$(( $(nproc 2>/dev/null || echo 1) + 1 )); [ "$workers" -gt 4 ] && workers=4
    select=(); [ "$tier" = quick ] && select=(-m quick)
    set +e
    .venv/bin/python -m pytest -n "$workers" "${select[@]}" "$@"
    rc=$?
    set -e
    # pytest exits 5 when it collected (or selected) no test: that is a broken suite or a wrong path, not a pass.
    if [ "$rc" -eq 5 ]; then
      echo "error: pytest ran no test (none collected, or none in the $tier tier: './go test all $*' runs every tier)" >&2
      exit 1
    fi
    exit "$rc" ;;
  docs) exec bash scripts/docs.sh "$@" ;;
  *) echo "usage: ./go lab|test [all]|preflight|setup|docs [args...]" >&2; exit 2 ;;
esac
