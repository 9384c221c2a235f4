#!/usr/bin/env bash
# System packages from Debian 12 (bookworm): Python venv support, debootstrap and bubblewrap for
# the offline ROCm root (scripts/setup/20-rocm-root.sh builds it; bubblewrap also isolates
# learner programs), binutils, and Chromium for the real-browser test. Skipped when present.
set -euo pipefail
need=()
for pkg in python3-venv debootstrap bubblewrap binutils chromium git; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -eq 0 ]; then echo "system packages: all present"; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "error: missing Debian packages: ${need[*]}" >&2
  echo "fix: run as root, or: sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
echo "installing: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
