"""Compile the round-11 ladder steps' tuned tiles for sm_90 (H100/H200) without a GPU and read what ptxas made of
each: registers, stack (spills), shared memory, and whether the matrix instructions are Hopper's (HGMMA, QGMMA).

    python benchmarks/results/h100-round11/sm90_compile.py > sm90_compile.txt

Needs Triton's NVIDIA backend (its ptxas and cuobjdump ship in the wheel). A compile figure of this Triton, not a
measurement of a GPU.
"""

import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

CUOBJDUMP = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
POINTERS = ("a_ptr", "b_ptr", "a_scale_ptr", "b_scale_ptr", "c_ptr", "M", "N", "K", "ws_ptr", "lock_ptr", "q_ptr",
            "k_ptr", "v_ptr", "o_ptr", "ROWS")


def compile_sm90(fn, sig: dict, consts: dict, num_warps: int, num_stages: int) -> dict:
    src = ASTSource(fn=fn, signature=dict(sig, **{k: "constexpr" for k in consts}),
                    constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()},
                    attrs={(fn.arg_names.index(k),): [["tt.divisibility", 16]] for k in sig if k in POINTERS})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=num_warps, num_stages=num_stages))
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(k.asm["cubin"])
        f.flush()
        res = subprocess.run([str(CUOBJDUMP), "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
        sass = subprocess.run([str(CUOBJDUMP), "--dump-sass", f.name], capture_output=True, text=True).stdout
    m = re.search(r"REG:(\d+).*?STACK:(\d+)", res)
    return dict(regs=int(m.group(1)), stack=int(m.group(2)), shared=k.metadata.shared,
                mma=sorted(set(re.findall(r"\b([HQ]GMMA|HMMA)\.", sass))))


def fp8(tile):
    from rocmlab.course.labs.lab10_fp8_gemm import ladder_kernels as LK
    sig = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "a_scale_ptr": "*fp32", "b_scale_ptr": "*fp32", "c_ptr": "*bf16",
           "M": "i32", "N": "i32", "K": "i32", "ws_ptr": "*fp32", "lock_ptr": "*i32"}
    bm, bn, w, s, split, _unroll, rescale, stream = tile
    if stream:
        return compile_sm90(LK.fp8_gemm_stream_k, sig, dict(BM=bm, BN=bn, BK=128, GROUP_M=8, RESCALE=bool(rescale)),
                            w, s)
    return compile_sm90(LK.fp8_gemm_ladder, sig, dict(BM=bm, BN=bn, BK=128, GROUP_M=8, EVEN=True, SCALAR_SB=True,
                                                      DESC=True, SA_MMAJOR=True, UNROLL=1, SPLIT_K=split,
                                                      RESCALE=bool(rescale), SCALES_AHEAD=True), w, s)


def attention(job):
    from rocmlab.course.labs.lab09_attention_on_mi300x import ladder_kernels as LK
    tile, causal, d, one_loop = job
    sig = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "N": "i32", "sm_scale": "fp32",
           "ws_ptr": "*fp32", "lock_ptr": "*i32", "ROWS": "i32"}
    bm, bn, w, s = tile[:4]
    return compile_sm90(LK.flash_ladder, sig, dict(D=d, BM=bm, BN=bn, CAUSAL=causal, EXP2=True, SPLIT=True, EVEN=True,
                                                   LONGEST_FIRST=True, DESC=True, ACC_DOT=True, HEADS_FIRST=True,
                                                   SPLIT_KV=tile[4] if len(tile) > 4 else 1, ONE_LOOP=one_loop), w, s)


def main():
    from rocmlab.course.labs.lab09_attention_on_mi300x import ladder as L9
    from rocmlab.course.labs.lab10_fp8_gemm import ladder as L10
    jobs = [(t, c, d, o) for d in (128, 64) for c in (True, False) for t in L9.LAST_TILES for o in (False, True)
            if c or o]
    with ProcessPoolExecutor(2) as ex:
        gemm = list(ex.map(fp8, L10.FP8_STREAM_TILES))
        attn = list(ex.map(attention, jobs))
    print(f"Triton {triton.__version__}, sm_90, compiled offline")
    print("\nFP8 GEMM, v13's tiles (BM, BN, warps, stages, split, unroll, in place, stream-K programs per SM)")
    for t, r in zip(L10.FP8_STREAM_TILES, gemm, strict=True):
        print(t, json.dumps(r))
    print("\nattention, v13's tiles (BM, BN, warps, stages[, key parts]), causal, head dim, ONE_LOOP")
    for j, r in zip(jobs, attn, strict=True):
        print(j[0], "causal" if j[1] else "non-causal", j[2], "one loop" if j[3] else "two loops", json.dumps(r),
              "SPILLS" if r["stack"] else "")


if __name__ == "__main__":
    main()
