"""The simulator's counters count a vector access as the gfx942 compiler emits it: a float4 global copy is one
global_load_dwordx4 and one global_store_dwordx4 per wavefront, a float4 LDS round trip one ds_write_b128 and one
ds_read_b128 with no bank conflict; a copy of a 16-, 12- or 8-byte struct (a memcpy on the host) is one
global_load_dwordx4, _dwordx3 or _dwordx2 and one store. Checked against a hand count and against the offline ISA of the same kernels
(hipcc for gfx942); the control is a scalar kernel, whose four-times-as-many instructions both counts agree on."""

from __future__ import annotations

import random

import pytest

from rocmlab.hip import build, inspector, simulate

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

SRC = """#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void copy4(const float4* in, float4* out) { out[threadIdx.x] = in[threadIdx.x]; }
__global__ void lds4(const float4* in, float4* out) {
    __shared__ float4 t[64];
    t[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = t[63 - threadIdx.x];
}
struct S16 { float a, b, c, d; };
struct S12 { float x, y, z; };
struct S8 { int i; float f; };
// struct copies (clang emits a memcpy for them): one access of the struct's width, as global_load_dwordx4/x3/x2
__global__ void copy16(const S16* in, S16* out) { out[threadIdx.x] = in[threadIdx.x]; }
__global__ void copy12(const S12* in, S12* out) { out[threadIdx.x] = in[threadIdx.x]; }
__global__ void copy8(const S8* in, S8* out) { out[threadIdx.x] = in[threadIdx.x]; }
__global__ void copy1(const float* in, float* out) {      // the control: four scalar copies per lane
    for (int k = 0; k < 4; ++k) out[4 * threadIdx.x + k] = in[4 * threadIdx.x + k];
}
int main() {
    float h[256];
    for (int i = 0; i < 256; ++i) h[i] = SEED + i;
    float *in, *out;
    hipMalloc(&in, sizeof h); hipMalloc(&out, sizeof h);
    hipMemcpy(in, h, sizeof h, hipMemcpyHostToDevice);
    copy4<<<1, 64>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out));
    lds4<<<1, 64>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out));
    copy16<<<1, 64>>>(reinterpret_cast<const S16*>(in), reinterpret_cast<S16*>(out));
    copy12<<<1, 64>>>(reinterpret_cast<const S12*>(in), reinterpret_cast<S12*>(out));
    copy8<<<1, 64>>>(reinterpret_cast<const S8*>(in), reinterpret_cast<S8*>(out));
    copy1<<<1, 64>>>(in, out);
    std::printf("done\\n");
    return 0;
}
"""
# per wavefront, by hand: (global loads, global stores, LDS instructions, LDS bank conflicts, 128-byte lines)
HAND = {"copy4": (1, 1, 0, 0, 16), "lds4": (1, 1, 2, 0, 16), "copy16": (1, 1, 0, 0, 16), "copy12": (1, 1, 0, 0, 12),
        "copy8": (1, 1, 0, 0, 8), "copy1": (4, 4, 0, 0, 64)}   # copy1: each scalar instruction spans 16 bytes a lane: 8 lines


def _isa_counts() -> dict[str, tuple[int, int, int]]:
    out = {}
    for k in inspector.isa(SRC.replace("SEED", "1"), "gfx942"):
        m = k.mnemonics()
        loads = sum(c for n, c in m.items() if n.startswith("global_load"))
        stores = sum(c for n, c in m.items() if n.startswith("global_store"))
        lds = sum(c for n, c in m.items() if n.startswith("ds_"))
        out[k.name.split("(")[0]] = (loads, stores, lds)
    return out


def test_vector_accesses_count_as_the_isa_issues_them():
    src = f"// {random.getrandbits(64):x}\n" + SRC.replace("SEED", str(random.randint(1, 999)))
    res = build.compile(src, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    done = build.run(res, env={"HIPSIM_COUNTERS": "1"})
    got = simulate.counters(done.stderr)
    isa = _isa_counts()
    for name, (rd, wr, lds, conflicts, lines) in HAND.items():
        c = got[name]
        sim = (c["SQ_INSTS_VMEM_RD"], c["SQ_INSTS_VMEM_WR"], c["SQ_INSTS_LDS"])
        assert sim == (rd, wr, lds), (name, c)
        assert c["SQ_LDS_BANK_CONFLICT"] == conflicts and c["TCP_TOTAL_CACHE_ACCESSES_sum"] == lines, (name, c)
        assert isa[name] == sim, (name, isa[name], sim)     # the offline compiler's instructions, one wave each
    assert got["copy1"]["SQ_INSTS_VMEM_RD"] == 4 * got["copy4"]["SQ_INSTS_VMEM_RD"]   # the control differs
    assert not simulate.findings(done.stderr)
