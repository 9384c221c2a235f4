"""Print the trap scanner's full report on CUDA/HIP projects in a stable order, to compare two scanner versions.

    python tools/trap_report.py [--target gfx942] [-I DIR ...] [--notebooks DIR] PATH ... > report.txt

Each PATH is a project folder (every source under it, as ``rocmlab port`` scans it) or one file. For
each, the report lists every finding (file, line, column, severity, rule, message, fix, snippet), the
counts per severity, and a SHA-256 of the scanner's whole answer (findings, launches, calls,
identifiers, libraries, inactive lines, files read). ``--notebooks DIR`` adds every ``%%hip`` cell of the
notebooks under DIR (the course's: ``labs``), each scanned as a one-file source. Run it before and
after a change to the scanner and ``diff`` the two files: no output means no behaviour change.

Example (NVIDIA's cuda-samples: every sample folder is a project, ``Common/`` its include folder)::

    git clone --depth 1 https://github.com/NVIDIA/cuda-samples /tmp/cuda-samples
    python tools/trap_report.py -I /tmp/cuda-samples/Common /tmp/cuda-samples/Samples/*/* > after.txt
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rocmlab import settings  # noqa: E402
from rocmlab.cuda2hip.scan import ScanReport, scan, scan_project  # noqa: E402


def _digest(r: ScanReport) -> str:
    whole = {**r.to_json(), "identifiers": sorted(r.identifiers),
             "inactive_lines": {k: v for k, v in sorted(r.inactive_lines.items())}}
    return hashlib.sha256(json.dumps(whole, sort_keys=True, default=str).encode()).hexdigest()


def _section(title: str, r: ScanReport) -> list[str]:
    out = [f"== {title}", f"counts {json.dumps(r.counts(), sort_keys=True)} sha256 {_digest(r)}"]
    out += [f"{f}  | {f.snippet}" for f in r.findings]
    return out


def _notebook_cells(labs: Path):
    """(name, source) of every ``%%hip`` cell in the notebooks under ``labs`` (the magic line dropped)."""
    for nb in sorted(labs.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in nb.parts or "my-work" in nb.parts:
            continue
        cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
        for i, cell in enumerate(cells):
            src = "".join(cell.get("source", [])) if isinstance(cell.get("source"), list) else cell.get("source", "")
            if cell.get("cell_type") == "code" and src.startswith("%%hip"):
                yield f"{nb.relative_to(labs)}#cell{i}", src.split("\n", 1)[1] if "\n" in src else ""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", metavar="PATH", help="project folders or single files")
    p.add_argument("--target", default=settings.DEFAULT_TARGET, choices=settings.AMD_TARGETS)
    p.add_argument("-I", "--include", action="append", default=[], metavar="DIR", help="an include folder (-I)")
    p.add_argument("--notebooks", default=None, metavar="DIR",
                   help="add the %%%%hip cells of the notebooks under DIR")
    a = p.parse_args(argv)
    if not a.paths and not a.notebooks:
        p.error("name at least one project folder or file (or --notebooks DIR)")
    lines: list[str] = []
    for raw in a.paths:
        path = Path(raw)
        if path.is_dir():
            r = scan_project(path, target=a.target, include_dirs=[str(Path(d).absolute()) for d in a.include])
        elif path.is_file():
            r = scan(path, target=a.target, include_dirs=[str(Path(d).absolute()) for d in a.include])
        else:
            print(f"trap_report: no such file or folder: {raw} (name a project folder or a source file)",
                  file=sys.stderr)
            return 2
        lines += _section(raw, r)
    if a.notebooks:
        labs = Path(a.notebooks)
        if not labs.is_dir():
            print(f"trap_report: --notebooks {a.notebooks}: no such folder (name the course's labs folder)",
                  file=sys.stderr)
            return 2
        for name, src in _notebook_cells(labs):
            lines += _section(name, scan(src, target=a.target, filename="cell.hip", root=labs))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
