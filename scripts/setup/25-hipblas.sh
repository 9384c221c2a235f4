#!/usr/bin/env bash
# hipBLAS for the SGEMM exercise: Debian 12 has none. Unpack (never install) trixie's hipBLAS 5.5
# headers and library, so the exercise compiles and links offline. rocBLAS (which hipBLAS calls at run
# time) is not unpacked: the binary links (--allow-shlib-undefined) but runs only on a ROCm install.
# Result: $ROCMLAB_HOME/hipblas-5.5/usr/include/hipblas/hipblas.h and .../lib/x86_64-linux-gnu/libhipblas.so
set -euo pipefail
home=${ROCMLAB_HOME:-$HOME/.cache/rocmlab}
dest=$home/hipblas-5.5
if [ -f "$dest/usr/include/hipblas/hipblas.h" ] || [ -f /opt/rocm/include/hipblas/hipblas.h ]; then
  echo "hipBLAS headers: present"; exit 0
fi
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/lists/partial" "$dest"
echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main' > "$W/sources.list"
o="-o Dir::Etc::SourceList=$W/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$W/lists -o Debug::NoLocking=1"
if ! (apt-get $o update -qq && cd "$W" && apt-get $o download libhipblas-dev libhipblas0 >/dev/null 2>&1); then
  echo "warning: could not fetch trixie's hipBLAS; the sgemm-hipblas exercise's compile check will be skipped" >&2
  exit 0
fi
for deb in "$W"/*.deb; do dpkg -x "$deb" "$dest"; done
test -f "$dest/usr/include/hipblas/hipblas.h"
echo "hipBLAS 5.5: unpacked to $dest"
