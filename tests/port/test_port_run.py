"""`rocmlab port --run` (issue 43): the ported program runs (wave64 CPU simulator here) and is compared with the
CUDA original's recorded outputs; and the porting defects fixed with it, each with its own test and control.

The two end-to-end tests port, build (hipcc for gfx942 and the simulator) and run; the rest are text-level."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from rocmlab.cuda2hip import translate
from rocmlab.cuda2hip.scan import scan
from rocmlab.port import PortInputError, port, run_compare, unit_build

DATA = Path(__file__).parents[1] / "data" / "port"


def _toolchain_or_skip():
    from rocmlab.hip import compile as driver

    try:
        unit_build.choose_toolchain()
    except RuntimeError as exc:
        pytest.skip(f"no HIP toolchain here: {exc}")
    if driver.find_toolchain("cpu") is None:
        pytest.skip("no wave64 CPU simulator here (it needs the offline ROCm root)")


def reference_stdout(n: int, seed: int, off_by: int = 0) -> str:
    """What run_project's program prints, from its specification (the CUDA run's output)."""
    p = []
    for _ in range(n):
        seed = (seed * 1103515245 + 12345) & 0xFFFFFFFF
        p.append(((seed >> 16) % 100) * 3)
    s = 7
    for v in p:
        s = (s * 31 + v) & 0xFFFFFFFF
    return f"active mask of block 0: ffffffff\nstatus: no error\nn={n} checksum={s % 1000003}\nsum={sum(p) + off_by}\n"


# --- end to end ------------------------------------------------------------------------------------------------
def test_multi_file_project_ports_builds_runs_and_matches(tmp_path):
    """C + CUDA, CRLF, a widened mask printed with %x, an error-enum switch, a texture fetch: it ports, builds,
    runs on the simulator and matches; a run whose recorded sum is off by one is the failing control."""
    _toolchain_or_skip()
    src = tmp_path / "src"
    shutil.copytree(DATA / "run_project", src)
    rng = random.Random()
    n, seed = rng.randrange(40, 900), rng.randrange(1, 2**31)
    good = reference_stdout(n, seed)
    wrong = reference_stdout(n, seed, off_by=1)
    (src / run_compare.MANIFEST).write_text(json.dumps({"format": 1, "recorded": "reference", "programs": {
        "src/main.cu": [{"args": [str(n), str(seed)], "expected": {"stdout": good}},
                        {"args": [str(n), str(seed)], "expected": {"stdout": wrong}}]}}))
    res = port(src, tmp_path / "out", run=True, workers=2)
    assert res.n_compiled == res.n_units == 2, [u.error for u in res.units]
    assert {u.path: u.status for u in res.units}["src/util.c"] == "ok"      # C compiled as C
    ok, bad = res.runs
    assert (ok.status, ok.matches, ok.backend) == ("matched", True, "cpu: wave64 simulator"), ok
    assert "recorded" in ok.reference
    assert (bad.status, bad.matches) == ("mismatch", False)                # the control
    assert bad.first_difference.startswith("stdout line 4") and wrong.split("\nsum=")[1].strip() in bad.first_difference
    out = tmp_path / "out"
    assert b"\r\n" in (out / "src" / "main.hip").read_bytes()               # CRLF kept
    assert b"\r\n" not in (out / "src" / "kernels.cuh").read_bytes()        # LF kept
    kernels = (out / "src" / "kernels.cuh").read_text()
    assert '%llx\\n", mask)' in kernels and "unsigned long long mask" in kernels
    assert "tex_in[i]" in kernels and "tex1Dfetch" not in kernels
    kinds = {f.kind for f in res.fixes}
    assert {"texture-to-load", "error-enum-case", "format-64", "full-mask-64"} <= kinds
    widened = [t for t in res.traps if t.rule == "shfl-sync-32-bit-mask"]
    assert widened and all(t.src_line == t.line - 2 for t in widened)       # two includes added above it
    assert res.summary()["runs"]["matched"] == 1 and res.summary()["runs"]["mismatched"] == 1
    assert "first difference" in res.text()
    page = (out / "rocmlab-port.html").read_text()
    assert "matches the original" in page and bad.first_difference.split(":")[0] in page
    assert [r["status"] for r in json.loads((out / "rocmlab-port.json").read_text())["runs"]] == ["matched", "mismatch"]


def test_wave32_assumption_compiles_but_the_run_reports_the_mismatch(tmp_path):
    """A 32-lane assumption no static rule can see (each warp's leader): the port compiles, --run shows the
    different sum, and the statically flagged line of that program is named beside it. -D reaches the build."""
    _toolchain_or_skip()
    scale = random.randrange(2, 50)
    cuda_sum = 32 * 1 + 32 * (32 * scale + 1)        # two warps of 32 on NVIDIA: two leaders
    manifest = tmp_path / "runs.json"
    manifest.write_text(json.dumps({"programs": {"leaders.cu": [
        {"args": [str(scale)], "expected": {"stdout": f"sum of leaders: {cuda_sum}\n"}}]}}))
    res = port(DATA / "wave32_assumption", tmp_path / "out", run=True, manifest=manifest, defines=["BLOCK=64"],
               workers=2)
    assert res.n_compiled == 1, res.units[0].error                        # without -DBLOCK=64: #error
    assert not [t for t in res.traps if t.severity == "error"]             # not flagged as an error statically
    (r,) = res.runs
    assert (r.compiles, r.runs, r.matches, r.status) == (True, True, False, "mismatch")
    assert f"expected {cuda_sum}, got 64" in r.first_difference            # one leader of 64 lanes: 64 x 1
    assert any(t["path"] == "leaders.hip" for t in r.suspects)


# --- the manifest and the comparison ------------------------------------------------------------------------------
def test_compare_text_tolerance_and_first_difference():
    assert compare("x=1.0000001 y=2\n", "x=1.0 y=2\n", rel=1e-6) == ""
    assert "number 1" in compare("x=1.01\n", "x=1.0\n", rel=1e-6)         # control: outside the tolerance
    assert "expected 1024, got 1025" in compare("sum 1024\n", "sum 1025\n", rel=1e-9)
    assert "line 2" in compare("a\nb\n", "a\nc\n")
    assert "ends after 1 lines" in compare("a\nb\n", "a\n")
    assert compare("mask ffffffff\n", "mask ffffffff\n") == ""
    assert compare("mask ffffffff\n", "mask ffffffffffffffff\n") != ""    # hex words compared exactly


def compare(a, b, rel=1e-6):
    return run_compare.compare_text(a, b, rel, 0.0)


def test_bad_manifests_name_the_fix(tmp_path):
    (tmp_path / "a.cu").write_text("int main() { return 0; }\n")
    cases = [("{", "not valid JSON"), ('{"x": 1}', "programs"),
             ('{"programs": {"a.cu": [{"inputs": ["../etc/passwd"]}]}}', "not a file inside SRC"),
             ('{"programs": {"a.cu": [{"tolerance": {"rel": "big"}}]}}', "must be numbers")]
    for text, words in cases:
        m = tmp_path / "m.json"
        m.write_text(text)
        with pytest.raises(PortInputError, match=words):
            run_compare.load_manifest(m, tmp_path)
    m.write_text('{"programs": {"a.cu": [{"args": ["1"], "expected": {"stdout": "ok\\n"}}]}}')
    (case,) = run_compare.load_manifest(m, tmp_path)                         # control: a good one loads
    assert (case.args, case.stdout, case.exit) == (["1"], "ok\n", 0)
    m.write_text('{"programs": {"b.cu": [{}]}}')
    with pytest.raises(PortInputError, match="not a file with main"):      # before any compile
        port(tmp_path, tmp_path.parent / (tmp_path.name + "-out"), run=True, manifest=m)


# --- the defects, one test each -------------------------------------------------------------------------------------
def test_c_files_are_compiled_as_c():
    cmd = unit_build.c_command(type("T", (), {"compiler": "cc"})(), Path("u.c"), Path("u.o"), ["inc"], ["N=1"])
    assert cmd[1:4] == ["-x", "c", "-std=gnu17"] and "-Wno-error=implicit-int" in cmd and "-DN=1" in cmd
    assert unit_build.is_c("a/u.c") and not unit_build.is_c("a/u.cu") and not unit_build.is_c("a/u.cc")


def test_crlf_is_kept_and_lines_map_back():
    src = "// k\r\n#define FULL 0xffffffff\r\n__global__ void k(int *o) { o[0] = __shfl_sync(FULL, o[0], 1); }\r\n"
    tr = translate.translate({"k.cu": src}, engine="torch")
    out = tr.texts["k.cu"]
    assert out.count("\r\n") == out.count("\n")                               # every line still CRLF
    assert "0xffffffffffffffffull" in out
    fix = next(f for f in tr.fixes if f.kind == "full-mask-64")
    assert translate.line_map(src, out)[fix.line] == 2
    lf = translate.translate({"k.cu": src.replace("\r\n", "\n")}, engine="torch").texts["k.cu"]
    assert "\r" not in lf                                                      # control: LF stays LF


def test_line_map_in_a_long_edited_block():
    """Widened-mask traps got line 0 when hipify edited a long run of lines (a block compared all against all
    was skipped): each line now maps to its original."""
    original = [f"    cudaMemcpy(d{i}, h{i}, n, cudaMemcpyHostToDevice);" for i in range(40)]
    ported = ["#include <hip/hip_runtime.h>"] + [x.replace("cuda", "hip") for x in original[:20]] + \
        ["    unsigned long long mask = 0xffffffffffffffffull;"] + [x.replace("cuda", "hip") for x in original[20:]]
    original.insert(20, "    unsigned mask = 0xffffffff;")
    m = translate.line_map("\n".join(original), "\n".join(ported))
    assert m[22] == 21 and m[2] == 1 and m[41] == 40 and 1 not in m


def test_fold_tail_after_folding_to_32_is_not_an_error():
    fold = """#define BS 256
__global__ void red(const float *in, float *out) {
    __shared__ float s[BS];
    unsigned tid = threadIdx.x;
    s[tid] = in[blockIdx.x * BS + tid];
    __syncthreads();
    for (unsigned k = BS / 2; k > 32; k >>= 1) { if (tid < k) s[tid] += s[tid + k]; __syncthreads(); }
    if (tid < 32) s[tid] += s[tid + 32];
    __syncthreads();
    float v = s[tid];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffffffffffull, v, offset);
    if (tid == 0) out[blockIdx.x] = v;
}
"""
    errors = [f for f in scan(fold, filename="r.hip").findings if f.severity == "error"]
    assert errors == []
    no_fold = "\n".join(x for x in fold.split("\n") if "k > 32" not in x and "tid + 32" not in x)
    rules = [f.rule for f in scan(no_fold, filename="r.hip").findings if f.severity == "error"]
    assert rules == ["lane-offset-16-or-32"]                                  # control: a plain 32-lane loop


@pytest.mark.parametrize("decl", ["int warp_size = 32;", "int devID = 0, warp_size = 32;",
                                  "int a[2] = {1, 2}, warp_size = 32;"])
def test_every_declarator_is_checked(decl):
    code = decl + "\n__global__ void k(int *o) { o[threadIdx.x] = __shfl_down(o[0], 1); }\nint main() { return warp_size; }\n"
    assert [f.rule for f in scan(code, filename="a.hip").findings if f.line == 1] == ["hard-coded-warp-size"]
    control = "x = 1, warp_size = 32;\n" + code.split("\n", 1)[1]              # a comma expression declares nothing
    assert [f for f in scan(control, filename="a.hip").findings if f.line == 1] == []


def test_printf_of_a_widened_mask_gets_ll():
    text, fixes = translate.fix_file("k.cu", "k.hip", 'const unsigned FULL = 0xffffffff;\n__global__ void k(int v) {\n'
                                     '  v = __shfl_xor_sync(FULL, v, 1);\n  printf("%08x %d %x\\n", FULL, v, '
                                     '__ballot_sync(FULL, v > 0));\n}\n', {"k.cu": "k.hip"}, ["."], {"FULL"}, set(),
                                     {"FULL"})
    assert 'printf("%08llx %d %llx\\n", FULL, v, __ballot_sync(FULL, v > 0));' in text    # %d of v: untouched
    assert [f.kind for f in fixes].count("format-64") == 1


def test_old_error_enumerators_in_a_switch():
    src = ("const char *f(hipError_t e) {\n  switch (e) {\n  case hipSuccess: return \"ok\";\n"
           "  case cudaErrorInvalidHostPointer: return \"old\";\n  case hipErrorInvalidValue: return \"v\";\n"
           "  case hipErrorInvalidValue: return \"dup\";\n  }\n  return \"?\";\n}\n")
    text, fixes = translate.fix_file("e.cpp", "e.cpp", src, {"e.cpp": "e.cpp"}, ["."])
    assert "/* rocmlab port: case cudaErrorInvalidHostPointer:" in text
    assert text.count("case hipErrorInvalidValue:") == 2                    # the duplicate: inside the comment
    assert "  case hipErrorInvalidValue: return \"v\";" in text and "  case hipSuccess:" in text   # control
    assert [f.kind for f in fixes].count("error-enum-case") == 2


def test_texture_references_become_loads_where_the_pattern_allows():
    one_d = ("texture<float, 1, hipReadModeElementType> t;\n__global__ void k(float *o) { o[0] = tex1Dfetch(t, 3); }\n"
             "void bind(float *d) { hipBindTexture(0, t, d, 16); hipUnbindTexture(t); }\n")
    names = translate.texture_refs([one_d])
    assert names == {"t"}
    text, _ = translate.fix_file("k.cu", "k.hip", one_d, {"k.cu": "k.hip"}, ["."], textures=names)
    assert "__device__ const float* t;" in text and "o[0] = t[3];" in text
    assert "rocmlab_bind_texture(0, t, d, 16)" in text and '#include "rocmlab_port/texture_ref.h"' in text
    two_d = one_d.replace("tex1Dfetch(t, 3)", "tex2D(t, 1.5f, 2.5f)")
    assert translate.texture_refs([two_d]) == set()                          # control: 2D stays a manual fix
    filtered = one_d + "void f() { t.filterMode = hipFilterModeLinear; }\n"
    assert translate.texture_refs([filtered]) == set()


def test_cooperative_groups_gaps():
    src = ("#include <hip/hip_cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
           "__global__ void k(float2 *o) {\n  __shared__ cg::block_tile_memory<256> scratch;\n"
           "  cg::thread_block b = cg::this_thread_block(scratch);\n  auto t = cg::tiled_partition<64>(b);\n"
           "  o[0] = t.shfl_xor(o[0], 1);\n}\n")
    text, fixes = translate.fix_file("k.cu", "k.hip", src, {"k.cu": "k.hip"}, ["."])
    assert "/* rocmlab port: __shared__ cg::block_tile_memory<256> scratch; */" in text
    assert "cg::this_thread_block();" in text
    assert '#include "rocmlab_port/cg_vector_shfl.h"' in text
    assert {"cg-block-tile-memory", "cg-vector-shfl"} <= {f.kind for f in fixes}
    plain = src.replace("float2", "float").replace("block_tile_memory<256> scratch", "int unused").replace(
        "this_thread_block(scratch)", "this_thread_block()")
    text2, _ = translate.fix_file("k.cu", "k.hip", plain, {"k.cu": "k.hip"}, ["."])
    assert "rocmlab port" not in text2 and "cg_vector_shfl" not in text2    # control: nothing to fix


def test_vector_shuffle_shim_compiles_for_gfx942(tmp_path):
    from rocmlab.hip import compile as driver

    tc = driver.find_toolchain("offline") or driver.find_toolchain("rocm")
    if tc is None:
        pytest.skip("no AMD toolchain here")
    work = tmp_path / "w"          # a folder below tmp_path: hipcc looks at the source folder's parent
    work.mkdir()
    src = work / "k.hip"
    body = ("#include <hip/hip_runtime.h>\n#include <hip/hip_cooperative_groups.h>\n{shim}"
            "namespace cg = cooperative_groups;\n__global__ void k(float2 *o) {\n"
            "  auto t = cg::tiled_partition<64>(cg::this_thread_block());\n  o[threadIdx.x] = t.shfl_xor(o[threadIdx.x], 1);\n}\n")
    src.write_text(body.replace("{shim}", '#include "rocmlab_port/cg_vector_shfl.h"\n'))
    inc = [str(translate.SHIMS_DIR)]
    r = driver.compile_file(tc, src, work / "k.o", include_dirs=inc, flags=("-O1",), cwd=work)
    assert r.ok, r.log[-1500:]
    src.write_text(body.replace("{shim}", ""))
    assert not driver.compile_file(tc, src, work / "k2.o", include_dirs=inc, flags=("-O1",), cwd=work).ok


def test_defines_and_long_out_are_checked(tmp_path):
    from rocmlab.port.project import _defines

    assert _defines(["A=1", "B"]) == (["A=1", "B"], {"A": "1", "B": "1"})
    assert _defines({"N": "4"}) == (["N=4"], {"N": "4"})
    with pytest.raises(PortInputError, match="-D NAME"):
        _defines(["1bad"])
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "a.cu").write_text("int main() { return 0; }\n")
    with pytest.raises(PortInputError, match="--out is too long"):
        port(tmp_path / "s", tmp_path / ("x" * 5000), compile=False)


def test_a_mask_parameter_is_widened():
    """cuda-samples' warpReduceSum(unsigned int mask, T v) passes its parameter to __shfl_down_sync."""
    src = ("template <class T> __device__ T warp_sum(unsigned int mask, T v, unsigned int n) {\n"
           "  for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(mask, v, o);\n  return v + n;\n}\n")
    masks = translate.sync_mask_names([src])
    text, fixes = translate.fix_file("k.cu", "k.hip", src, {"k.cu": "k.hip"}, ["."], masks)
    assert "warp_sum(unsigned long long mask, T v, unsigned int n)" in text     # n is not a mask: unchanged
    assert [f.kind for f in fixes if f.kind != "explicit-hip-runtime"] == ["full-mask-64"]
