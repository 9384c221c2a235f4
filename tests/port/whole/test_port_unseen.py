"""The failure classes `rocmlab port` met on CUDA programs nobody tuned it for, each with a small program
of our own (tests/data/port/unseen_classes, libs_link, traps/clean, traps/hazard) and its control: plain
hipify-perl on the same files fails where the port's fix is needed."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from rocmlab.hip.toolchain import READY_STAMP
from rocmlab.paths import rocm_root
from rocmlab.cuda2hip import translate
from rocmlab.port import port
from rocmlab.port.baseline import plain_hipify
from rocmlab.port.unit_build import choose_toolchain

DATA = Path(__file__).parents[2] / "data" / "port"
CLASSES = DATA / "unseen_classes"


def _toolchain_or_skip():
    try:
        tc = choose_toolchain()
    except RuntimeError as exc:
        pytest.skip(f"no HIP toolchain here: {exc}")
    if translate.hipify_perl_command() is None:
        pytest.skip("hipify-perl is not here (it comes with ROCm and with the offline ROCm root)")
    return tc


# --- translation: each fix, on the text ---------------------------------------------------------------------
def test_widening_a_mask_keeps_its_qualifiers():
    text, fixes = translate.fix_file("k.cu", "k.hip", "const unsigned FULL_MASK = 0xffffffff;\n"
                                     "static constexpr uint32_t M2 = 0xffffffffu;\nunsigned plain = 0xffffffff;\n"
                                     "__device__ int f(int v) { return __shfl_down_sync(FULL_MASK, v, 1) + "
                                     "__shfl_xor_sync(M2, v, 1); }\n", {"k.cu": "k.hip"}, ["."], {"FULL_MASK", "M2"})
    lines = [line for line in text.split("\n") if "hip_runtime.h" not in line]   # the runtime include nvcc implies
    assert lines[0] == "const unsigned long long FULL_MASK = 0xffffffffffffffffull;"
    assert lines[1] == "static constexpr unsigned long long M2 = 0xffffffffffffffffull;"
    assert lines[2] == "unsigned plain = 0xffffffff;"          # control: not a mask, not touched
    assert [f.kind for f in fixes if f.kind != "explicit-hip-runtime"] == ["full-mask-64", "full-mask-64"]


def test_included_sources_are_found():
    texts = {"a/main.cu": '#include "kern.cu"\n#include "util.h"\nint main() {}\n', "a/kern.cu": "__global__ void k() {}\n",
             "a/util.h": '#include "more.cpp"\n', "a/more.cpp": "int g;\n", "b/alone.cu": "int x;\n"}
    assert translate.included_sources(texts, ["."]) == {"a/kern.cu", "a/more.cpp"}
    assert translate.included_sources({"m.cu": "// #include \"k.cu\"\n", "k.cu": ""}, ["."]) == set()   # a comment


def test_implicit_headers_are_added_only_where_needed():
    texts = {"m.cu": '#include "h.cuh"\nint main() { char b[4]; memset(b, 0, 4); return (int)FLT_MAX; }\n',
             "h.cuh": "inline int n(const char* s) { return strlen(s); }\n",
             "ok.cu": "#include <string.h>\nint main() { return strlen(\"ab\"); }\n",
             "member.cu": "struct S { int memset; };\nint main() { S s; return s.memset; }\n"}
    for rel in texts:
        text, fixes = translate.implicit_headers(rel, rel.replace(".cu", ".hip"), texts, ["."], [])
        got = sorted(f.after for f in fixes)
        if rel == "m.cu":
            assert got == ["#include <cfloat>", "#include <cstring>"], got   # strlen comes from h.cuh
            assert text.index("#include <cstring>") < text.index('#include "h.cuh"')
        elif rel in ("ok.cu", "member.cu"):
            assert got == [], (rel, got)                                      # controls


def test_spaced_launch_and_library_names():
    text, fixes = translate.fix_file("k.cu", "k.hip", "  k << <grid, block >> > (x, n);\n  a << b;\n",
                                     {"k.cu": "k.hip"}, ["."])
    lines = [line for line in text.split("\n") if "hip_runtime.h" not in line]
    assert lines[0] == "  k <<<grid, block >>> (x, n);" and lines[1] == "  a << b;"
    assert [f.kind for f in fixes if f.kind != "explicit-hip-runtime"] == ["launch-chevrons"]


# --- symbolic links out of SRC (attack) and inside it (control) --------------------------------------------------
def test_port_never_follows_a_symlink_out_of_src(tmp_path):
    src = tmp_path / "src"
    (src / "inc").mkdir(parents=True)
    secret = tmp_path / "secret.h"
    secret.write_text("SECRET-CONTENT-42\n")
    (src / "k.cu").write_text('#include "inc/real.h"\n__global__ void k() {}\n')
    (src / "inc" / "real.h").write_text("#define REAL 1\n")
    os.symlink("/etc", src / "etc")
    os.symlink("/etc/shadow" if os.path.exists("/etc/shadow") else "/etc/passwd", src / "leak.h")
    os.symlink(secret, src / "secret_link.h")
    os.symlink("inc/real.h", src / "alias.h")                 # control: stays inside SRC
    os.symlink("inc", src / "inc_alias")                      # control: a folder inside SRC
    res = port(src, tmp_path / "out", compile=False)
    out = tmp_path / "out"
    everything = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert "SECRET-CONTENT-42" not in everything and "root:" not in everything
    assert not (out / "etc").exists() and not (out / "leak.h").exists() and not (out / "secret_link.h").exists()
    skipped = {p.path: p.kind for p in res.problems}
    assert skipped == {"etc": "symlink-outside", "leak.h": "symlink-outside", "secret_link.h": "symlink-outside"}
    assert "SKIPPED etc: is a symbolic link that leaves the source folder" in res.text()
    assert (out / "alias.h").read_text() == "#define REAL 1\n"     # the control is followed
    assert (out / "inc_alias" / "real.h").is_file()


# --- trap levels: no false alarms on wave64-agnostic code, every hazard flagged ------------------------------------
def _marked(folder: Path) -> set[tuple[str, int]]:
    return {(f.name, i) for f in folder.iterdir() for i, line in enumerate(f.read_text().splitlines(), 1)
            if "// HAZARD" in line}


def test_no_error_level_trap_on_wave64_agnostic_code(tmp_path):
    res = port(DATA / "traps" / "clean", tmp_path / "out", compile=False)
    errors = [(t.src_path, t.src_line, t.rule, t.snippet) for t in res.traps if t.severity == "error"]
    assert errors == []
    assert not [t for t in res.traps if "warpSize" in t.snippet]          # reading prop.warpSize is right
    # left: the mask the port widened (a warning to read) and a host '32' as info
    assert {(t.rule, t.severity) for t in res.traps} <= {("shfl-sync-32-bit-mask", "warning"),
                                                         ("hard-coded-warp-size", "info")}
    # control: the same scanner does flag lane arithmetic once it is a lane index
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "k.cu").write_text("__global__ void k(int* o) { int lane = threadIdx.x % 32; o[lane] = 1; }\n")
    assert [t.rule for t in port(bad, tmp_path / "out2", compile=False).traps if t.severity == "error"] \
        == ["lane-arithmetic-32"]


def test_every_hazard_flagged_at_error_level_and_nothing_else(tmp_path):
    folder = DATA / "traps" / "hazard"
    res = port(folder, tmp_path / "out", compile=False)
    errors = {(Path(t.src_path).name, t.src_line) for t in res.traps if t.severity == "error"}
    marked = _marked(folder)
    assert len(marked) == 10
    assert errors == marked, (sorted(marked - errors), sorted(errors - marked))   # recall and precision 1.0
    assert all(t.src_line > 0 for t in res.traps)
    tex = [t for t in res.traps if t.rule == "texture-fetch"]
    assert tex and "global loads" in tex[0].fix and "texture object" in tex[0].fix
    assert "fix: use a texture object" in res.text()


def test_one_entry_per_line_and_rule_and_real_source_lines(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text(
        "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
        "__global__ void k(int* o) {\n  cg::thread_block_tile<32> t = cg::tiled_partition<32>(cg::this_thread_block());\n"
        "  o[0] = __shfl_down_sync(0xffffffff, o[0], 1);\n}\n")
    res = port(src, tmp_path / "out", compile=False)
    keys = [(t.path, t.line, t.rule) for t in res.traps]
    assert len(keys) == len(set(keys))
    assert [t.rule for t in res.traps].count("cg-tile-32") == 1
    widened = [t for t in res.traps if t.rule == "shfl-sync-32-bit-mask"]
    assert widened and all(t.src_line == 5 for t in widened)


# --- compiled: the port compiles what plain hipify-perl does not ----------------------------------------------------
@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    _toolchain_or_skip()
    tmp = tmp_path_factory.mktemp("classes")
    res = port(CLASSES, tmp / "port", "gfx942", workers=2)
    base = plain_hipify(CLASSES, tmp / "plain", ("gfx942",), workers=2, engine="perl", libs=[])
    return res, base


def test_each_class_compiles_and_links_after_the_port(classes):
    res, _ = classes
    assert sorted(u.source for u in res.units) == ["const_mask.cu", "implicit_headers.cu", "launch_spaced.cu",
                                                   "multi/particles.cu"]          # step_kernels.cu is no unit
    assert [(u.source, u.error) for u in res.units if u.status != "ok"] == []
    assert len(res.links) == 4 and all(link.status == "ok" for link in res.links)


def test_each_class_fails_with_plain_hipify_perl(classes):
    _, base = classes
    err = {u.source: u.error for u in base.units}
    assert "__host__ variable" in err["const_mask.cu"] or "mask must be a 64-bit" in err["const_mask.cu"]
    assert "expected expression" in err["launch_spaced.cu"]
    assert re.search(r"undeclared identifier '(?:FLT_MAX|strlen)'|no matching function for call to 'memset'",
                     err["implicit_headers.cu"])
    assert "multi/particles.cu" in err and err["multi/particles.cu"] == ""    # it compiles: included source is fine


def test_libraries_link_in_the_offline_root(tmp_path):
    _toolchain_or_skip()
    stamp = rocm_root() / READY_STAMP
    if not stamp.is_file() or "link-libraries" not in stamp.read_text():
        pytest.skip("the offline ROCm root predates the link libraries: run bash scripts/setup/20-rocm-root.sh")
    res = port(DATA / "libs_link", tmp_path / "out", "gfx942", workers=2)
    assert set(res.libraries) == {"cublas", "curand", "cusolver", "openmp"}
    assert [(u.source, u.error) for u in res.units if u.status != "ok"] == []
    assert [(link.main, link.error) for link in res.links if link.status != "ok"] == []
    # control: the same objects without the libraries do not link
    from rocmlab.hip import compile as driver
    obj = Path(res.out) / ".rocmlab-port" / "obj" / "solver.hip.o"
    bare = driver.link(choose_toolchain(), [obj], tmp_path / "bare", cwd=Path(res.out), time_limit=300)
    assert not bare.ok and "hipsolverDnCreate" in bare.log


def test_cuda_cpp_overloads_get_their_hip_names():
    text, fixes = translate.fix_file("k.cu", "k.hip", "  CHECK(hipEventCreate(&start, 0));\n  hipEventCreate(&stop);\n",
                                     {"k.cu": "k.hip"}, ["."])
    lines = [line for line in text.split("\n") if "hip_runtime.h" not in line]
    assert lines[0] == "  CHECK(hipEventCreateWithFlags(&start, 0));"
    assert lines[1] == "  hipEventCreate(&stop);"                        # control: the one-argument call stays
    assert [f.kind for f in fixes if f.kind != "explicit-hip-runtime"] == ["cuda-overload"]


def test_device_side_launch_is_named():
    from rocmlab.port.diagnose import CATEGORIES, categorise
    cat = categorise("device-side kernel call/launch is not supported", "  child<<<1, 32>>>(x);")
    assert cat == "dynamic-parallelism" and "host" in CATEGORIES[cat][1]
    assert categorise("use of undeclared identifier 'foo'") == "compile-error"       # control
