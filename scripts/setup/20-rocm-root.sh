#!/usr/bin/env bash
# The offline AMD toolchain: ROCm 7.2.4 (Debian experimental's packages) in its own root file system,
# so the host's / stays as it is (those binaries need a newer glibc than Debian 12's).
#   ROOT = $ROCMLAB_ROCM_ROOT, else $ROCMLAB_HOME/rocm-7.2.4, else ~/.cache/rocmlab/rocm-7.2.4
# It holds hipcc, clang-22, the HIP 7.2 headers, the device libraries, rocPRIM/rocThrust/hipCUB,
# hipify-perl, rocminfo, and hipBLAS/hipBLASLt headers with only the shared libraries needed to LINK
# (unpacked with dpkg -x; the multi-GB GPU kernel data of rocBLAS/hipBLASLt is never fetched).
# rocmlab compiles inside it with bubblewrap: ROOT becomes / read-only, the build folder is bound in.
# ROOT/.rocmlab-ready is written last; a second run sees it and returns at once.
#
# Only for machines with no AMD compiler: an installed ROCm 6+ (ROCM_PATH, /opt/rocm*, a hipcc on PATH) is
# found and used instead (the same rule as rocmlab itself: python -m rocmlab.hip.toolchain). The root is an
# OPTIONAL part: when it cannot be built (no root rights, no network), set-up says what is lost and goes on.
#   20-rocm-root.sh            decide, and build if needed
#   20-rocm-root.sh --needed   exit 0 when this machine needs the root built (no AMD compiler, no root yet)
#   20-rocm-root.sh --build    build it (what the default mode runs; fails loudly)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
version=7.2.4
home=${ROCMLAB_HOME:-$HOME/.cache/rocmlab}
root=${ROCMLAB_ROCM_ROOT:-$home/rocm-$version}
stamp=$root/.rocmlab-ready
mirror=${ROCMLAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
ready() { [ -f "$stamp" ] && grep -q "^rocm $version\$" "$stamp"; }

if [ "${1:-}" != --build ]; then
  installed=$(PYTHONPATH="$here/../.." "${PYTHON:-python3}" -m rocmlab.hip.toolchain 2>/dev/null) || installed=""
  if [ "${1:-}" = --needed ]; then [ -z "$installed" ] && ! ready; exit $?; fi
  if [ -n "$installed" ]; then echo "AMD compiler: the installed $installed; the offline root is not needed"; exit 0; fi
  if ready; then echo "ROCm $version root: present in $root"; exit 0; fi
  lost="compiling HIP for MI300X (gfx942) on this machine: HIP cells, the inspector and the grader's compile checks say so with the fix, the rest of each lab runs"
  if [ "$(id -u)" -ne 0 ]; then
    optional_missing "the offline ROCm $version root ($root; building it needs root: debootstrap and chroot)" "$lost" \
      "sudo ROCMLAB_HOME=$home bash $0, or let an administrator build it once (sudo ROCMLAB_ROCM_ROOT=/opt/rocmlab/rocm-$version bash $0) and export ROCMLAB_ROCM_ROOT=/opt/rocmlab/rocm-$version; compiling in it needs no root"
    exit 0
  fi
  for tool in debootstrap bwrap; do
    if ! command -v "$tool" >/dev/null; then
      optional_missing "the offline ROCm $version root ($tool is not installed)" "$lost" "apt-get install -y debootstrap bubblewrap, then ./go setup"
      exit 0
    fi
  done
  log=$(mktemp)
  if bash "$0" --build 2>&1 | tee "$log"; [ "${PIPESTATUS[0]}" -eq 0 ]; then rm -f "$log"; exit 0; fi
  optional_missing "the offline ROCm $version root (its build failed: $(grep -v '^\s*$' "$log" | tail -n 1 | cut -c1-160))" "$lost" \
    "it needs the network to Debian's archive (ROCMLAB_DEBIAN_MIRROR for a mirror); rerun ./go setup once it is reachable"
  rm -rf "$log" "$root.partial"
  exit 0
fi

if ready; then echo "ROCm $version root: present in $root"; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then echo "error: building the ROCm $version root needs root (debootstrap and chroot)" >&2; exit 1; fi
for tool in debootstrap bwrap; do
  command -v "$tool" >/dev/null || { echo "error: $tool is missing: run scripts/setup/10-system.sh (apt-get install -y debootstrap bubblewrap)" >&2; exit 1; }
done

start=$(date +%s)
work=$root.partial
rm -rf "$work"
mkdir -p "$(dirname "$root")"
echo "building the ROCm $version root in $work (about a minute and 2 GB)"
debootstrap --variant=minbase sid "$work" "$mirror" >/dev/null
echo "deb $mirror experimental main" > "$work/etc/apt/sources.list.d/experimental.list"
cp /etc/resolv.conf "$work/etc/resolv.conf" 2>/dev/null || true
in_root() { chroot "$work" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 LANG=C.UTF-8 "$@"; }
apt_o=(-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -o Dpkg::Use-Pty=0)
in_root apt-get "${apt_o[@]}" update -qq

# Installed: the compiler, headers, device libraries, header-only libraries, tools.
pkgs=(hipcc libamdhip64-dev rocm-device-libs-22 librocprim-dev librocthrust-dev libhipcub-dev hipify-perl rocminfo)
# Unpacked only (headers + the .so files a link needs): hipBLAS and hipBLASLt.
unpack=(libhipblas-dev libhipblas-common-dev libhipblas3 libhipblaslt-dev libhipblaslt1)
pinned=()
for p in "${pkgs[@]}" "${unpack[@]}"; do
  # the 7.2.4 build, from experimental (most) or sid (rocminfo)
  v=$(in_root apt-cache madison "$p" | awk -F'|' -v want="$version" '{gsub(/ /,"",$2)} index($2, want) == 1 {print $2; exit}')
  case "$v" in
    "$version"*) pinned+=("$p=$v") ;;
    *) echo "error: Debian sid/experimental has no $p $version (found '${v:-nothing}'): the pin in $0 needs updating" >&2; exit 1 ;;
  esac
