#!/usr/bin/env bash
# The offline AMD toolchain: ROCm 7.2.4 (Debian experimental's packages) in its own root file system,
# so the host's / stays as it is (those binaries need a newer glibc than Debian 12's).
#   ROOT = $ROCMLAB_ROCM_ROOT, else $ROCMLAB_HOME/rocm-7.2.4, else ~/.cache/rocmlab/rocm-7.2.4
# It holds hipcc, clang-22, the HIP 7.2 headers, the device libraries, rocPRIM/rocThrust/hipCUB,
# hipify-perl, rocminfo, and hipBLAS/hipBLASLt headers with only the shared libraries needed to LINK
# (unpacked with dpkg -x; the multi-GB GPU kernel data of rocBLAS/hipBLASLt is never fetched), and the
# libraries real CUDA programs link against (hipRAND/rocRAND, hipSOLVER/rocSOLVER, hipFFT/rocFFT,
# hipSPARSE/rocSPARSE, rocBLAS, clang's OpenMP): headers, and for the large back ends only a link stub
# (llvm-ifs: their exported symbols, without the GPU code objects they carry). A root built before the
# libraries were added is upgraded in place (the stamp's "link-libraries" line says it was).
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
libs_stamp="link-libraries 1"
ready() { [ -f "$stamp" ] && grep -q "^rocm $version\$" "$stamp" && grep -qxF "$libs_stamp" "$stamp"; }

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

