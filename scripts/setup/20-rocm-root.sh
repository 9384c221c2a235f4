#!/usr/bin/env bash
# The offline AMD toolchain: ROCm 7.2.4 (Debian experimental's packages) in its own root file system,
# so the host's / stays as it is (those binaries need a newer glibc than Debian 12's).
#   ROOT = $ROCMLAB_ROCM_ROOT, else $ROCMLAB_HOME/rocm-7.2.4, else ~/.cache/rocmlab/rocm-7.2.4
# It holds hipcc, clang-22, the HIP 7.2 headers, the device libraries, rocPRIM/rocThrust/hipCUB,
# hipify-perl, rocminfo, and hipBLAS/hipBLASLt headers with only the shared libraries needed to LINK
# (unpacked with dpkg -x; the multi-GB GPU kernel data of rocBLAS/hipBLASLt is never fetched).
# rocmlab compiles inside it with bubblewrap: ROOT becomes / read-only, the build folder is bound in.
# ROOT/.rocmlab-ready is written last; a second run sees it and returns at once.
set -euo pipefail
version=7.2.4
home=${ROCMLAB_HOME:-$HOME/.cache/rocmlab}
root=${ROCMLAB_ROCM_ROOT:-$home/rocm-$version}
stamp=$root/.rocmlab-ready
mirror=${ROCMLAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ -f "$stamp" ] && grep -q "^rocm $version\$" "$stamp"; then
  echo "ROCm $version root: present in $root"; exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  cat >&2 <<MSG
error: the offline ROCm $version root is missing ($root), and building it needs root
       (debootstrap and chroot). Either run this script as root:
         sudo ROCMLAB_HOME=$home bash $0
       or let an administrator build it once and point rocmlab at it:
         sudo ROCMLAB_ROCM_ROOT=/opt/rocmlab/rocm-$version bash $0
         export ROCMLAB_ROCM_ROOT=/opt/rocmlab/rocm-$version
       Compiling inside the root afterwards needs no root (bubblewrap with user namespaces).
       On an AMD machine with ROCm installed none of this is needed: rocmlab uses its hipcc.
MSG
  exit 1
fi
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
