"""`rocmlab port`, round 3 (issue 52): what it rewrites is what CUDA meant, and "matched" means compared.

Each defect with a small project of our own (tests/data/port/round3/) and its control:
- ``(void**)`` where HIP's signature is narrower than CUDA's ``T**`` template overloads (plain hipify-perl does not
  compile it);
- string literals and comments are left as written; a CUDA name in a string the program looks up is reported;
- APIs CUDA itself removed: the port builds for HIP and says what CUDA the original needs;
- texture-reference fetches (float4, the reference's settings, a bind by address) become plain loads;
- why a run was not compared (no output, only timings, the original not built), and the port's own change to what
  a program prints shown beside a mismatch;
- a project as a folder tree (``../common/`` includes, a subfolder, a header's source beside it): ported, run (the
  wave64 CPU simulator here; the NVIDIA path in benchmarks/port_run_rate.py) and matched.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from rocmlab.cuda2hip import translate
from rocmlab.port import cuda_removed, port, run_compare
from rocmlab.port.baseline import plain_hipify
from rocmlab.port.unit_build import choose_toolchain

DATA = Path(__file__).parents[2] / "data" / "port" / "round3"
ROOT = Path(__file__).parents[3]


def _toolchain_or_skip(perl: bool = False):
    try:
        tc = choose_toolchain()
    except RuntimeError as exc:
        pytest.skip(f"no HIP toolchain here: {exc}")
    if perl and translate.hipify_perl_command() is None:
        pytest.skip("hipify-perl is not here (it comes with ROCm and with the offline ROCm root)")
    return tc


def _simulator_or_skip():
    from rocmlab.hip import compile as driver

    _toolchain_or_skip()
    if driver.find_toolchain("cpu") is None:
        pytest.skip("no wave64 CPU simulator here (it needs the offline ROCm root)")


def _benchmark(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --- (void**) casts ------------------------------------------------------------------------------------------------
def test_void_pointer_casts_only_where_the_argument_is_not_void_pp():
    name = random.choice(["d_a", "dev", "p_out"])
    src = (f"float *{name}, *h; void *v; void **vv;\nint main() {{\n"
           f"  cudaHostGetDevicePointer(&{name}, h, 0);\n"          # float**: cast
           "  cudaHostGetDevicePointer(&v, h, 0);\n"                # void**: left
           f"  cudaHostGetDevicePointer((void **)&{name}, h, 0);\n"  # cast already: left
           "  cudaHostGetDevicePointer(vv, h, 0);\n"                # a void** variable: left
           f"  cudaGetSymbolAddress((void**)&{name}, sym);\n"        # void** in CUDA too: left
           f"  cudaMalloc(&{name}, 4);\n  return 0;\n}}\n")           # HIP has hipMalloc(T**): left
    tr = translate.translate({"m.cu": src})
    lines = tr.texts["m.cu"].split("\n")
    casts = [f for f in tr.fixes if f.kind == "void-pointer-cast"]
    assert [lines[f.line - 1].strip() for f in casts] == [f"hipHostGetDevicePointer((void**)&{name}, h, 0);"]
    assert all("template overload" in f.why for f in casts)
    for kept in ("hipHostGetDevicePointer(&v, h, 0);", f"hipHostGetDevicePointer((void **)&{name}, h, 0);",
                 "hipHostGetDevicePointer(vv, h, 0);", f"hipMalloc(&{name}, 4);"):
        assert kept in tr.texts["m.cu"], kept                      # controls: no cast where none is needed


def test_hip_is_narrower_exactly_where_the_port_casts():
    """POINTER_CALLS is checked against ROCm's header: those calls have no T** template there, and every other HIP
    spelling of CUDA's T** overloads (hipMalloc, hipHostMalloc, ...) has one (so it needs no cast)."""
    from rocmlab.paths import rocm_root

    header = rocm_root() / "usr" / "include" / "hip" / "hip_runtime_api.h"
    if not header.is_file():
        pytest.skip("ROCm's hip_runtime_api.h is not here (the offline ROCm root)")
    text = header.read_text(errors="replace")
    templated = set(re.findall(r"template\s*<\s*class\s+T\s*>\s*(?:static\s+)?(?:inline\s+)?hipError_t\s+"
                               r"(?:__host__\s+)?(?:inline\s+)?(\w+)\s*\(\s*T\s*\*\s*\*", text))
    assert {"hipMalloc", "hipHostMalloc", "hipMallocManaged", "hipMallocPitch", "hipHostAlloc"} <= templated
    assert not templated & set(translate.POINTER_CALLS)
    for name in translate.POINTER_CALLS:
        assert re.search(rf"hipError_t\s+{name}\s*\(\s*void\s*\*\s*\*", text), name
    cuda = Path("/usr/local/cuda/include/cuda_runtime.h")
    if cuda.is_file():                 # and CUDA's header has the T** overload of each (the port's reason to cast)
        ctext = cuda.read_text(errors="replace")
        for name in translate.POINTER_CALLS.values():
            assert re.search(rf"template\s*<\s*class\s+T\s*>\s*static\s+__inline__\s+__host__\s+cudaError_t\s+"
                             rf"{name}\s*\(\s*T\s*\*\s*\*", ctext), name
        assert not re.search(r"cudaGetSymbolAddress\s*\(\s*T\s*\*\s*\*", ctext)   # control: void** in CUDA too


