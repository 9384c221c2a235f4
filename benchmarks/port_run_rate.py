"""`rocmlab port --run` on a collection of CUDA programs: how many compile, run and match, against plain
hipify-perl compiled, in one run.

Every folder of COLLECTION holding a .cu file is one project; ``--match REGEX`` keeps only the programs (files
with ``main``) whose path matches (the other mains of the folder are left out of its copy). For each project:
``rocmlab port --run`` (each program built and run in the sandbox, ``--run-timeout`` seconds), and plain
hipify-perl on the same files compiled and linked with the same compiler and flags. Where each program runs is
``rocmlab port --run``'s choice: the AMD GPU; else the NVIDIA GPU through HIP->CUDA (nvcc, warps of 32); else
the wave64 CPU simulator.

A project is a folder tree, not one folder: its sources' #includes are followed (``../common/book.h``, a
subfolder, a header found through a build file's ``-I``: the one file of that name in the collection), and what
they reach comes with the program (a header's same-named source too), laid out as in the collection.

"matches": on an NVIDIA machine with nvcc, the CUDA original is built with nvcc and run on the same GPU, twice
(what differs between its own two runs, such as timings, is not compared), and the port's output is compared with
it. Elsewhere "matches" needs outputs recorded from a CUDA run (a manifest, ``rocmlab-port-run.json`` in the
project); without one, a program that exits 0 is counted as "ran", and its stdout is searched for the program's
own verdict ("PASS", "Success", "correct" vs "FAIL", "mismatch", "error") as "self-check passed": the program's
word, not a comparison with CUDA. "matched" counts only programs whose output was compared with the CUDA
original's; every other program says why not (``not_compared_why``: the original did not build, and nvcc's error
with the CUDA version it needs; it failed; it printed nothing; it printed only timings).

An NVIDIA machine usually has no AMD compiler: there the gfx942 compile and hipify-perl's are not measured
(shown as "-"). ``--amd-json FILE`` takes them from this benchmark's JSON of the same collection on a machine
that has the AMD compiler (ROCm, or rocmlab's offline ROCm root), matched program by program, and says so.

    python benchmarks/port_run_rate.py COLLECTION [--match REGEX] [-I /abs/include] [--json results.json]
        [--run-timeout 20] [--jobs N] [--amd-json results-on-an-amd-compiler-machine.json]
        [--reference-json results-on-an-nvidia-machine.json]

``--reference-json FILE`` (the other way round): this benchmark's JSON from an NVIDIA machine holds the CUDA
original's stdout of every program it ran there (with what varies between its runs); each port's run here (the AMD
GPU or the wave64 simulator) is compared with it, so "matches" says whether the port computes on wave64 what the
original computed on the NVIDIA GPU.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCES = (".cu", ".cuh", ".h", ".hpp", ".c", ".cpp", ".cc")
_MAIN = re.compile(r"\bint\s+main\s*\(")
_PASS = re.compile(r"(?i)\b(?:pass(?:ed)?|success\w*|correct|verified|ok)\b")
_FAIL = re.compile(r"(?i)\b(?:fail\w*|mismatch\w*|incorrect|wrong|error)\b")
#: The end of each run's stdout kept in the JSON (the CUDA original's whole stdout, when it is no longer).
STDOUT_KEPT = 16 << 10
#: Columns taken from an --amd-json run (measured where the AMD compiler is).
AMD_COLUMNS = ("compiled", "hipify_perl_compiled")


def projects(collection: Path, match: str | None) -> list[tuple[Path, list[str]]]:
    """(folder, [its program files kept]) for every folder holding a .cu file."""
    out = []
    for folder in sorted({p.parent for p in collection.rglob("*.cu")}):
        mains = sorted(str(p.relative_to(collection)) for p in folder.iterdir()
                       if p.suffix in (".cu", ".cpp", ".c") and _MAIN.search(p.read_text(errors="replace")))
        keep = [m for m in mains if match is None or re.search(match, m)]
        if keep:
            out.append((folder, keep))
    return out


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.MULTILINE)
_COMPANIONS = (".c", ".cpp", ".cc", ".cu")


def project_tree(collection: Path, folder: Path, includes: list[Path]) -> tuple[Path, list[Path], list[Path]]:
    """A program folder as the project it is: (root folder, files outside ``folder`` it needs, include folders).

    Its sources' #includes are followed through the collection: a quoted include relative to the including file
    (``../common/book.h``, ``dwt_cuda/dwt.h``), then relative to ``-I`` folders inside the collection, then -- as a
    build file's ``-I../common`` would -- the one file of that name in the collection, whose folder becomes an
    include folder of the project. A header's same-named source beside it (``lodepng.h`` -> ``lodepng.cpp``) comes
    too. The root is the nearest folder holding the program folder and all of them."""
    inside = [i for i in includes if collection in i.resolve().parents or i.resolve() == collection]
    by_name: dict[str, list[Path]] = {}
    for p in collection.rglob("*"):
        if p.is_file() and not p.is_symlink():
            by_name.setdefault(p.name, []).append(p)
    need: list[Path] = []
    inc_dirs: list[Path] = []
    todo = [p for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix in SOURCES]
    seen = set(todo)
    while todo:
        cur = todo.pop()
        for quote, name in _INCLUDE.findall(cur.read_text(errors="replace")):
            cands = ([cur.parent / name] if quote == '"' else []) + [d / name for d in [*inside, *inc_dirs]]
            hit = next((c.resolve() for c in cands if c.is_file()), None)
            if hit is None and quote == '"':
                same = [p for p in by_name.get(Path(name).name, []) if str(p).endswith(name)]
                if len(same) == 1:
                    hit = same[0].resolve()
                    d = Path(str(hit)[: -len(name)].rstrip("/"))
                    if d not in inc_dirs:
                        inc_dirs.append(d)
            if hit is None or hit in seen or collection.resolve() not in hit.parents:
                continue
            seen.add(hit)
            todo.append(hit)
            if folder.resolve() not in hit.parents:
                need.append(hit)
            for suffix in _COMPANIONS:
                comp = hit.with_suffix(suffix)
                if comp != hit and comp.is_file() and comp not in seen and not _MAIN.search(comp.read_text(errors="replace")):
                    seen.add(comp)
                    todo.append(comp)
                    if folder.resolve() not in comp.parents:
                        need.append(comp)
    root = folder.resolve()
    for p in [*need, *inc_dirs]:
        while root not in p.parents and root != p:
            root = root.parent
    return root, need, inc_dirs


def stage(collection: Path, folder: Path, keep: list[str], dest: Path, extra=(), root: Path | None = None) -> Path:
    """A copy of ``folder`` without the programs left out, under ``dest`` as it sits under ``root`` (default: the
    folder itself), with the ``extra`` files it includes from elsewhere in ``root``; returns the copy's folder."""
    root = (root or folder).resolve()
    here = dest / folder.resolve().relative_to(root)
    here.mkdir(parents=True)
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.is_symlink():
            continue
        rel = str(p.relative_to(collection))
        if p.suffix in (".cu", ".cpp", ".c") and _MAIN.search(p.read_text(errors="replace")) and rel not in keep:
            continue
        (here / p.relative_to(folder)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, here / p.relative_to(folder))
    for p in extra:
        to = dest / p.relative_to(root)
        to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, to)
    return here


