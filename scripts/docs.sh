#!/usr/bin/env bash
# ./go docs [--serve [PORT]] [--out DIR]: build the documentation site from this checkout into a folder
# (default site/), offline, with warnings as errors; --serve then serves it on 127.0.0.1 (default port 8000).
# What the build needs (Sphinx, MyST-NB, the furo theme; docs/requirements.txt) goes into a venv of its own,
# .venv-docs, made on the first run (the only step that needs the package index); it sees the course's .venv
# (made by ./go setup), whose rocmlab and torch the reference pages are generated from.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
out=site; serve=""; port=8000
while [ $# -gt 0 ]; do
  case "$1" in
    --serve) serve=1; if [ $# -gt 1 ] && [[ "$2" =~ ^[0-9]+$ ]]; then port=$2; shift; fi ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: ./go docs [--serve [PORT]] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
if [ ! -x .venv/bin/python ]; then
  echo "no .venv here: run ./go setup first (the reference pages are generated from the installed course)" >&2
  exit 1
fi
venv=.venv-docs
site_dir=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ ! -x "$venv/bin/sphinx-build" ] || ! cmp -s docs/requirements.txt "$venv/.requirements"; then
  echo "==> installing the documentation tools into $venv (docs/requirements.txt)"
  .venv/bin/python -m venv "$venv"
  "$venv/bin/pip" install -q -r docs/requirements.txt
  cp docs/requirements.txt "$venv/.requirements"
fi
docs_site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# the course's packages (rocmlab, torch, ...) come after the documentation tools' own
echo "import site; site.addsitedir('$site_dir')" > "$docs_site/rocmlab-course-venv.pth"
t0=$(date +%s)
rm -rf "$out" docs/reference/generated      # autosummary writes the API pages there afresh
"$venv/bin/python" -m sphinx -b html -W --keep-going -n -q -d "$out/.doctrees" docs "$out"
rm -rf "$out/.doctrees"
echo "==> built $out/ in $(( $(date +%s) - t0 )) s, $(du -sh "$out" | cut -f1): open $out/index.html"
if [ -n "$serve" ]; then
  echo "==> serving $out/ at http://127.0.0.1:$port/ (Ctrl-C stops)"
  exec "$venv/bin/python" -m http.server "$port" --bind 127.0.0.1 --directory "$out"
fi