def test_pointer_casts_compile_where_plain_hipify_perl_does_not(tmp_path):
    _toolchain_or_skip(perl=True)
    res = port(DATA / "pointer_casts", tmp_path / "port", "gfx942", workers=2)
    assert res.n_compiled == res.n_units == 1 and all(x.status == "ok" for x in res.links), \
        [u.error for u in res.units]
    casts = [f for f in res.fixes if f.kind == "void-pointer-cast"]
    assert {re.search(r"hip\w+", f.after).group() for f in casts} == {"hipHostGetDevicePointer"}
    assert not [t for t in res.traps if t.rule == "missing-hip-api"]
    base = plain_hipify(DATA / "pointer_casts", tmp_path / "plain", ("gfx942",), workers=2, engine="perl", libs=[])
    assert base.n_compiled == 0, "control: plain hipify-perl was expected to fail on the T** overloads"
    assert "hipHostGetDevicePointer" in base.units[0].error or "void **" in base.units[0].error


# --- string literals and comments --------------------------------------------------------------------------------------
def test_strings_and_comments_are_left_as_written_and_looked_up_names_reported(tmp_path):
    res = port(DATA / "strings", tmp_path / "out", compile=False)
    text = (tmp_path / "out" / "names.hip").read_text()
    assert 'printf("Time using cudaMalloc: done\\n");' in text
    assert "(cudaMalloc in this comment too)" in text
    assert '{hipSuccess, "cudaSuccess"}' in text and '"cudaGetDeviceCount"' in text   # code renamed, strings kept
    reported = {t.src_line: t.snippet for t in res.traps if t.rule == "cuda-name-in-string"}   # one per line
    src = (DATA / "strings" / "names.cu").read_text().split("\n")
    assert sorted(reported) == [n for n, line in enumerate(src, 1) if "kNames[] =" in line or "dlsym(" in line]
    assert reported[max(reported)] == '"cudaGetDeviceCount"' and reported[min(reported)] in ('"cudaSuccess"',
                                                                                             '"cudaErrorInvalidValue"')
    assert all(t.severity == "warning" and t.src_line for t in res.traps if t.rule == "cuda-name-in-string")
    # control: the renaming engine itself rewrites the printed text (what the port now puts back)
    raw = translate.hipify_texts({"names.cu": (DATA / "strings" / "names.cu").read_text()})["names.cu"]
    assert "Time using hipMalloc" in raw


def test_a_changed_literal_count_never_moves_lines():
    original = 'int a; // cudaFree\nconst char* s = "cudaMalloc";\n'
    text, kept, found = translate.keep_literals(original, 'int a; // hipFree\nconst char* s = "hipMalloc";\n', "x")
    assert text == original and kept == 2 and [f.snippet for f in found] == ['"cudaMalloc"']
    # control: a printed sentence is kept but not reported (it is no API name a program looks up)
    text, kept, found = translate.keep_literals('puts("using cudaMalloc");\n', 'puts("using hipMalloc");\n')
    assert text == 'puts("using cudaMalloc");\n' and kept == 1 and found == []


# --- APIs CUDA removed -----------------------------------------------------------------------------------------------
def test_removed_cuda_apis_are_named_with_the_cuda_the_original_needs(tmp_path):
    found = cuda_removed.removed_apis({"a.cu": (DATA / "removed_apis" / "old_cuda.cu").read_text()})
    apis = [r.api for _, _, r in found]
    assert any("cudaThread" in a for a in apis) and any("deviceOverlap" in a for a in apis)
    assert "CUDA 12.x or earlier" in cuda_removed.needs_text(found)
    prefetch = cuda_removed.removed_apis({"p.cu": "cudaMemPrefetchAsync(p, n, device, s);"})
    assert prefetch and prefetch[0][2].removed_in == "CUDA 13.0"
    tex = cuda_removed.needs_text(cuda_removed.removed_apis({"t.cu": "texture<float, 1> t;"}))
    assert "CUDA 11.8 or earlier" in tex
    # controls: today's spellings are not flagged
    assert cuda_removed.removed_apis({"b.cu": "cudaDeviceSynchronize(); prop.asyncEngineCount; "
                                              "cudaMemPrefetchAsync(p, n, loc, 0, s); // cudaThreadSynchronize"}) == []