def amd_compiler_here() -> str:
    """'' when this machine compiles for AMD targets, else why not."""
    from rocmlab.port import unit_build

    try:
        unit_build.choose_toolchain()
        return ""
    except RuntimeError as exc:
        return str(exc)


def one_project(n: int, folder: Path, keep: list[str], a, tmp: Path, amd: bool) -> list[dict]:
    """Port, build and run one project (and hipify-perl it, where the AMD compiler is): one row per run."""
    from rocmlab.port import port
    from rocmlab.port.baseline import plain_hipify

    root, extra, found_inc = project_tree(a.collection.resolve(), folder, [Path(i).resolve() for i in a.include])
    src = tmp / f"p{n}" / (root.name or "root")
    stage(a.collection, folder, keep, src, extra, root)
    in_root = [str(d.relative_to(root)) or "." for d in found_inc]           # -I folders the includes asked for
    inc = [str(Path(i).resolve()) for i in a.include] + in_root
    manifest = recorded_manifest(folder, root, a, tmp / f"m{n}.json") if a.reference_json else None
    res = port(src, tmp / f"o{n}", a.target, run=True, workers=a.workers, run_timeout_s=a.run_timeout, include=inc,
               manifest=manifest)
    prefix = root.relative_to(a.collection.resolve())
    base_linked = None
    if amd:
        base = plain_hipify(src, tmp / f"b{n}", (a.target,), engine="perl", workers=a.workers, libs=[], include=inc)
        base_linked = {Path(link.main).stem for link in base.links if link.status == "ok"}
    rows = []
    for r in res.runs:
        out = r.stdout_tail
        rows.append({"program": str(prefix / r.program), "compiled": r.compiles,
                     "project_root": str(prefix) or ".", "from_outside_folder": [str(p.relative_to(root)) for p in extra],
                     "include_found": in_root, "not_compared_why": r.not_compared_why,
                     "original_needs": r.original_needs, "port_changes": r.port_changes,
                     "built_to_run": r.built, "ran": bool(r.runs), "matches": r.matches,
                     "self_check": (bool(r.runs) and bool(_PASS.search(out)) and not _FAIL.search(out)),
                     "status": r.status, "backend": r.backend, "reference": r.reference,
                     "first_difference": r.first_difference, "not_compared": r.not_compared,
                     "note": r.note[:300], "seconds": r.duration_s, "stdout_tail": out[-STDOUT_KEPT:],
                     "original_exit": r.original_exit,
                     "original_stdout": r.original_stdout if len(r.original_stdout) <= STDOUT_KEPT else None,
                     "not_compared_at": r.not_compared_at,
                     "hipify_perl_compiled": None if base_linked is None else Path(r.program).stem in base_linked})
    shutil.rmtree(tmp / f"p{n}", ignore_errors=True)
    shutil.rmtree(tmp / f"o{n}", ignore_errors=True)
    shutil.rmtree(tmp / f"b{n}", ignore_errors=True)
    return rows


