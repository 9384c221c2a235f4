#!/usr/bin/env bash
# System packages, chosen by what this machine lacks and what the command needs (scripts/setup/lib.sh):
#   required for everything:  python3-venv (only when this Python cannot make a virtual environment)
#   optional for the labs:    bubblewrap (isolation of learner programs; runs the offline ROCm compiler),
#                             proot (where bubblewrap cannot run, e.g. a container: an ordinary user enters the
#                             offline ROCm root with it; root uses chroot),
#                             debootstrap (only when the offline ROCm root must be built: no AMD compiler here),
#                             binutils (c++filt: readable kernel names)
#   optional for ./go test:   chromium (the real-browser tests; Debian only: Ubuntu ships it as a snap)
# Works on Debian 12/13 and Ubuntu 22.04/24.04 (AMD's ROCm images). Without root or sudo nothing is installed:
# a missing required package stops set-up with the command to run; a missing optional one is reported.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
py=${PYTHON:-python3}
root_dir=$(cd "$here/../.." && pwd)

required=()
optional=()
if [ ! -x "$root_dir/.venv/bin/python" ] && ! "$py" -c 'import ensurepip, venv' 2>/dev/null; then
  # without ensurepip a venv can still borrow this Python's own pip (30-python.sh); without either it cannot
  if "$py" -c 'import pip, venv' 2>/dev/null; then optional+=(python3-venv); else required+=(python3-venv); fi
fi
for pkg in bubblewrap proot binutils; do deb_installed "$pkg" || optional+=("$pkg"); done
# debootstrap builds the offline ROCm root: needed only where no AMD compiler is installed and no root exists yet
if bash "$here/20-rocm-root.sh" --needed >/dev/null 2>&1; then deb_installed debootstrap || optional+=(debootstrap); fi
if [ "$setup_for" = test ]; then deb_installed chromium || optional+=(chromium); fi

if [ ${#required[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ]; then echo "system packages: all present ($(distro))"; exit 0; fi

why() {   # what is lost without a package, and its fix on this platform
  case $1 in
    bubblewrap) echo "namespace isolation of learner programs (rocmlab falls back to setpriv + rlimits, with chroot or PRoot for the offline ROCm root, and says so in every feedback and in rocmlab doctor)|apt-get install -y bubblewrap" ;;
    proot) echo "the offline ROCm root for a user who is not root where bubblewrap cannot run (a container without user namespaces): HIP cells do not compile there without it|apt-get install -y proot" ;;
    binutils) echo "readable (demangled) kernel names in the inspector|apt-get install -y binutils" ;;
    python3-venv) echo "nothing: .venv borrows this Python's pip instead of its own|apt-get install -y python3-venv" ;;
    debootstrap) echo "building the offline ROCm 7.2.4 root, so HIP cells cannot compile for MI300X on this machine|apt-get install -y debootstrap, then ./go setup" ;;
    chromium)
      if is_ubuntu; then
        echo "the real-browser tests (tests/browser, the hub's browser flow), which skip with this reason|Ubuntu has no chromium deb (only a snap, which does not run in containers): python -m playwright install chromium (needs the network), or Google Chrome's .deb; then export ROCMLAB_CHROMIUM=/path/to/chrome"
      else
        echo "the real-browser tests (tests/browser, the hub's browser flow), which skip with this reason|apt-get install -y chromium"
      fi ;;
    *) echo "?|apt-get install -y $1" ;;
  esac
}

rights=$(install_rights)
if [ "$rights" = none ] || ! command -v apt-get >/dev/null 2>&1; then
  how="no root and no passwordless sudo"
  command -v apt-get >/dev/null 2>&1 || how="no apt-get on this system"
  for p in "${optional[@]}"; do w=$(why "$p"); optional_missing "$p" "${w%%|*}" "ask an administrator: ${w#*|}"; done
  if [ ${#required[@]} -gt 0 ]; then
    echo "error: ${py} cannot make a virtual environment (the venv module or ensurepip is missing), and $how to install ${required[*]}" >&2
    echo "fix: sudo apt-get install -y ${required[*]} (Debian/Ubuntu), or run with a Python that has venv (PYTHON=/path/to/python3 ./go lab)" >&2
    exit 1
  fi
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
echo "system packages to install ($(distro)): ${required[*]} ${optional[*]}"
as_root timeout 120 apt-get update -qq >/dev/null 2>&1 || echo "note: apt-get update failed (no network or no package index?): using the package lists already on this machine"
installable=()
for p in "${required[@]}" "${optional[@]}"; do
  if [ -n "$(apt_candidate "$p")" ]; then installable+=("$p"); fi
done
if [ ${#installable[@]} -gt 0 ]; then
  # all at once; if that fails, one at a time, so that one bad package does not cost the others
  if ! as_root apt-get install -y -qq --no-install-recommends "${installable[@]}" >/dev/null 2>&1; then
    for p in "${installable[@]}"; do as_root apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || true; done
  fi
fi
for p in "${required[@]}"; do
  if ! "$py" -c 'import ensurepip, venv' 2>/dev/null; then
    echo "error: $p could not be installed (apt has no installation candidate for it, or the install failed), and $py cannot make a virtual environment without it" >&2
    echo "fix: apt-get install -y $p (Ubuntu: also python3.\$(python3 -c 'import sys; print(sys.version_info[1])')-venv), or PYTHON=/path/to/another/python3 ./go lab" >&2
    exit 1
  fi
done
for p in "${optional[@]}"; do
  if ! deb_installed "$p"; then
    w=$(why "$p")
    if [ -z "$(apt_candidate "$p")" ]; then reason="apt has no installation candidate for $p"; else reason="apt-get install $p failed"; fi
    optional_missing "$p ($reason)" "${w%%|*}" "${w#*|}"
  fi
done
echo "system packages: done"
