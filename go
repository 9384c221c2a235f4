#!/usr/bin/env bash
# rocmlab's one entry point on a fresh Debian 12 machine (or a ROCm container).
#   ./go lab         set up what is missing, then start JupyterLab on labs/
#   ./go test        set up what is missing, then run the whole test suite
#   ./go preflight   set up, then run every lab headless (the instructor's check)
#   ./go setup       only set up
# Set-up steps live in scripts/setup/NN-*.sh and are idempotent: a second run is quick.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
cmd=${1:-lab}; shift || true

setup() {
  for step in scripts/setup/[0-9]*.sh; do
    echo "==> $step"
    bash "$step"
  done
}

case "$cmd" in
  setup) setup ;;
  lab) setup; exec .venv/bin/rocmlab lab "$@" ;;
  preflight) setup; exec .venv/bin/rocmlab preflight "$@" ;;
  test)
    setup
    export ROCMLAB_QUICK=1
    set +e
    .venv/bin/python -m pytest "$@"
    rc=$?
    set -e
    # pytest exits 5 when it collected no test: that is a broken suite, not a pass.
    if [ "$rc" -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi
    exit "$rc" ;;
  *) echo "usage: ./go lab|test|preflight|setup [args...]" >&2; exit 2 ;;
esac