done
n=${#pkgs[@]}
in_root apt-get "${apt_o[@]}" install -y -qq -t experimental "${pinned[@]:0:$n}" >/dev/null
debs=$work/var/cache/rocmlab-debs
mkdir -p "$debs" && chmod 777 "$debs"
in_root sh -c "cd /var/cache/rocmlab-debs && apt-get ${apt_o[*]} download ${pinned[*]:$n}" >/dev/null
# headers and shared libraries only: the GPU kernel data (hipblaslt/library/*.hsaco, ~870 MB) stays out
for deb in "$debs"/*.deb; do
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" --exclude='*/library/*' --exclude='./usr/share/doc/*'
done
rm -rf "$debs"
in_root apt-get clean

# Check it the way rocmlab uses it: bubblewrap, the root's folders read-only, a build folder bound in.
check=$(mktemp -d)
cat > "$check/t.hip" <<'HIP'
#include <hip/hip_runtime.h>
__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }
int main() { return 0; }
HIP
binds=()
for e in "$work"/*; do
  n=$(basename "$e")
  case $n in proc|dev|tmp|sys|run) continue ;; esac
  if [ -L "$e" ]; then binds+=(--symlink "$(readlink "$e")" "/$n"); elif [ -d "$e" ]; then binds+=(--ro-bind "$e" "/$n"); fi
done
if ! bwrap "${binds[@]}" --dev /dev --proc /proc --tmpfs /tmp --bind "$check" "$check" --remount-ro / --chdir "$check" \
     --unshare-all --die-with-parent hipcc --offload-arch=gfx942 --offload-arch=gfx950 \
     -Rpass-analysis=kernel-resource-usage t.hip -o t 2>"$check/log" || ! grep -q "VGPRs" "$check/log"; then
  cat "$check/log" >&2; rm -rf "$check"
  echo "error: the ROCm $version root does not compile a kernel for gfx942 and gfx950" >&2; exit 1
fi
rm -rf "$check"
hipcc_v=$(sed -n 's/^HIP_VERSION_\(MAJOR\|MINOR\|PATCH\)=//p' "$work/usr/share/hip/version" 2>/dev/null | paste -sd.)
{ echo "rocm $version"; echo "hip $hipcc_v"; printf '%s\n' "${pinned[@]}"; echo "built $(date -u +%FT%TZ) in $(( $(date +%s) - start )) s"; } > "$work/.rocmlab-ready.tmp"
rm -rf "$root"
mv "$work" "$root"
mv "$root/.rocmlab-ready.tmp" "$stamp"
echo "ROCm $version root: ready in $root ($(( $(date +%s) - start )) s, $(du -sh "$root" | cut -f1))"