def test_removed_apis_are_gone_from_the_cuda_headers_here():
    """The table's facts, where nvcc's headers are: none of the names is declared there."""
    hdr = Path("/usr/local/cuda/include")
    if not (hdr / "cuda_runtime_api.h").is_file():
        pytest.skip("CUDA's headers are not here")
    text = (hdr / "cuda_runtime_api.h").read_text(errors="replace") + (hdr / "driver_types.h").read_text(errors="replace")
    for name in ("cudaThreadSynchronize", "cudaThreadExit", "deviceOverlap", "memoryClockRate", "cudaBindTexture"):
        assert not re.search(rf"\b{name}\b", text), name
    assert re.search(r"\bcudaDeviceSynchronize\b", text)             # control: a name that is there


def test_the_port_of_removed_apis_builds_for_hip_and_says_what_the_original_needs(tmp_path):
    _toolchain_or_skip()
    res = port(DATA / "removed_apis", tmp_path / "out", "gfx942", workers=2)
    assert res.n_compiled == res.n_units == 1, [u.error for u in res.units]
    assert any("the CUDA original needs CUDA 12.x or earlier" in n for n in res.notes), res.notes
    clean = port(DATA / "pointer_casts", tmp_path / "out2", compile=False)
    assert not any("original needs" in n for n in clean.notes)          # control


# --- texture references ----------------------------------------------------------------------------------------------
TEX = r"""texture<float4, 1, cudaReadModeElementType> tex4;
texture<float, cudaTextureType1D, cudaReadModeElementType> t_f;
__global__ void k(float4* o, float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { o[i] = tex1Dfetch(tex4, i); p[i] = tex1Dfetch(t_f, i) * 2.f; }
}
int main() {
  float4* d4; float* df; int n = 64;
  cudaMalloc((void**)&d4, n * sizeof(float4)); cudaMalloc((void**)&df, n * sizeof(float));
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  t_f.filterMode = cudaFilterModePoint;
  t_f.normalized = false;
  cudaBindTexture(NULL, &t_f, df, &desc, n * sizeof(float));
  cudaBindTexture(0, tex4, d4, n * sizeof(float4));
  k<<<1, 64>>>(d4, df, n);
  cudaUnbindTexture(tex4); cudaUnbindTexture(&t_f);
  return 0;
}
"""


def test_texture_references_with_settings_and_float4_become_plain_loads(tmp_path):
    tr = translate.translate({"t.cu": TEX})
    text = tr.texts["t.cu"]
    assert "__device__ const float4* tex4;" in text and "__device__ const float* t_f;" in text
    assert "o[i] = tex4[i]; p[i] = t_f[i] * 2.f;" in text and "tex1Dfetch" not in text
    assert "/* rocmlab port: t_f.filterMode" in text and "rocmlab_bind_texture(NULL, &t_f" in text
    # control: a 2D fetch (a real texture read) is left for a manual fix
    two_d = TEX.replace("tex1Dfetch(t_f, i)", "tex2D(t_f, i, 0)")
    assert "texture<float, hipTextureType1D" in translate.translate({"t.cu": two_d}).texts["t.cu"]
    tc = _toolchain_or_skip()
    del tc
    src = tmp_path / "src"
    src.mkdir()
    (src / "t.cu").write_text(TEX)
    res = port(src, tmp_path / "out", "gfx942", workers=2)
    assert res.n_compiled == 1 and res.links[0].status == "ok", [u.error for u in res.units]


# --- why a run was not compared; the port's own change beside a mismatch -------------------------------------------
def _done(out: str, code: int = 0):
    return SimpleNamespace(timed_out=False, returncode=code, stdout=out, stderr="", explain=lambda: f"exit {code}")


def _compare(monkeypatch, original_out: list[str], port_out: str, code: int = 0):
    runs = iter(_done(o) for o in original_out)
    monkeypatch.setattr(run_compare, "_run", lambda *a, **k: (next(runs), {}))
    r = run_compare.RunResult("m.cu", "m.hip", "test", None, True, True, None, "ran")
    run_compare._compare_with_original(r, run_compare.Case("m.cu"), _done(port_out, code), {}, "orig", Path("."),
                                       False)
    return r


