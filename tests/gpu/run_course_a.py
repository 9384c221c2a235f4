"""On a GPU machine: the real fault of Lab 03, the Lab 06 puzzles and tuning, the FP8 codecs (both
formats) bit-exact with the reference, and Lab 08's remap kernel. Prints one line per check and a JSON
summary; exit status 1 when a check that can run here fails. On a CPU it says what it cannot run.

    PYTHONPATH=. python3 tests/gpu/run_course_a.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocmlab.course import puzzles as P  # noqa: E402
from rocmlab.course.labs.lab06_triton_on_amd import puzzles as T06  # noqa: E402

MODE = P.setup()   # before triton is imported anywhere

import torch  # noqa: E402

from rocmlab.comm import torch_codec as C  # noqa: E402
from rocmlab.comm import triton_codec as T  # noqa: E402
from rocmlab.hip import faults  # noqa: E402
from rocmlab.machine.detect import current  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the summary here")
    args = ap.parse_args(argv)
    plat = current()
    out = {"backend": plat.label, "mode": MODE, "checks": {}}
    bad = []

    def record(name, ok, detail):
        out["checks"][name] = {"ok": ok, "detail": detail}
        print(f"[{plat.label}] {'skip' if ok is None else 'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if ok is False:
            bad.append(name)

    # Lab 03: a real out-of-bounds fault, in its own process
    f = faults.provoke()
    if f.ran:
        record("fault provoked and recognised", f.faulted and f.diagnosis.recognised,
               f.summary() + " | " + " / ".join(ln for ln in f.output.splitlines() if ln.strip())[-400:])
    else:
        record("fault provoked and recognised", None, f.why_not)

    # Lab 06: puzzles (references pass, wrong kernels fail) on this device, two fresh seeds
    seeds = [int.from_bytes(os.urandom(4), "little") for _ in range(2)]
    rows = [r for s in seeds for r in P.self_test(s, lab=T06.LAB)]
    record("puzzle references pass", all(r["reference"] for r in rows),
           f"{sum(r['reference'] for r in rows)}/{len(rows)} (seeds {seeds})")
    record("puzzle wrong kernels caught", all(r["wrong_caught"] for r in rows),
           f"{sum(r['wrong_caught'] for r in rows)}/{len(rows)}")

    if MODE == "gpu":
        from rocmlab.course.labs.lab08_mi300x_package import kernels as K08
        from rocmlab.course.labs.lab06_triton_on_amd import lab as L
        from rocmlab.machine import topology as TP

        tuned = L.tune_vadd(1 << 26)
        best = max((r for r in tuned if r["BLOCK"] != "torch x + y"), key=lambda r: r["GBs"])
        record("Triton vector add tuned", True, f"best BLOCK {best['BLOCK']} warps {best['num_warps']}: "
               f"{best['GBs']:.0f} GB/s, {best['vs_torch']:.2f}x torch x + y (same run)")
        ns = [304, 1000, 4097]
        record("XCD remap kernel equals the model",
               all(K08.remapped_tiles(n) == [TP.xcd_remap(p, n) for p in range(n)] for n in ns), f"n = {ns}")
        # the FP8 codecs in both formats, fused Triton kernels against the reference, fresh inputs
        seed = seeds[0]
        exact = []
        for name in C.FP8_CODECS:
            for n in ((1 << 20) + 7 * 32, 32 * 1000):
                x = C.activations("outliers", n, seed=seed, dtype=torch.float16).cuda()
                x[32:64] *= 1e-6
                ref = C.encode_reference(x, name)
                e_ok = torch.equal(ref.payload, T.encode(x, name, impl="triton", variant="default").payload)
                d_ok = torch.equal(C.decode_reference(ref).view(torch.int16), T.decode(ref, impl="triton").view(torch.int16))
                exact.append((name, n, e_ok, d_ok))
        record("FP8 e4m3fn and e4m3fnuz codecs bit-exact on this GPU", all(e and d for *_, e, d in exact),
               "; ".join(f"{nm} n={n}: encode {e}, decode {d}" for nm, n, e, d in exact))
    else:
        record("GPU-only checks", None, "no GPU here: tuning, the remap kernel and the fused codecs need one")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v["ok"] for k, v in out["checks"].items()}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
