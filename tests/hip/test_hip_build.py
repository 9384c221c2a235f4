"""Build, cache, diagnostics and sandboxed runs of HIP/CUDA cells (the offline ROCm 7.2.4 root and nvcc where present)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rocmlab import paths
from rocmlab.hip import build
from rocmlab.hip import compile as driver
from rocmlab.hip.toolchain import discover, discover_offline
from rocmlab.machine.detect import current

KERNELS = paths.kernels_dir()
OFFLINE = discover_offline()
HAS_GFX942 = OFFLINE is not None and "gfx942" in OFFLINE.targets
HAS_NVCC = discover("nvcc") is not None
need_offline = pytest.mark.skipif(not HAS_GFX942, reason="no offline gfx942 toolchain: ./go setup installs it")
need_nvcc = pytest.mark.skipif(not HAS_NVCC, reason="no nvcc on this machine")

VADD = """#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
int main(int argc, char** argv) {
  printf("args %d\\n", argc - 1);
  return argc > 1 ? atoi(argv[1]) : 0;
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Every test gets its own build cache; the device bitcode stays where set-up put it."""
    if OFFLINE is not None:   # the ROCm root stays where set-up put it
        monkeypatch.setenv("ROCMLAB_ROCM_ROOT", OFFLINE.root)
    monkeypatch.setenv("ROCMLAB_HOME", str(tmp_path / "home"))
    driver.forget_toolchains()
    yield
    driver.forget_toolchains()


def cpu_plat():
    return SimpleNamespace(backend="cpu", device=None, label="cpu: test")


@need_offline
def test_offline_build_links_and_cannot_run_on_cpu(rng):
    tag = f"args{rng.randrange(10**6)}"
    src = VADD.replace("args", tag)
    # the default where nothing can run: device code compiled, host code compiled and link-checked, no program
    fast = build.compile(src, plat=cpu_plat())
    assert fast.ok and fast.binary is None and "no program was linked" in fast.cannot_run_reason
    assert [k.name for k in fast.kernels()] == ["vadd(float const*, float const*, float*, int)"]
    r = build.compile(src, plat=cpu_plat(), link=True)
    assert r.ok, r.log
    assert r.binary and Path(r.binary).is_file() and os.access(r.binary, os.X_OK)
    assert r.target == "gfx942" and r.toolchain_kind == "offline" and "hipcc" in r.toolchain
    assert "ROCm 7.2.4" in r.toolchain
    assert not r.cached and r.duration_s > 0
    assert not r.can_run and r.cannot_run_reason == "compiled for gfx942 offline: no AMD GPU here"
    ks = r.kernels()
    assert [(k.name, k.vgprs, k.occupancy) for k in ks] == [(k.name, k.vgprs, k.occupancy) for k in fast.kernels()]
    assert ks[0].wavefront_size == 64 and ks[0].vgprs > 0 and 1 <= ks[0].occupancy <= 8
    with pytest.raises(build.CannotRun, match="no AMD GPU here"):
        build.run(r, simulate=False)
    if current().backend == "cpu":   # no GPU: the same source runs on the CPU simulator, and says so
        sim = build.run(r, [3])
        assert sim.returncode == 3 and sim.stdout == f"{tag} 1\n", sim.stderr
        assert sim.stderr.startswith("[cpu: wave64 simulator] ran on the CPU simulator")
        sim = build.run(fast, [4])     # a fast build (no program linked) runs there too
        assert sim.returncode == 4 and sim.stdout == f"{tag} 1\n", sim.stderr
    # a fast build links on demand to run its host code
    assert build.run(fast, [3], host_only=True).returncode == 3
    # its host code does run, in the sandbox: arguments in, exit status out
    code = rng.randrange(1, 100)
    done = build.run(r, [code], host_only=True)
    assert done.returncode == code and done.stdout == f"{tag} 1\n"

    # the cache: same inputs -> hit with the same binary; any key part changed -> a new build
    again = build.compile(src, plat=cpu_plat(), link=True)
    assert again.cached and again.binary == r.binary and again.duration_s < r.duration_s / 10
    assert not build.compile(src, flags=["-O1"], plat=cpu_plat()).cached
    assert not build.compile(src + "\n", plat=cpu_plat()).cached
    assert not build.compile(src, target="gfx90a", plat=cpu_plat()).cached
    obj = build.compile(src, mode="obj", plat=cpu_plat())
    assert obj.ok and obj.binary.endswith(".o") and not obj.can_run and "mode='obj'" in obj.cannot_run_reason


@need_offline
def test_errors_map_to_the_cells_own_lines(rng):
    body = ["#include <hip/hip_runtime.h>"] + [f"int filler{i} = {i};" for i in range(rng.randrange(2, 30))]
    bad_line = len(body) + 1
    body += ["__global__ void k(float* x) { x[0] = 1.0f }", "int main() { return 0; }"]
    r = build.compile("\n".join(body) + "\n", plat=cpu_plat())
    assert not r.ok and r.binary is None
    assert r.errors and r.errors[0].line == bad_line and "expected ';'" in r.errors[0].message
    assert f"line {bad_line}" in r.summary()
    link = build.compile("__device__ void nowhere();\nextern void missing_host_fn();\n"
                         "int main() { missing_host_fn(); return 0; }\n", plat=cpu_plat())
    assert not link.ok and any(d.line is None and "missing_host_fn" in d.message for d in link.errors)
    assert build.compile("\n".join(body) + "\n", plat=cpu_plat()).cached   # failures are cached too


def test_missing_toolchain_names_the_fix(monkeypatch, tmp_path):
    from rocmlab.hip import compile as driver

    monkeypatch.setenv("ROCMLAB_ROCM_ROOT", str(tmp_path / "empty"))
    monkeypatch.setattr(driver, "find_toolchain", lambda kind, refresh=False: None)
    r = build.compile(VADD, plat=cpu_plat())
    assert not r.ok and not r.can_run and r.toolchain == ""
    assert "rocmlab setup rocm-root" in r.log and "ROCm 7.2.4" in r.log
    assert r.diagnostics[0].severity == "error"
    nv = build.compile(VADD, target="sm_90", plat=cpu_plat())
    assert "nvcc" in nv.log and "CUDA toolkit" in nv.log
    rocm = SimpleNamespace(backend="rocm", device=SimpleNamespace(target="gfx942", target_id="gfx942"))
    assert "install ROCm" in build.compile(VADD, plat=rocm).log
    with pytest.raises(build.CannotRun, match="build failed"):
        build.run(r)


@pytest.mark.parametrize("kw, match", [
    (dict(lang="fortran"), "lang='fortran'"),
    (dict(mode="shared"), "mode='shared'"),
    (dict(target="banana"), "not a GPU target"),
    (dict(flags=["-o", "x"]), "set by rocmlab"),
    (dict(flags="-c"), "set by rocmlab"),
])
def test_bad_arguments_raise_with_the_fix(kw, match):
    with pytest.raises(ValueError, match=match):
        build.compile(VADD, plat=cpu_plat(), **kw)


def test_empty_source_and_wrong_run_argument():
    with pytest.raises(ValueError, match="empty"):
        build.compile("   \n", plat=cpu_plat())
    with pytest.raises(TypeError, match="BuildResult"):
        build.run("a.out")


def test_default_target_and_can_run_by_backend():
    amd = SimpleNamespace(backend="rocm", device=SimpleNamespace(target="gfx90a", target_id="gfx90a:sramecc+"))
    nv = SimpleNamespace(backend="cuda", device=SimpleNamespace(target="sm_90", target_id="sm_90"))
    cpu = cpu_plat()
    assert build.default_target("hip", amd) == "gfx90a"
    assert build.default_target("hip", nv) == "sm_90"
    assert build.default_target("hip", cpu) == "gfx942"
    assert build.default_target("cuda", cpu, nvcc_present=True) == "sm_90"
    assert build.default_target("cuda", cpu, nvcc_present=False) == "gfx942"
    tc = lambda kind: SimpleNamespace(kind=kind)  # noqa: E731
    assert build._can_run(tc("rocm"), "gfx90a", "exe", amd) == (True, "")
    ok, why = build._can_run(tc("rocm"), "gfx942", "exe", amd)
    assert not ok and "this GPU is gfx90a" in why
    assert build._can_run(tc("nvcc"), "sm_90", "exe", nv) == (True, "")
    ok, why = build._can_run(tc("nvcc"), "sm_100", "exe", nv)
    assert not ok and "pass target='sm_90'" in why
    ok, why = build._can_run(tc("offline"), "gfx942", "exe", amd)
    assert not ok and "hipcc" in why


def test_a_header_error_points_at_the_cells_line_that_led_there(rng):
    line = rng.randrange(2, 50)
    log = ("In file included from cell.hip:1:\n"
           "/usr/include/hip/amd_detail/amd_warp_sync_functions.h:297:62: error: static assertion failed due to "
           "requirement 'sizeof(unsigned int) == 8': The mask must be a 64-bit integer.\n"
           f"cell.hip:{line}:10: note: in instantiation of function template specialization "
           "'__shfl_down_sync<unsigned int, float>' requested here\n"
           "/usr/include/hip/amd_detail/amd_warp_sync_functions.h:297:76: note: expression evaluates to '4 == 8'\n")
    (d,) = driver.parse_diagnostics(log, "cell.hip")
    assert d.line == line and d.severity == "error" and "64-bit integer" in d.message
    assert "amd_warp_sync_functions.h:297" in d.message
    alone = driver.parse_diagnostics(log.replace(f"cell.hip:{line}:10: note", "other.hip:3:1: note"), "cell.hip")
    assert [x.line for x in alone] == [None] and "amd_warp_sync_functions.h:297" in alone[0].message


def test_parse_diagnostics_clang_and_nvcc_formats():
    log = ("cell.hip:7:12: error: use of undeclared identifier 'y'\n"
           "cell.hip:3:1: remark: Function Name: _Z1kv [-Rpass-analysis=kernel-resource-usage]\n"
           "cell.hip:9:3: warning: unused variable 'z' [-Wunused-variable]\n"
           "/usr/include/hip/x.h:10:2: note: declared here\n"
           "cell.cu(14): error: identifier \"cudaBogus\" is undefined\n"
           "cell.cu(2): warning #177-D: variable \"q\" was declared but never referenced\n")
    hip = driver.parse_diagnostics(log, "cell.hip")
    # the cell's own messages with its lines; another file's error kept without a line; remarks and notes dropped
    assert [(d.line, d.column, d.severity) for d in hip] == [(7, 12, "error"), (9, 3, "warning"), (None, None, "error")]
    assert "cell.cu:14" in hip[2].message
    cu = driver.parse_diagnostics(log, "/tmp/x/cell.cu")
    assert (14, None, "error") in [(d.line, d.column, d.severity) for d in cu]
    assert any(d.line == 2 and d.severity == "warning" for d in cu)
    assert driver.parse_diagnostics("ld.lld: error: undefined symbol: foo\n", "cell.hip")[0].line is None


@need_offline
def test_hangs_and_crashes_never_escape_the_sandbox():
    spin = build.compile("int main() { volatile int x = 0; while (x == 0) {} return 0; }\n", plat=cpu_plat())
    hang = build.run(spin, timeout_s=1.0, host_only=True)
    assert hang.timed_out and hang.returncode is None and "time limit" in hang.explain()
    seg = build.run(build.compile((KERNELS / "segfault.hip").read_text(), plat=cpu_plat()), host_only=True)
    assert seg.signal == "SIGSEGV" and "segmentation fault" in seg.explain()
    loud = build.compile('#include <cstdio>\nint main() { for (int i = 0; i < 1000000; ++i) puts("xxxxxxxx"); }\n',
                         plat=cpu_plat())
    capped = build.run(loud, output_bytes=4096, host_only=True)
    assert capped.stdout_truncated and len(capped.stdout) == 4096


@need_nvcc
def test_hip_reduction_through_the_cuda_path_compiles_with_nvcc():
    r = build.compile((KERNELS / "reduce.hip").read_text(), target="sm_90", plat=cpu_plat())
    assert r.ok, r.log
    assert r.toolchain_kind == "nvcc" and r.unknown_names == [] and "<<<" in r.compiled_source
    assert not r.can_run and "no NVIDIA GPU here" in r.cannot_run_reason
    (k,) = r.kernels()
    assert k.name == "block_sum(float const*, float*, int)" and k.wavefront_size == 32
    assert k.vgprs > 0 and k.lds_bytes == 128 and k.barriers == 1 and k.vgpr_spills == 0
    bad = build.compile((KERNELS / "reduce.hip").read_text().replace("v += x[i];", "v += x[i]"), target="sm_90",
                        plat=cpu_plat())
    want = next(i for i, ln in enumerate(bad.source.splitlines(), 1) if "v += x[i]" in ln)
    assert not bad.ok and bad.errors[0].line in (want, want + 1)   # EDG points at the next token


@pytest.mark.gpu
def test_reduction_runs_on_the_gpu_against_numpy():
    plat = current()
    if plat.backend == "cpu":
        pytest.skip("needs a GPU backend (rocm or cuda); on CPU HIP compiles offline but does not run")
    r = build.compile((KERNELS / "reduce.hip").read_text())
    assert r.ok and r.can_run, r.summary()
    rng = np.random.default_rng()
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 4097, 1 << 20):
            x = rng.standard_normal(n).astype(np.float32)
            x.tofile(Path(tmp) / "x.f32")
            done = build.run(r, [Path(tmp) / "x.f32", n, 256], timeout_s=30)
            got = float(next(ln.split()[1] for ln in done.stdout.splitlines() if ln.startswith("sum ")))
            assert abs(got - float(x.sum(dtype=np.float64))) <= 1e-5 * float(np.abs(x).sum(dtype=np.float64)) + 1e-6


def test_cli_hip_commands(tmp_path, capsys):
    from rocmlab import cli

    assert cli.main(["hip", "build", str(tmp_path / "missing.hip")]) == 2
    assert "is not a file" in capsys.readouterr().err
    f = tmp_path / "k.hip"
    f.write_text("#include <hip/hip_runtime.h>\nvoid f() { hipDeviceSynchronize(); hipBogus(); }\n")
    assert cli.main(["hip", "translate", str(f)]) == 0
    out = capsys.readouterr()
    assert "cudaDeviceSynchronize();" in out.out and "hipBogus" in out.err
    if HAS_GFX942:
        f.write_text("int main() {\n  return 0\n}\n")
        assert cli.main(["hip", "build", str(f)]) == 1
        assert "line 2" in capsys.readouterr().out


def test_rocm_toolchain_is_found_under_rocm_path(machine):
    from rocmlab.hip.toolchain import discover as disc
    from rocmlab.machine.detect import Probe

    hipcc = machine.write("opt/rocm/bin/hipcc", "#!/bin/sh\necho 'HIP version: 6.2.41133-dd7f95766'\n"
                                                "echo 'AMD clang version 18.0.0git'\n")
    hipcc.chmod(0o755)
    probe = Probe(root=machine.root, env={"PATH": ""}, which=lambda t: None)
    tc = disc("rocm", probe)
    assert tc is not None and tc.kind == "rocm" and tc.version == "6.2.41133-dd7f95766"
    assert tc.supports("gfx942") and "ROCm" in tc.label
    assert disc("rocm", Probe(root=machine.root / "nothing", env={"PATH": ""}, which=lambda t: None)) is None
    with pytest.raises(ValueError, match="unknown toolchain kind"):
        disc("icc", probe)
