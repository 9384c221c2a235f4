"""The one compiler driver (rocmlab.hip.compile): command lines, toolchain choice, files for rocmlab port."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rocmlab import settings
from rocmlab.hip import compile as driver
from rocmlab.hip.toolchain import Toolchain, discover_offline

OFFLINE = discover_offline()
need_offline = pytest.mark.skipif(OFFLINE is None, reason="no offline ROCm root: bash scripts/setup/20-rocm-root.sh")
ROOT_TC = Toolchain("offline", "/usr/bin/hipcc", "7.2.53211", settings.AMD_TARGETS, "/nonexistent-root", "7.2.4")
NVCC_TC = Toolchain("nvcc", "/usr/local/bin/nvcc", "13.0", ("sm_*",))


def test_one_command_line_per_output_kind():
    exe = driver.command(ROOT_TC, ["a.hip"], "a", output_kind="exe", targets=("gfx942", "gfx950"), remarks=True,
                         include_dirs=["/inc"], defines=["N=4"], libs=["-lhipblas"])
    assert exe[:3] == ["/usr/bin/hipcc", "-x", "hip"] and "--offload-arch=gfx950" in exe
    assert "-O3" in exe and "-Rpass-analysis=kernel-resource-usage" in exe and "-I/inc" in exe and "-DN=4" in exe
    assert exe[-3:] == ["-lhipblas", "-o", "a"]
    obj = driver.command(ROOT_TC, ["a.hip"], "a.o", output_kind="obj", targets=("gfx90a",), flags=["-O1"])
    assert "-c" in obj and "-O3" not in obj and "-lhipblas" not in obj
    asm = driver.command(ROOT_TC, ["a.hip"], "a.s", output_kind="asm", targets=("gfx942",))
    assert asm[asm.index("--cuda-device-only") + 1] == "-S"
    with pytest.raises(ValueError, match="one target"):
        driver.command(ROOT_TC, ["a.hip"], "a.s", output_kind="asm", targets=("gfx942", "gfx950"))
    link = driver.command(ROOT_TC, ["a.o", "lib.a"], "prog", output_kind="link", libs=["-lm"])
    assert link == ["/usr/bin/hipcc", "a.o", "lib.a", "-lm", "-o", "prog"]
    cub = driver.command(NVCC_TC, ["a.cu"], "a.cubin", output_kind="cubin", targets=("sm_90",))
    assert cub[:2] == ["/usr/local/bin/nvcc", "-arch=sm_90"] and "-cubin" in cub and "-v" in cub
    with pytest.raises(ValueError, match="for AMD targets"):
        driver.command(NVCC_TC, ["a.cu"], "a.s", output_kind="asm", targets=("sm_90",))
    with pytest.raises(ValueError, match="no AMD target"):
        driver.command(ROOT_TC, ["a.hip"], "a", output_kind="exe")
    with pytest.raises(ValueError, match="output_kind"):
        driver.command(ROOT_TC, ["a.hip"], "a", output_kind="dll", targets=("gfx942",))


def test_host_folders_are_bound_only_where_the_sandbox_would_hide_them(tmp_path):
    inc = tmp_path / "include"
    inc.mkdir()
    (tmp_path / "src.hip").write_text("")
    root = tmp_path / "root"
    (root / "usr" / "include").mkdir(parents=True)
    tc = Toolchain("offline", "/usr/bin/hipcc", "7.2", settings.AMD_TARGETS, str(root), "7.2.4")
    cmd = ["/usr/bin/hipcc", f"-I{inc}", str(tmp_path / "src.hip"), "-I", "/usr/include", "rel.hip"]
    got = driver._host_paths(cmd, tc)
    assert got == [str(inc.resolve()), str(tmp_path.resolve())]       # never /usr/include: the root has its own
    host = Toolchain("nvcc", "/usr/bin/nvcc", "13", ("sm_*",))
    assert "/usr/include" not in driver._host_paths(cmd, host)       # a system folder the sandbox shows anyway
    assert driver._host_paths(cmd, host, exclude=(str(tmp_path.resolve()),)) == []


def test_choose_names_every_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("ROCMLAB_ROCM_ROOT", str(tmp_path / "none"))
    monkeypatch.setattr(driver, "find_toolchain", lambda kind, refresh=False: None)
    tc, fix = driver.choose("hip", "gfx950", plat=None)
    assert tc is None and "20-rocm-root.sh" in fix and "gfx950" in fix
    tc, fix = driver.choose("hip", "sm_90", plat=None)
    assert tc is None and "CUDA toolkit" in fix
    assert "20-rocm-root.sh" in driver.available("gfx942")
    monkeypatch.setattr(driver, "find_toolchain", lambda kind, refresh=False: ROOT_TC if kind == "offline" else None)
    assert driver.choose("hip", "gfx950", plat=None) == (ROOT_TC, "")
    tc, fix = driver.choose("hip", "gfx1201", plat=None)
    assert tc is None and "gfx942, gfx950, gfx90a" in fix


@need_offline
def test_project_files_compile_archive_and_link_in_the_root(tmp_path, rng):
    proj = tmp_path / "proj"
    (proj / "include").mkdir(parents=True)
    value = rng.randrange(1, 100)
    (proj / "include" / "k.h").write_text("#pragma once\nint launch_twice(int);\n")
    (proj / "k.hip").write_text('#include <hip/hip_runtime.h>\n#include "k.h"\n'
                                "__global__ void twice(int* x) { x[threadIdx.x] *= 2; }\n"
                                "int launch_twice(int v) { return 2 * v; }\n")
    (proj / "main.hip").write_text(f'#include "k.h"\nint main() {{ return launch_twice(VALUE) == {2 * value} ? 0 : 1; }}\n')
    (proj / "bad.hip").write_text("int f() {\n  return 0\n}\n")
    tc = OFFLINE
    jobs = [("k.hip", "build/obj/k.o"), ("main.hip", "build/obj/main.o"), ("bad.hip", "build/obj/bad.o")]
    with ThreadPoolExecutor(2) as pool:   # two compiles into one folder at once: each has its own scratch
        k, main, bad = pool.map(lambda j: driver.compile_file(tc, j[0], j[1], targets=("gfx942", "gfx950"),
                                                               include_dirs=["include"], defines=[f"VALUE={value}"],
                                                               cwd=proj), jobs)
    assert k.ok and main.ok, (k.log, main.log)
    assert (proj / "build/obj/k.o").is_file() and not list((proj / "build/obj").glob(".rocmlab-cc-*"))
    assert not bad.ok and bad.diagnostics[0].line == 2 and "expected ';'" in bad.diagnostics[0].message
    ar = driver.archive(tc, ["build/obj/k.o"], "build/libk.a", cwd=proj)
    assert ar.ok and (proj / "build/libk.a").is_file(), ar.log
    prog = driver.link(tc, ["build/obj/main.o", "build/libk.a"], "build/bin/main", cwd=proj)
    assert prog.ok, prog.log
    done = driver.run_program("offline", tc.root, [str(proj / "build/bin/main")], scratch=str(tmp_path),
                              time_limit=20, memory_bytes=settings.RUN_MEMORY_BYTES, output_bytes=4096)
    assert done.returncode == 0, done.stderr
    missing = driver.link(tc, ["build/obj/main.o"], "build/bin/nolib", cwd=proj)
    assert not missing.ok and any("launch_twice" in d.message for d in missing.diagnostics)


def test_toolchain_compare_says_plainly_when_the_old_toolchain_is_absent(monkeypatch):
    import importlib.util
    import shutil

    spec = importlib.util.spec_from_file_location("toolchain_compare", Path(__file__).resolve().parents[2]
                                                  / "benchmarks" / "toolchain_compare.py")
    tc_cmp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tc_cmp)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    old, why = tc_cmp.old_toolchain()
    assert old is None and "not installed here" in why and "ROCm 7.2.4 root" in why
