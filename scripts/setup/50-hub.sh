#!/usr/bin/env bash
# The workshop hub's proxy for tests/hub and benchmarks/hub_load.py: configurable-http-proxy from npm
# (JupyterHub itself is pinned in pyproject's dev extra and comes with 30-python.sh).
# Needs node and npm: Debian bookworm's `nodejs` is node 18, which gets configurable-http-proxy 4.6.3;
# node 20 or newer gets 5.3.0 (which requires node >= 20). Quick and a no-op when the pinned one is there.
# Only for ./go test (tests/hub) and instructors; optional: without it the hub tests skip with this reason.
# A workshop's learners also need the offline ROCm root where every user can read it (set-up's default root is
# under root's private home): sudo ROCMLAB_ROCM_ROOT=/opt/rocmlab/rocm-7.2.4 bash scripts/setup/20-rocm-root.sh,
# then start the hub with rocm_root="/opt/rocmlab/rocm-7.2.4" (docs/teach/hub.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
if [ "$setup_for" != test ] && [ "${1:-}" != --install ]; then
  echo "workshop hub proxy: not needed for ./go $([ "$setup_for" = quick ] && echo test || echo lab) (./go test all and instructors: bash $0 --install)"; exit 0
fi
if [ "${1:-}" != --install ]; then
  if bash "$0" --install; then exit 0; fi
  optional_missing "configurable-http-proxy (the workshop hub's proxy, from npm)" "the hub tests (tests/hub) and benchmarks/hub_load.py, which skip" \
    "apt-get install -y nodejs npm; npm install -g configurable-http-proxy (see the error above)"
  exit 0
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: node and npm are missing (the workshop hub's proxy is an npm package)" >&2
    echo "fix: run as root, or: sudo apt-get install -y nodejs npm" >&2
    exit 1
  fi
  echo "installing: nodejs npm (Debian)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -ge 20 ]; then want=5.3.0; elif [ "$major" -ge 12 ]; then want=4.6.3; else
  echo "error: node $(node --version) is too old for configurable-http-proxy: install node 18 or newer" >&2
  exit 1
fi
have=$(configurable-http-proxy --version 2>/dev/null || true)
if [ "$have" = "$want" ]; then echo "configurable-http-proxy $want (node $(node --version)): present"; exit 0; fi
if [ "$(id -u)" -ne 0 ] && [ ! -w "$(npm prefix -g)" ]; then
  echo "error: configurable-http-proxy $want is missing and npm's global folder is not writable" >&2
  echo "fix: run as root, or: npm install -g --prefix ~/.local configurable-http-proxy@$want (and put ~/.local/bin on PATH)" >&2
  exit 1
fi
echo "installing: configurable-http-proxy@$want (node $(node --version))"
npm install -g --no-fund --no-audit --loglevel=error "configurable-http-proxy@$want"
configurable-http-proxy --version