def recorded_manifest(folder: Path, root: Path, a, path: Path) -> Path | None:
    """A manifest of the CUDA original's outputs recorded by this benchmark on an NVIDIA machine (its --json, given
    as --reference-json) for ``folder``'s programs that exited 0 there; None when it holds none of them. Program
    paths are relative to the project's ``root`` (:func:`project_tree`)."""
    data = json.loads(a.reference_json.read_text())
    coll = a.collection.resolve()
    here = folder.resolve().relative_to(coll)
    programs = {}
    for r in data.get("programs", []):
        prog = Path(r["program"])
        if prog.parent != here or r.get("original_exit") != 0 or r.get("original_stdout") is None:
            continue
        programs[str((coll / prog).relative_to(root))] = [{"args": [], "timeout_s": a.run_timeout,
                                "expected": {"exit": 0, "stdout": r["original_stdout"],
                                             "not_compared": r.get("not_compared_at") or []}}]
    if not programs:
        return None
    where = ", ".join(data.get("backends") or []) or "an NVIDIA GPU"
    path.write_text(json.dumps({"format": 1, "recorded": f"the CUDA original built with nvcc and run on {where} "
                                f"({a.reference_json.name})", "programs": programs}))
    return path


def failed_project(folder: Path, keep: list[str], a, exc: BaseException) -> list[dict]:
    """Rows for a project the port or the benchmark could not finish (a bug to report, not a verdict)."""
    why = f"the benchmark stopped on this project: {type(exc).__name__}: {exc}"[:300]
    return [{"program": str(folder.relative_to(a.collection) / Path(m).name), "compiled": None, "built_to_run": False,
             "ran": False, "matches": None, "self_check": False, "status": "benchmark-error", "backend": "",
             "reference": "", "first_difference": "", "not_compared": 0, "note": why, "seconds": 0.0,
             "not_compared_why": "benchmark-error: " + why, "original_needs": "", "port_changes": [],
             "hipify_perl_compiled": None} for m in keep]


def merge_amd(rows: list[dict], amd_json: Path) -> dict:
    """Fill the AMD compile columns of ``rows`` from an --amd-json run; returns what it says about that run."""
    data = json.loads(amd_json.read_text())
    by = {r["program"]: r for r in data.get("programs", [])}
    missing = []
    for r in rows:
        other = by.get(r["program"])
        if other is None:
            missing.append(r["program"])
            continue
        for k in AMD_COLUMNS:
            if r[k] is None:
                r[k] = other.get(k)
                r.setdefault("from_amd_json", []).append(k)
        r["amd_machine_run"] = {"status": other.get("status"), "ran": other.get("ran"), "backend": other.get("backend"),
                                "self_check": other.get("self_check")}
    return {"file": str(amd_json), "backend": data.get("backends") or sorted({r.get("backend") or "" for r in by.values()}),
            "commit": data.get("commit", ""), "programs": len(by), "not_there": missing}


