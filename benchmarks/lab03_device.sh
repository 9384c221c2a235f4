#!/usr/bin/env bash
# Lab 03 on a lent GPU machine, in one call: the ceilings benchmark, then the whole lab through papermill
# with full sizes (quick=False). The machine has torch but no Jupyter stack and no network, so the
# Jupyter packages come as wheels in .whl/ (made on a networked machine by:
#   pip download -d .whl --python-version 3.12 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux_2_28_x86_64 --platform linux_x86_64 --only-binary=:all: \
#     papermill ipykernel plotly ipywidgets anywidget nbformat nbclient )
# Usage: bash benchmarks/lab03_device.sh [OUTDIR]     (OUTDIR defaults to $OUT, else ./lab03-out)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-lab03-out}}
mkdir -p "$out"
export PYTHONPATH=$PWD ROCMLAB_HOME=$PWD/.rocmlab-home ROCMLAB_HEADLINES=$out/headlines.jsonl
py=${PYTHON:-python3}
if ! "$py" -c 'import papermill, ipykernel, plotly, ipywidgets, anywidget' 2>/dev/null; then
  "$py" -m pip install -q --no-index --find-links .whl papermill ipykernel plotly ipywidgets anywidget nbformat nbclient
fi
"$py" -c 'import torch; print("torch", torch.__version__, "GPU:", torch.cuda.is_available() and torch.cuda.get_device_name(0))'
echo "== benchmarks/lab03_ceilings.py"
"$py" benchmarks/lab03_ceilings.py --monitor-s 5 2>&1 | tee "$out/ceilings.txt" || echo "ceilings: exit $? (disagreement over 10%?)"
echo "== papermill labs/03-pytorch-on-rocm.ipynb (quick=False)"
start=$(date +%s)
set +e
"$py" -m papermill labs/03-pytorch-on-rocm.ipynb "$out/03-pytorch-on-rocm.ipynb" -p quick False -k python3 \
  --cwd labs > "$out/papermill.log" 2>&1
rc=$?
set -e
echo "papermill exit $rc after $(( $(date +%s) - start )) s (log: $out/papermill.log)"
tail -n 5 "$out/papermill.log"
echo "== headlines"
"$py" - "$out/headlines.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    h = json.loads(line)
    v = f"{h['value']:.4g}" if isinstance(h["value"], float) else h["value"]
    print(f"{h['name']}: {v} {h['unit']} {('(' + h['note'] + ')') if h['note'] else ''}  [{h['backend']}: {h['device']}]")
PY
exit $rc