def test_no_output_and_only_timings_are_not_compared(monkeypatch):
    ms = [f"{random.uniform(0.1, 9):.3f}" for _ in range(3)]
    r = _compare(monkeypatch, ["", ""], "")
    assert r.matches is None and r.not_compared_why.startswith("no-output")
    r = _compare(monkeypatch, [f"kernel time {ms[0]} ms\n", f"kernel time {ms[1]} ms\n"], f"kernel time {ms[2]} ms\n")
    assert r.matches is None and r.not_compared_why.startswith("only-timing")
    # controls: a line with an answer is compared (and matches, or not); a crash with no output is a mismatch
    total = random.randrange(10**6)
    r = _compare(monkeypatch, [f"time {ms[0]} ms\nsum {total}\n"] * 2, f"time {ms[2]} ms\nsum {total}\n")
    assert r.matches is True and not r.not_compared_why
    r = _compare(monkeypatch, [f"time {ms[0]} ms\nsum {total}\n"] * 2, f"time {ms[2]} ms\nsum {total + 1}\n")
    assert r.matches is False
    launches = random.randrange(2, 500)                  # "N times" is a count, compared (not a timing)
    r = _compare(monkeypatch, [f"Launched graph {launches} times\n"] * 2, f"Launched graph {launches + 1} times\n")
    assert r.matches is False
    r = _compare(monkeypatch, ["", ""], "", code=139)
    assert r.matches is False and "exit status" in r.first_difference
    # lines of blocks printed in another order: still a mismatch, said so; a wrong line is not "another order"
    blocks = [f"block {b} sum {random.randrange(100)}" for b in range(4)]
    r = _compare(monkeypatch, ["\n".join(blocks) + f"\ntime {ms[0]} ms\n"] * 2,
                 "\n".join(blocks[::-1]) + f"\ntime {ms[2]} ms\n")
    assert r.matches is False and "another order" in r.first_difference
    r = _compare(monkeypatch, ["\n".join(blocks) + "\n"] * 2, "\n".join(blocks[::-1][:-1] + ["block 0 sum 999"]) + "\n")
    assert r.matches is False and "another order" not in r.first_difference


def test_counted_as_matched_only_when_compared():
    bench = _benchmark("port_run_rate")
    assert "matched" in bench.__doc__ and "not_compared_why" in bench.__doc__
    for code in ("original-not-built", "original-failed", "no-output", "only-timing"):
        assert code in run_compare.NOT_COMPARED


# --- a project as a folder tree ---------------------------------------------------------------------------------------
def test_a_program_folder_brings_its_includes_from_outside(tmp_path):
    bench = _benchmark("port_run_rate")
    coll = DATA / "multi_folder"
    root, extra, found = bench.project_tree(coll.resolve(), coll / "ch05", [])
    assert root == coll.resolve() and found == []
    assert sorted(str(p.relative_to(root)) for p in extra) == ["common/book.h", "common/checksum.cpp",
                                                                "common/checksum.h"]
    # an include a build file's -I resolves: the one file of that name in the collection
    c = tmp_path / "c"
    (c / "lib").mkdir(parents=True)
    (c / "prog").mkdir()
    (c / "lib" / "err.h").write_text("#pragma once\n")
    (c / "prog" / "p.cu").write_text('#include "err.h"\nint main() { return 0; }\n')
    root, extra, found = bench.project_tree(c.resolve(), c / "prog", [])
    assert root == c.resolve() and found == [(c / "lib").resolve()] and extra == [(c / "lib" / "err.h").resolve()]
    # control: a folder that includes nothing outside stays the project
    (c / "alone").mkdir()
    (c / "alone" / "a.cu").write_text("#include <cstdio>\nint main() { return 0; }\n")
    assert bench.project_tree(c.resolve(), c / "alone", []) == ((c / "alone").resolve(), [], [])