apt_o=(-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -o Dpkg::Use-Pty=0)
in_dir() { local d=$1; shift; chroot "$d" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 LANG=C.UTF-8 "$@"; }
# the 7.2.4 build of package $2 in root $1 (experimental or sid), or exit with the fix
pin_of() {
  local v
  v=$(in_dir "$1" apt-cache madison "$2" | awk -F'|' -v want="$version" '{gsub(/ /,"",$2)} index($2, want) == 1 {print $2; exit}')
  case "$v" in
    "$version"*) echo "$2=$v" ;;
    *) echo "error: Debian sid/experimental has no $2 $version (found '${v:-nothing}'): the pin in $0 needs updating" >&2; return 1 ;;
  esac
}
# Unpack packages into root $1 (headers and shared libraries; GPU kernel data folders and docs stay out).
unpack_into() {
  local d=$1; shift
  local debs=$d/var/cache/rocmlab-debs
  mkdir -p "$debs" && chmod 777 "$debs"
  in_dir "$d" sh -c "cd /var/cache/rocmlab-debs && apt-get ${apt_o[*]} download $*" >/dev/null
  for deb in "$debs"/*.deb; do
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$d" --exclude='*/library/*' --exclude='./usr/share/doc/*'
  done
  rm -rf "$debs"
}
# What CUDA programs link against, as link-only libraries in root $1: hipRAND, hipSOLVER, hipFFT, hipSPARSE
# and their roc* back ends, rocBLAS (hipBLAS links against it), clang's OpenMP (omp.h + libomp).
link_libs=(libhiprand-dev libhiprand1 librocrand-dev librocrand1 libhipsolver-dev libhipsolver1 librocsolver-dev
           librocsolver0 libhipfft-dev libhipfft0 librocfft-dev librocfft0 libhipsparse-dev libhipsparse4
           librocsparse-dev librocsparse1 librocblas-dev librocblas5)
add_link_libraries() {
  local d=$1 t0 p pins=() clang_v so
  t0=$(date +%s)
  for p in "${link_libs[@]}"; do pins+=("$(pin_of "$d" "$p")") || exit 1; done
  # OpenMP: the omp.h of the root's clang (same version as clang-22), and libomp.so.5 (any newer build)
  clang_v=$(in_dir "$d" dpkg-query -W -f='${Version}' clang-22)
  pins+=("libomp-22-dev=$clang_v" libomp5)
  unpack_into "$d" "${pins[@]}"
  # A back end larger than 32 MB is mostly GPU code objects: keep only a link stub (its exported symbols).
  for so in "$d"/usr/lib/x86_64-linux-gnu/libroc{blas,solver,sparse,rand}.so.*.*; do
    [ -f "$so" ] && [ ! -L "$so" ] && [ "$(stat -c %s "$so")" -gt $((32 << 20)) ] || continue
    in_dir "$d" llvm-ifs-22 --input-format=ELF --strip-undefined --strip-needed \
      --output-elf="${so#"$d"}.stub" "${so#"$d"}"
    mv "$so.stub" "$so"
  done
  echo "link libraries added to $d in $(( $(date +%s) - t0 )) s (hipRAND, hipSOLVER, hipFFT, hipSPARSE, rocBLAS, OpenMP)"
}

# Check root $1 the way rocmlab uses it: bubblewrap, the root's folders read-only, a build folder bound in;
# a kernel compiles for gfx942 and gfx950, and a program links against every library added above.
check_root() {
  local d=$1 check e n binds=()
  check=$(mktemp -d)
  cat > "$check/t.hip" <<'HIP'
#include <hip/hip_runtime.h>
__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }
int main() { return 0; }
HIP
  cat > "$check/l.hip" <<'HIP'
#include <hip/hip_runtime.h>
#include <hipblas/hipblas.h>
#include <hipsolver/hipsolver.h>
#include <hipsparse/hipsparse.h>
#include <hipfft/hipfft.h>
#include <hiprand/hiprand.h>
#include <omp.h>
int main() {
  hipblasHandle_t b; hipblasCreate(&b); hipsolverDnHandle_t s; hipsolverDnCreate(&s);
  hipsparseHandle_t p; hipsparseCreate(&p); hipfftHandle f; hipfftPlan1d(&f, 8, HIPFFT_C2C, 1);
  hiprandGenerator_t g; hiprandCreateGenerator(&g, HIPRAND_RNG_PSEUDO_DEFAULT);
  return omp_get_max_threads() > 0 ? 0 : 1;
}
HIP
  for e in "$d"/*; do
    n=$(basename "$e")
    case $n in proc|dev|tmp|sys|run) continue ;; esac
    if [ -L "$e" ]; then binds+=(--symlink "$(readlink "$e")" "/$n"); elif [ -d "$e" ]; then binds+=(--ro-bind "$e" "/$n"); fi
  done
  in_bwrap() { bwrap "${binds[@]}" --dev /dev --proc /proc --tmpfs /tmp --bind "$check" "$check" --remount-ro / \
                 --chdir "$check" --unshare-all --die-with-parent "$@"; }
  if ! in_bwrap hipcc --offload-arch=gfx942 --offload-arch=gfx950 -Rpass-analysis=kernel-resource-usage t.hip -o t \
       2>"$check/log" || ! grep -q "VGPRs" "$check/log"; then
    cat "$check/log" >&2; rm -rf "$check"
    echo "error: the ROCm $version root in $d does not compile a kernel for gfx942 and gfx950" >&2; exit 1
  fi
  if ! in_bwrap hipcc --offload-arch=gfx942 -fopenmp l.hip -o l -lhipblas -lhipsolver -lhipsparse -lhipfft -lhiprand \
       2>"$check/log"; then
    cat "$check/log" >&2; rm -rf "$check"
    echo "error: the ROCm $version root in $d does not link against its hip* libraries and OpenMP" >&2; exit 1
  fi
  rm -rf "$check"
}

# A root built before the link libraries existed: add them in place, then stamp it.
if [ -f "$stamp" ] && grep -q "^rocm $version\$" "$stamp"; then
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  in_dir "$root" apt-get "${apt_o[@]}" update -qq
  add_link_libraries "$root"
  in_dir "$root" apt-get clean
  check_root "$root"
  echo "$libs_stamp" >> "$stamp"
  echo "ROCm $version root: upgraded in place in $root ($(du -sh "$root" | cut -f1))"; exit 0
fi

start=$(date +%s)
work=$root.partial
rm -rf "$work"
mkdir -p "$(dirname "$root")"
echo "building the ROCm $version root in $work (about a minute and 2 GB)"
debootstrap --variant=minbase sid "$work" "$mirror" >/dev/null
echo "deb $mirror experimental main" > "$work/etc/apt/sources.list.d/experimental.list"
cp /etc/resolv.conf "$work/etc/resolv.conf" 2>/dev/null || true
in_root() { in_dir "$work" "$@"; }
in_root apt-get "${apt_o[@]}" update -qq

# Installed: the compiler, headers, device libraries, header-only libraries, tools.
pkgs=(hipcc libamdhip64-dev rocm-device-libs-22 librocprim-dev librocthrust-dev libhipcub-dev hipify-perl rocminfo)
# Unpacked only (headers + the .so files a link needs): hipBLAS and hipBLASLt.
unpack=(libhipblas-dev libhipblas-common-dev libhipblas3 libhipblaslt-dev libhipblaslt1)
pinned=()
for p in "${pkgs[@]}" "${unpack[@]}"; do
  # the 7.2.4 build, from experimental (most) or sid (rocminfo)
  pinned+=("$(pin_of "$work" "$p")") || exit 1
done
n=${#pkgs[@]}
in_root apt-get "${apt_o[@]}" install -y -qq -t experimental "${pinned[@]:0:$n}" >/dev/null
# headers and shared libraries only: the GPU kernel data (hipblaslt/library/*.hsaco, ~870 MB) stays out
unpack_into "$work" "${pinned[@]:$n}"
add_link_libraries "$work"
in_root apt-get clean

check_root "$work"
hipcc_v=$(sed -n 's/^HIP_VERSION_\(MAJOR\|MINOR\|PATCH\)=//p' "$work/usr/share/hip/version" 2>/dev/null | paste -sd.)
{ echo "rocm $version"; echo "hip $hipcc_v"; printf '%s\n' "${pinned[@]}"; echo "$libs_stamp"; echo "built $(date -u +%FT%TZ) in $(( $(date +%s) - start )) s"; } > "$work/.rocmlab-ready.tmp"
rm -rf "$root"
mv "$work" "$root"
mv "$root/.rocmlab-ready.tmp" "$stamp"
echo "ROCm $version root: ready in $root ($(( $(date +%s) - start )) s, $(du -sh "$root" | cut -f1))"
