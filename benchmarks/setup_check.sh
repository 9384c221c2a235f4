#!/usr/bin/env bash
# Prove the README's set-up on this machine, as a new user would: ./go lab until JupyterLab answers
# /api/status (timed), then ./go preflight (every lab headless). Writes the logs and the preflight summary.
#   bash benchmarks/setup_check.sh OUT_DIR [WHEELS_DIR [LAB_PREFIXES]]
# WHEELS_DIR: a folder of wheels for a machine without a package index (PIP_NO_INDEX=1 PIP_FIND_LINKS=...);
# LAB_PREFIXES: preflight only these labs, e.g. "00 01 02" (default: every lab).
set -uo pipefail
out=${1:?usage: bash benchmarks/setup_check.sh OUT_DIR [WHEELS_DIR]}
mkdir -p "$out"
cd "$(dirname "$0")/.."
if [ -n "${2:-}" ]; then export PIP_NO_INDEX=1 PIP_FIND_LINKS=$(cd "$2" && pwd); fi
{ echo "date: $(date -u +%FT%TZ)"; grep PRETTY_NAME /etc/os-release; echo "python3: $(command -v python3) $(python3 --version 2>&1)"
  [ -f /.dockerenv ] && echo "container: docker"; nvidia-smi -L 2>/dev/null; ls /dev/kfd 2>/dev/null; } > "$out/machine.txt"
port=8899
t0=$(date +%s.%N)
./go lab -- --no-browser --port=$port --ServerApp.token=check --ServerApp.ip=127.0.0.1 > "$out/go-lab.log" 2>&1 &
pid=$!
status=""
for _ in $(seq 1 600); do
  status=$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen('http://127.0.0.1:$port/api/status?token=check', timeout=2).read().decode())" 2>/dev/null) && break
  kill -0 $pid 2>/dev/null || break
  sleep 1
done
t1=$(date +%s.%N)
pkill -TERM -f "jupyter-lab.*--port=$port" 2>/dev/null; pkill -TERM -f "jupyter lab.*--port=$port" 2>/dev/null; kill $pid 2>/dev/null; wait $pid 2>/dev/null
if [ -n "$status" ]; then
  echo "./go lab: JupyterLab answered /api/status after $(python3 -c "print(round($t1-$t0,1))") s: $status" | tee "$out/status.txt"
else
  echo "./go lab: JupyterLab did not answer (see go-lab.log)" | tee "$out/status.txt"; tail -30 "$out/go-lab.log"; exit 1
fi
sed -n '/^==> set-up/,$p' "$out/go-lab.log" | sed '/ServerApp\|LabApp/d' | head -40
labs_args=()
if [ -n "${3:-}" ]; then
  sel=$(mktemp -d)
  for p in $3; do for nb in labs/"$p"*.ipynb; do [ -f "$nb" ] && ln -s "$PWD/$nb" "$sel/"; done; done
  labs_args=(--labs "$sel")
fi
./go preflight "${labs_args[@]}" --out "$out/preflight" > "$out/preflight.log" 2>&1
rc=$?
cat "$out/preflight/summary.md" 2>/dev/null || tail -30 "$out/preflight.log"
exit $rc
