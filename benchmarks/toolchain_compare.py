"""What changed for learners when the offline toolchain moved from clang-19 + HIP 5.2 to ROCm 7.2.4.

    python benchmarks/toolchain_compare.py --out benchmarks/results

Compiles every exercise solution (``rocmlab/exercises/*/solution.hip``) and every Lab 01 kernel
(``rocmlab/hip/kernels/*.hip``) to device assembly with both toolchains, once each, for the
targets both know (gfx942, gfx90a), and lists every kernel whose VGPRs, SGPRs, AGPRs, LDS,
scratch, spills or compiler occupancy differ. It also compiles everything for gfx950 with the
new toolchain (the old one does not know MI355X), and compiles and links every exercise solution
for gfx942, gfx950 and gfx90a with the grader's flags.

- new: the offline ROCm 7.2.4 root, through rocmlab's compiler driver (``rocmlab.hip.inspector``);
- old: Debian 12's clang-19 with the HIP 5.2 headers (``/usr/include/hip``) and the gfx942
  device bitcode from Debian trixie's rocm-device-libs-17 (``$ROCMLAB_HOME/device-libs-17``),
  called directly: it is the baseline this script measures against, not a rocmlab toolchain.
  Where it is not installed, the script says so and reports the new toolchain alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocmlab import sandbox, settings  # noqa: E402
from rocmlab.hip import inspector as insp  # noqa: E402
from rocmlab.hip import resources  # noqa: E402
from rocmlab.paths import cache_dir, repo_root  # noqa: E402

ROOT = repo_root()
COMMON = ROOT / "rocmlab" / "exercises" / "common"
FIELDS = ("vgprs", "sgprs", "agprs", "lds_bytes", "scratch_bytes", "vgpr_spills", "sgpr_spills", "occupancy")
SHARED_TARGETS = tuple(t for t in settings.AMD_TARGETS if t != "gfx950")


def sources() -> list[tuple[str, Path]]:
    out = [(f"exercise {p.parent.name}", p) for p in sorted((ROOT / "rocmlab" / "exercises").glob("*/solution.hip"))]
    out += [(f"kernel {p.stem}", p) for p in sorted((ROOT / "rocmlab" / "hip" / "kernels").glob("*.hip"))]
    return out


def old_toolchain() -> tuple[dict | None, str]:
    clang = shutil.which("clang++-19")
    bitcode = cache_dir() / "device-libs-17/usr/lib/llvm-17/lib/clang/17/amdgcn/bitcode"
    hipblas = cache_dir() / "hipblas-5.5/usr/include"
    if not clang or not Path("/usr/include/hip/hip_runtime.h").is_file() or not (bitcode / "oclc_isa_version_942.bc").is_file():
        return None, ("the old offline toolchain (clang-19 + Debian's HIP 5.2 headers + trixie's gfx942 bitcode) is "
                      "not installed here: it was removed when rocmlab moved to the ROCm 7.2.4 root, so only the new "
                      "toolchain is reported")
    return {"clang": clang, "bitcode": str(bitcode), "hipblas": str(hipblas) if hipblas.is_dir() else None}, ""


def old_inspect(old: dict, src: Path, target: str):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "k.s"
        cmd = [old["clang"], "-x", "hip", f"--offload-arch={target}", "--rocm-path=/usr",
               f"--rocm-device-lib-path={old['bitcode']}", "-O3", "--cuda-device-only", "-S", "-Wno-unused-result",
               f"-I{COMMON}", *([f"-I{old['hipblas']}"] if old["hipblas"] else []), str(src), "-o", str(out)]
        done = sandbox.run_limited(cmd, timeout_s=settings.COMPILE_TIME_LIMIT_S, memory_bytes=None, cwd=tmp)
        if not done.ok or not out.exists():
            first = next((ln for ln in done.stderr.splitlines() if "error" in ln), done.explain())
            return None, first.replace(str(src.parent) + "/", "")[:160]
        return resources.parse_amdgcn(out.read_text(), target)[0], ""


def new_inspect(src: Path, target: str):
    r = insp.inspect(src.read_text(), target, flags=("-I", str(COMMON)), toolchain="offline")
    if not r.ok:
        return None, "; ".join(str(d) for d in r.diagnostics[:1])[:160], r.toolchain
    return r.kernels, "", r.toolchain


def solutions_built() -> list[tuple]:
    """Every exercise solution compiled AND linked (the grader's flags) for every AMD target, new toolchain."""
    from rocmlab import grader
    from rocmlab.grader import checks
    from rocmlab.hip import build

    rows = []
    for ex in grader.exercises():
        flags, missing = checks.build_flags(checks.Context(ex, ex.solution, None, 0), nvidia=False)
        for t in settings.AMD_TARGETS:
            if missing:
                rows.append((ex.id, t, "not built", missing[:80]))
                continue
            r = build.compile(ex.solution, lang="hip", target=t, flags=flags, toolchain="offline")
            rows.append((ex.id, t, "ok" if r.ok else "FAILED", "" if r.ok else r.summary().splitlines()[-1][:120]))
    return rows


def short(name: str) -> str:
    return name.split("(")[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="folder for toolchain_compare.md and .json")
    a = ap.parse_args()
    old, why_not = old_toolchain()
    lines, diffs, fails, rows_950, label = [], [], [], [], ""
    counts = {"kernels": 0, "identical": 0}
    for what, src in sources():
        for target in settings.AMD_TARGETS:
            new_k, new_err, label = new_inspect(src, target)
            if target == "gfx950" or old is None:
                if new_k is None:
                    fails.append((what, target, "new", new_err))
                for k in new_k or []:
                    rows_950.append((what, target, short(k.name), *(getattr(k, f) for f in FIELDS)))
                continue
            old_k, old_err = old_inspect(old, src, target)
            if new_k is None or old_k is None:
                fails.append((what, target, "old: " + (old_err or "ok"), "new: " + (new_err or "ok")))
                continue
            by_old = {k.symbol: k for k in old_k}
            for k in new_k:
                o = by_old.get(k.symbol)
                counts["kernels"] += 1
                if o is None:
                    diffs.append((what, target, short(k.name), "only in the new build", "", ""))
                    continue
                changed = [(f, getattr(o, f), getattr(k, f)) for f in FIELDS if getattr(o, f) != getattr(k, f)]
                if not changed:
                    counts["identical"] += 1
                for f, ov, nv in changed:
                    diffs.append((what, target, short(k.name), f, ov, nv))
    lines.append("# Offline toolchain: clang-19 + HIP 5.2 (old) vs ROCm 7.2.4 root (new)\n")
    lines.append(f"new: {label}  [backend: cpu, offline compile; figures are the compiler's]")
    if old is None:
        lines.append(f"\n{why_not}.\n")
    else:
        lines.append(f"old: {old['clang']} with /usr/include/hip (HIP 5.2), bitcode {old['bitcode']}\n")
        lines.append(f"{counts['kernels']} kernel builds on {', '.join(SHARED_TARGETS)} compared; "
                     f"{counts['identical']} identical in every figure, {counts['kernels'] - counts['identical']} differ.\n")
        lines.append("## Every difference (old -> new)\n")
        lines.append("| source | target | kernel | figure | old | new |\n|---|---|---|---|---|---|")
        lines += [f"| {' | '.join(map(str, d))} |" for d in diffs] or ["| (none) | | | | | |"]
    lines.append("\n## Builds that fail with one of them\n")
    lines.append("| source | target | old | new |\n|---|---|---|---|")
    lines += [f"| {' | '.join(map(str, f))} |" for f in fails] or ["| (none) | | | |"]
    title = "gfx950 (MI355X), new toolchain only" if old is not None else "every target, new toolchain"
    lines.append(f"\n## {title}\n")
    lines.append("| source | target | kernel | " + " | ".join(FIELDS) + " |\n|" + "---|" * (3 + len(FIELDS)))
    lines += [f"| {' | '.join(map(str, r))} |" for r in rows_950]
    lines.append("\n## Every exercise solution compiled and linked (offline ROCm root, the grader's flags)\n")
    built = solutions_built()
    by_ex: dict[str, dict[str, str]] = {}
    for eid, t, status, _why in built:
        by_ex.setdefault(eid, {})[t] = status
    lines.append("| exercise | " + " | ".join(settings.AMD_TARGETS) + " |\n|---|" + "---|" * len(settings.AMD_TARGETS))
    lines += [f"| {eid} | " + " | ".join(d.get(t, "") for t in settings.AMD_TARGETS) + " |" for eid, d in by_ex.items()]
    bad = [b for b in built if b[2] != "ok"]
    lines.append(f"\n{len(built) - len(bad)}/{len(built)} builds ok" + "".join(f"\n- {b}" for b in bad))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        Path(a.out, "toolchain_compare.md").write_text(text)
        Path(a.out, "toolchain_compare.json").write_text(json.dumps(
            {"new": label, "old": old, "old_absent": why_not, "counts": counts, "differences": diffs,
             "failures": fails, "new_only": rows_950, "solutions_built": built}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
