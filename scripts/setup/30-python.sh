#!/usr/bin/env bash
# The Python environment in .venv (REQUIRED: set-up stops here with the fix if it cannot be made).
# torch is installed first and never replaced:
#  - where this Python already has a torch (a ROCm PyTorch image, AMD Developer Cloud's JupyterLab image, an
#    NVIDIA image, a conda env), .venv sees it: --system-site-packages, and when that Python is itself a venv or
#    a conda env (whose packages --system-site-packages would not reach), a .pth file naming its site-packages;
#  - elsewhere the pinned CPU wheel (torch==2.13.0) is installed. An unpinned "torch" would pull a CUDA build.
# ./go lab and ./go preflight install rocmlab alone; ./go test adds the [dev] extra (pytest, playwright, the hub...).
# Without a package index, point pip at a folder of wheels: PIP_NO_INDEX=1 PIP_FIND_LINKS=/path/to/wheels ./go lab
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/../.."
py=${PYTHON:-python3}

if ! command -v "$py" >/dev/null 2>&1; then
  echo "error: $py not found: install Python 3.10 or newer (apt-get install -y python3 python3-venv), or set PYTHON" >&2
  exit 1
fi
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "error: $("$py" --version 2>&1) is too old: rocmlab needs Python 3.10 or newer (set PYTHON=/path/to/python3.10+)" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  # no ensurepip (Debian/Ubuntu without python3-venv): the venv borrows this Python's pip
  nopip=()
  "$py" -c 'import ensurepip' 2>/dev/null || nopip=(--without-pip)
  if [ ${#nopip[@]} -gt 0 ] && ! "$py" -c 'import pip' 2>/dev/null; then
    echo "error: $py has neither ensurepip nor pip, so it cannot make .venv: apt-get install -y python3-venv (Ubuntu: python3.X-venv), or PYTHON=/path/to/another/python3" >&2
    exit 1
  fi
  if [ ${#nopip[@]} -gt 0 ] || "$py" -c 'import torch' 2>/dev/null; then
    "$py" -m venv --system-site-packages "${nopip[@]}" .venv     # reuse this Python's torch build (and pip)
    # when that Python is itself a venv, its packages are not "system" packages of the new venv: name them
    parent=$("$py" -c 'import site, sys; print("\n".join(site.getsitepackages()) if sys.prefix != sys.base_prefix else "")')
    [ ${#nopip[@]} -gt 0 ] && echo "python env: .venv made without its own pip (no ensurepip here): it uses $py's pip"
    if [ -n "$parent" ]; then
      pth=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_rocmlab_parent_env.pth
      printf '%s\n' "$parent" > "$pth"
      echo "python env: .venv sees the packages of the venv $("$py" -c 'import sys; print(sys.prefix)') (its torch kept)"
    fi
  else
    "$py" -m venv .venv
  fi
fi
# what the command needs: the labs (lab), the quick tier's test tools (quick: ./go test), the whole suite's (test)
case "$setup_for" in
  test) extra="[dev,whole]"; stamp=.venv/.rocmlab-installed-whole ;;
  quick) extra="[dev]"; stamp=.venv/.rocmlab-installed-dev ;;
  *) extra=""; stamp=.venv/.rocmlab-installed ;;
esac
if [ -f "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ] && .venv/bin/python -c 'import rocmlab' 2>/dev/null; then
  echo "python env: present in .venv (rocmlab$extra installed)"; exit 0
fi
pip=(.venv/bin/python -m pip -q --disable-pip-version-check)
if ! .venv/bin/python -c 'import torch' 2>/dev/null; then
  "${pip[@]}" install "torch==${ROCMLAB_TORCH_VERSION:-2.13.0}"
fi
torch_before=$(.venv/bin/python -c 'import torch; print(torch.__version__)')
# the build back end goes into .venv itself and the install uses it there (no isolated build environment):
# offline (PIP_NO_INDEX) its own needs (packaging, pathspec, pluggy) are then met by what the machine has
.venv/bin/python -c 'import hatchling, editables' 2>/dev/null || "${pip[@]}" install "hatchling>=1.21" editables
"${pip[@]}" install --no-build-isolation -e ".$extra"
torch_after=$(.venv/bin/python -c 'import torch; print(torch.__version__)')
if [ "$torch_before" != "$torch_after" ]; then
  echo "error: installing rocmlab replaced torch $torch_before with $torch_after: report this as a rocmlab bug" >&2
  exit 1
fi
touch "$stamp"
[ "$setup_for" != lab ] && touch .venv/.rocmlab-installed    # [dev] includes what the labs need
[ "$setup_for" = test ] && touch .venv/.rocmlab-installed-dev
echo "python env: rocmlab $(.venv/bin/python -c 'import rocmlab; print(rocmlab.__version__)') with torch $torch_after"