def _yes(v) -> str:
    return "-" if v is None else "yes" if v else "no"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("collection", type=Path)
    ap.add_argument("--match", default=None, help="keep programs whose path matches this regular expression")
    ap.add_argument("--target", default="gfx942")
    ap.add_argument("--run-timeout", type=float, default=20.0)
    ap.add_argument("--workers", type=int, default=None, help="compile workers of each project")
    ap.add_argument("--jobs", type=int, default=1, help="projects ported at the same time (default 1)")
    ap.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                    help="an include folder for every project (absolute), e.g. cuda-samples' Common/")
    ap.add_argument("--amd-json", type=Path, default=None,
                    help="this benchmark's --json of the same collection from a machine with the AMD compiler: its "
                         "gfx942 and hipify-perl compile columns fill the ones this machine cannot measure")
    ap.add_argument("--reference-json", type=Path, default=None,
                    help="this benchmark's --json of the same collection from an NVIDIA machine: the CUDA original's "
                         "outputs recorded there are what each port's run here is compared with")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    if not a.collection.is_dir():
        print(f"error: {a.collection} is not a folder", file=sys.stderr)
        return 2
    if a.amd_json is not None and not a.amd_json.is_file():
        print(f"error: --amd-json {a.amd_json}: no such file (give this benchmark's --json from a machine with the "
              "AMD compiler)", file=sys.stderr)
        return 2
    if a.reference_json is not None and not a.reference_json.is_file():
        print(f"error: --reference-json {a.reference_json}: no such file (give this benchmark's --json from an NVIDIA "
              "machine)", file=sys.stderr)
        return 2
    if a.jobs < 1:
        print("error: --jobs must be 1 or more", file=sys.stderr)
        return 2
    no_amd = amd_compiler_here()
    if no_amd:
        print(f"no AMD compiler here, so the gfx942 compile and hipify-perl's are not measured in this run: {no_amd}",
              flush=True)
    from rocmlab.port import run_compare

    nv = run_compare.nvidia_toolchain()          # the machine detected once, before the workers start
    if nv is not None:
        print(f"NVIDIA GPU and {nv.label} here: each port runs through HIP->CUDA, and the CUDA original beside it",
              flush=True)
    found = projects(a.collection, a.match)
    rows, t0 = [], time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rocmlab-port-run-rate-") as tmp:
        with ThreadPoolExecutor(a.jobs) as pool:
            futures = [pool.submit(one_project, n, folder, keep, a, Path(tmp), not no_amd)
                       for n, (folder, keep) in enumerate(found)]
            for f, (folder, keep) in zip(futures, found, strict=True):
                try:
                    got = f.result()
                except Exception as exc:          # one project's failure must not lose the others' rows
                    got = failed_project(folder, keep, a, exc)
                if a.json:                        # what is done so far, should the run be stopped before its end
                    a.json.write_text(json.dumps({"partial": True, "collection": str(a.collection),
                                                  "programs": rows + got}, indent=1))
                for row in got:
                    rows.append(row)
                    print(f"{row['program']:60s} compiled={_yes(row['compiled']):3} built={_yes(row['built_to_run']):3} "
                          f"ran={_yes(row['ran']):3} matches={_yes(row['matches']):3} "
                          f"self-check={_yes(row['self_check']):3} hipify-perl={_yes(row['hipify_perl_compiled']):3} "
                          f"{row['status']} {(row['first_difference'] or row['not_compared_why'] or row['note'])[:160]}",
                          flush=True)
    amd_from = merge_amd(rows, a.amd_json) if a.amd_json else None
    total = {k: sum(r[k] is True for r in rows)
             for k in ("compiled", "built_to_run", "ran", "self_check", "hipify_perl_compiled")}
    total["matched"] = sum(r["matches"] is True for r in rows)
    total["mismatched"] = sum(r["matches"] is False for r in rows)
    total["compared"] = sum(r["matches"] is not None for r in rows)
    total["not_compared"] = {}
    for r in rows:
        if r["matches"] is None:
            code = (r.get("not_compared_why") or r["status"]).split(":")[0]
            total["not_compared"][code] = total["not_compared"].get(code, 0) + 1
    total["programs"] = len(rows)
    total["wall_s"] = round(time.monotonic() - t0, 1)
    backends = sorted({r["backend"] for r in rows if r["backend"]})
    refs = sorted({r["reference"] for r in rows if r["matches"] is not None})
    amd_said = ("" if not no_amd else
                f" (from {a.amd_json}, measured on a machine with the AMD compiler)" if amd_from else " (not measured)")
    print(f"\n{total['programs']} programs: rocmlab port compiled {total['compiled']} ({a.target}, linked){amd_said}, "
          f"built to run {total['built_to_run']}, ran {total['ran']} ({', '.join(backends) or 'nowhere'}), matched "
          f"{total['matched']} of {total['compared']} compared ({'; '.join(refs) or 'nothing to compare with'}), "
          f"self-check passed {total['self_check']}; hipify-perl compiled {total['hipify_perl_compiled']}{amd_said}; "
          f"{total['wall_s']} s")
    if total["not_compared"]:
        print("not compared, and why: " + ", ".join(f"{k} {v}" for k, v in sorted(total["not_compared"].items())))
        for r in rows:
            if r["matches"] is None:
                print(f"  {r['program']}: {(r.get('not_compared_why') or r['note'] or r['status'])[:240]}")
    if amd_from and amd_from["not_there"]:
        print(f"not in {a.amd_json}: {', '.join(amd_from['not_there'])}")
    if a.json:
        commit = ""
        try:
            commit = (ROOT / ".git" / "HEAD").read_text().strip()
            if commit.startswith("ref: "):
                commit = (ROOT / ".git" / commit[5:]).read_text().strip()
        except OSError:
            pass
        a.json.write_text(json.dumps({"collection": str(a.collection), "match": a.match, "target": a.target,
                                      "commit": commit, "backends": backends, "no_amd_compiler": no_amd,
                                      "amd_json": amd_from, "totals": total, "programs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
