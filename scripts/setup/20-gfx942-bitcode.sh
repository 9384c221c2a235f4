#!/usr/bin/env bash
# The MI300X target (gfx942) needs device bitcode newer than bookworm's: unpack
# (never install) Debian trixie's rocm-device-libs-17 so the system stays bookworm.
# Result: $ROCMLAB_HOME/device-libs-17/.../amdgcn/bitcode with oclc_isa_version_942.bc.
set -euo pipefail
home=${ROCMLAB_HOME:-$HOME/.cache/rocmlab}
dest=$home/device-libs-17
bitcode=$dest/usr/lib/llvm-17/lib/clang/17/amdgcn/bitcode
if [ -f "$bitcode/oclc_isa_version_942.bc" ]; then echo "gfx942 bitcode: present in $bitcode"; exit 0; fi
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/lists/partial" "$dest"
echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main' > "$W/sources.list"
o="-o Dir::Etc::SourceList=$W/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$W/lists -o Debug::NoLocking=1"
if ! (apt-get $o update -qq && cd "$W" && apt-get $o download rocm-device-libs-17 >/dev/null); then
  echo "warning: could not fetch trixie's rocm-device-libs-17; gfx942 will be unavailable offline" >&2
  echo "         (clang-15 with bookworm's device libraries still reaches gfx90a and gfx940)" >&2
  exit 0
fi
dpkg -x "$W"/rocm-device-libs-17_*.deb "$dest"
test -f "$bitcode/oclc_isa_version_942.bc"
echo "gfx942 bitcode: unpacked to $bitcode"