def test_multi_folder_project_ported_run_and_matched(tmp_path):
    """The chapter folder staged as the benchmark stages it (``../common`` beside it), ported with --run: the
    program runs (the wave64 CPU simulator here; the NVIDIA GPU through HIP->CUDA where nvcc and a GPU are) and
    matches the recorded CUDA output; a recorded output off by one is the failing control. Staged as one folder
    (the benchmark before this round), it does not build."""
    _simulator_or_skip()
    bench = _benchmark("port_run_rate")
    coll = DATA / "multi_folder"
    root, extra, _ = bench.project_tree(coll.resolve(), coll / "ch05", [])
    src = tmp_path / "src"
    bench.stage(coll, coll / "ch05", ["ch05/squares.cu"], src, extra, root)
    n, k = random.randrange(50, 900), random.randrange(1, 50)
    h = [(i % 97) ** 2 + k for i in range(n)]
    s = 7
    for v in h:
        s = (s * 31 + v) % 1000003
    good = f"n={n} k={k} checksum={s} last={h[-1]}\n"
    (tmp_path / "m.json").write_text(json.dumps({"format": 1, "recorded": "its specification", "programs": {
        "ch05/squares.cu": [{"args": [str(n), str(k)], "expected": {"stdout": good}},
                            {"args": [str(n), str(k)], "expected": {"stdout": good.replace(f"last={h[-1]}",
                                                                                           f"last={h[-1] + 1}")}}]}}))
    res = port(src, tmp_path / "out", run=True, workers=2, manifest=tmp_path / "m.json")
    assert [r.status for r in res.runs] == ["matched", "mismatch"], [(r.status, r.note, r.first_difference)
                                                                      for r in res.runs]
    # control: the folder alone (as the benchmark staged it before): ../common is missing, nothing builds
    alone = tmp_path / "alone"
    shutil.copytree(coll / "ch05", alone)
    bad = port(alone, tmp_path / "out2", "gfx942", workers=2)
    assert bad.n_compiled == 0
    assert not any("outside SRC" in n for n in res.notes)
    assert any('"../common/book.h", which is outside SRC' in n and "port the folder that holds both" in n
               for n in port(coll / "ch05", tmp_path / "out3", compile=False).notes)


def test_the_ports_own_change_is_shown_beside_a_mismatch():
    """A widened mask printed with %x: the port writes %llx (format-64); that change is what a mismatch with the
    CUDA original's output shows beside it. A program without it shows none (control)."""
    src = ("#include <cstdio>\n__global__ void k(int *o) {\n  unsigned m = 0xffffffff;\n"
           "  int v = __shfl_down_sync(m, threadIdx.x, 1);\n"
           "  if (threadIdx.x == 0) { printf(\"mask %x\\n\", m); o[0] = v; }\n}\n")
    tr = translate.translate({"k.cu": src, "plain.cu": "#include <cstdio>\nint main() { printf(\"%x\\n\", 7u); }\n"})
    changes = run_compare.print_changes(tr.fixes, {"k.hip"})
    assert len(changes) == 1 and "%llx" in changes[0] and "k.hip:" in changes[0], changes
    assert run_compare.print_changes(tr.fixes, {"plain.hip"}) == []


# --- the fold false alarm ------------------------------------------------------------------------------------------
FOLD = """__global__ void r(const float* in, float* out) {{
  __shared__ float sd[256];
  unsigned tid = threadIdx.x;
  sd[tid] = in[blockIdx.x * blockDim.x + tid];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; {cond}; s >>= 1) {{ if (tid < s) sd[tid] += sd[tid + s]; __syncthreads(); }}
  float v = tid < 32 ? sd[tid] : 0.f;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffffffffffull, v, offset);
  if (tid == 0) out[blockIdx.x] = v;
}}
"""


@pytest.mark.parametrize("cond", ["s >= 32", "s > 16", "s > 32"])
def test_no_lane_offset_alarm_after_a_shared_memory_fold_to_32_values(cond):
    from rocmlab.cuda2hip.scan import scan

    assert [f.rule for f in scan(FOLD.format(cond=cond)).findings] == []


def test_lane_offset_alarm_without_the_fold():
    """Control: the block folded to one value by shared memory and then a 16-lane tail over all lanes is no fold to
    32 values: the tail is flagged."""
    from rocmlab.cuda2hip.scan import scan

    assert [f.rule for f in scan(FOLD.format(cond="s > 0")).findings] == ["lane-offset-16-or-32"]


# --- ports in threads (benchmarks/port_run_rate.py --jobs) ---------------------------------------------------------
def test_ports_in_threads_leave_stdout_as_it_was():
    """torch's hipify runs inside a stdout redirect, which swaps the process's sys.stdout: ports running in threads
    take turns, so sys.stdout is the same afterwards (a benchmark's own prints were lost before)."""
    import contextlib
    import io
    import sys
    from concurrent.futures import ThreadPoolExecutor

    before = sys.stdout
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda n: translate.hipify_texts({f"a{n}.cu": "int main() { cudaDeviceSynchronize(); }\n"}),
                      range(8)))
    assert sys.stdout is before
    # control: two redirects that end in the other order (as two threads without the lock can) leave a StringIO
    a, b = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stdout(io.StringIO())
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    try:
        assert sys.stdout is not before
    finally:
        sys.stdout = before
