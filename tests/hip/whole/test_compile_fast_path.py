"""The fast path (``check``: device code compiled and host code checked at the same time, each half reading the
runtime headers from its precompiled header, no link) gives the same verdict, diagnostics and resources as the
full build, for every kernel in rocmlab/hip/kernels/ and every exercise solution; a host-code error is still
reported; the ISA listing is the same with and without the PCH. Every build here is cold: a fresh cache (the
simulator's runtime object, which no test here compares, is copied in from the session's cache)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from rocmlab import paths
from rocmlab.grader import exercises
from rocmlab.grader.checks import include_dir
from rocmlab.grader.libs import flags as lib_flags
from rocmlab.hip import build
from rocmlab.hip import compile as driver
from rocmlab.hip import runtime_pch
from tests.helpers.sim_runtime import seed_simulator_runtime

pytestmark = pytest.mark.skipif(driver.available("gfx942") != "", reason="no AMD compiler here (gfx942)")


def sources():
    out = [(p.name, p.read_text(), ()) for p in sorted(paths.kernels_dir().glob("*.hip"))]
    for ex in exercises():
        extra, missing = lib_flags(ex.libraries, False)
        if missing:
            continue
        out.append((f"{ex.id}/solution.hip", (ex.folder / "solution.hip").read_text(), ("-I", include_dir(), *extra)))
    return out


def _same(fast, full):
    assert fast.ok == full.ok, (fast.summary(), full.summary())
    assert sorted(map(str, fast.diagnostics)) == sorted(map(str, full.diagnostics))
    assert [(k.name, k.vgprs, k.sgprs, k.agprs, k.lds_bytes, k.scratch_bytes, k.occupancy) for k in fast.kernels()] == \
        [(k.name, k.vgprs, k.sgprs, k.agprs, k.lds_bytes, k.scratch_bytes, k.occupancy) for k in full.kernels()]


SOURCES = sources()


def one_step(src: str, flags=()):
    """The reference: hipcc's own one-step build of the program, no precompiled header (a fresh cache
    entry: the key includes the format, not the path taken, so this source is marked to differ)."""
    applies = runtime_pch.applies
    runtime_pch.applies = lambda *_: False
    try:
        return build.compile(src, target="gfx942", flags=[*flags, "-DROCMLAB_ONE_STEP_REFERENCE"], link=True)
    finally:
        runtime_pch.applies = applies


def _ask_twice(flags=()):
    """A PCH is built on a flag set's second use: ask for both halves' twice, so the next build reads them."""
    tc = driver.find_toolchain("offline") or driver.find_toolchain("rocm")
    for side in runtime_pch.SIDES:
        driver._pch(tc, side, "gfx942", flags)
        assert driver._pch(tc, side, "gfx942", flags) is not None


@pytest.fixture(autouse=True, scope="module")
def _cold_cache(tmp_path_factory):
    """Every build in this module is cold, the precompiled headers too: a fresh cache of its own."""
    from rocmlab.hip.toolchain import offline_root

    mp = pytest.MonkeyPatch()
    mp.setenv("ROCMLAB_ROCM_ROOT", str(offline_root()))      # the compiler stays where it is
    mp.setenv("ROCMLAB_HOME", str(tmp_path_factory.mktemp("cold-home")))
    yield
    mp.undo()


@pytest.mark.parametrize("name,src,flags", SOURCES, ids=[s[0] for s in SOURCES])
def test_fast_path_equals_full_build(name, src, flags):
    _ask_twice(flags)
    fast = build.compile(src, target="gfx942", flags=flags)
    full = one_step(src, flags=flags)
    if not build._can_run(driver.find_toolchain("offline") or driver.find_toolchain("rocm"), "gfx942", "exe",
                          driver.resolve_platform(None))[0]:
        assert fast.binary is None
        assert not fast.ok or "no program was linked" in fast.cannot_run_reason
    assert not full.ok or (full.binary and Path(full.binary).exists())
    if "__global__" in src and full.ok:
        assert fast.kernels(), f"{name}: no kernel resources in the fast build's log"
    _same(fast, full)
    if runtime_pch.applies(src, flags):
        assert "-include-pch" in fast.command, "the fast build did not read the runtime headers from the PCH"


def test_host_error_is_reported_by_the_fast_path():
    src = (paths.kernels_dir() / "reduce.hip").read_text()
    assert "int main" in src
    bad = src.replace("int main(", "int main_(int) { return undefined_host_thing; }\nint main(", 1)
    fast = build.compile(bad, target="gfx942")
    full = one_step(bad)
    assert not fast.ok and any("undefined_host_thing" in d.message for d in fast.errors)
    _same(fast, full)


def test_device_error_with_the_pch_names_the_same_line():
    src = (paths.kernels_dir() / "reduce.hip").read_text()
    _ask_twice()
    bad = src.replace("__global__", "__global__ void broken(float* p) { p[0] = undefined_device_thing; }\n__global__", 1)
    fast = build.compile(bad, target="gfx942")
    full = one_step(bad)
    assert not fast.ok and any("undefined_device_thing" in d.message for d in fast.errors)
    assert "-include-pch" in fast.command
    _same(fast, full)


def test_a_source_that_defines_a_macro_first_takes_no_pch_and_the_macro_still_counts():
    """A #define before the runtime include could change the header: no PCH, and the define is seen."""
    src = "#define HIP_DISABLE_WARP_SYNC_BUILTINS 1\n" + (paths.kernels_dir() / "reduce.hip").read_text()
    assert not runtime_pch.applies(src)
    fast = build.compile(src, target="gfx942")
    assert fast.ok and "-include-pch" not in fast.command
    _same(fast, one_step(src))


def test_a_refused_pch_is_built_around_not_scored(monkeypatch):
    """A PCH clang refuses (here: not a PCH at all) never fails a good cell: the half runs again without it."""
    src = (paths.kernels_dir() / "ballot.hip").read_text().replace("#include <hip/hip_runtime.h>",
                                                                   "#include <hip/hip_runtime.h>  // refused", 1)
    tc = driver.find_toolchain("offline") or driver.find_toolchain("rocm")

    def not_a_pch(header, output, cwd):     # the second ask's build, where a real PCH would be written and spoiled
        Path(output).write_bytes(b"not a precompiled header")
        return SimpleNamespace(ok=True)

    for side in runtime_pch.SIDES:
        assert driver._pch(tc, side, "gfx942", ["-O2"]) is None, "the first ask builds no PCH"
        pch = runtime_pch.pch_for(tc, side, "gfx942", ["-O2"], build=not_a_pch)
        assert pch.read_bytes() == b"not a precompiled header" and driver._pch(tc, side, "gfx942", ["-O2"]) == pch
    fast = build.compile(src, target="gfx942", flags=["-O2"])
    assert fast.ok, fast.summary()
    assert "-include-pch" not in fast.command


def test_the_isa_listing_is_the_same_with_the_pch():
    src = (paths.kernels_dir() / "reduce.hip").read_text()
    assert runtime_pch.applies(src)
    _ask_twice()
    with_pch = driver.compile_source(src, driver.find_toolchain("offline") or driver.find_toolchain("rocm"),
                                     output_kind="asm", target="gfx942", use_cache=False)
    assert with_pch.ok and "-include-pch" in with_pch.command
    without = driver.compile_source("// no pch: a comment line is not the include\n#define X 1\n" + src,
                                    driver.find_toolchain("offline") or driver.find_toolchain("rocm"),
                                    output_kind="asm", target="gfx942", use_cache=False)
    assert without.ok and "-include-pch" not in without.command

    def code(o):   # the listing without clang's per-build names (the cuid hash of the command line)
        return [ln for ln in Path(o.output).read_text().splitlines() if "__hip_cuid_" not in ln]
    assert code(with_pch) == code(without)


@pytest.mark.parametrize("name", ["reduce.hip", "ballot.hip"])
def test_a_program_built_from_its_halves_is_hipccs_own_byte_for_byte(name, tmp_path):
    """link=True with both PCHs: device half, host half with the device code embedded, link. With the same
    -cuid, hipcc's one-step build of the same source makes the same bytes."""
    src = (paths.kernels_dir() / name).read_text().replace("#include <hip/hip_runtime.h>",
                                                          "#include <hip/hip_runtime.h>  // exe", 1)
    _ask_twice()
    split = build.compile(src, target="gfx942", link=True)
    assert split.ok and split.binary and split.kernels(), split.summary()
    cmd = split.command
    assert "-fcuda-include-gpubinary" in cmd and "-include-pch" in cmd
    cuid = next(a for a in cmd if a.startswith("-cuid="))
    tc = driver.find_toolchain("offline") or driver.find_toolchain("rocm")
    work = tmp_path / "plain"
    work.mkdir()
    (work / "cell.hip").write_text(src)
    one = [tc.compiler, "-x", "hip", "--offload-arch=gfx942", "-O3", cuid, "-Rpass-analysis=kernel-resource-usage",
           "-Wno-unused-result", "cell.hip", "-o", "cell"]
    done = driver.run(tc, one, cwd=work)
    assert done.ok, done.stderr[-2000:]
    assert (work / "cell").read_bytes() == Path(split.binary).read_bytes()
    _same(split, _hipccs_own(done, tc, work))


def _hipccs_own(done, tc, work: Path):
    """hipcc's one-step build above as the reference of :func:`_same` (its verdict, diagnostics and kernel
    resources, read from its output by the driver's own parsers, as :func:`one_step` reads them): the same
    reference without building the same source twice."""
    from rocmlab.hip.resources import resources_from_log

    log = (done.stdout + done.stderr).replace(str(work) + os.sep, "")
    return SimpleNamespace(ok=done.ok and (work / "cell").is_file(), diagnostics=driver.parse_diagnostics(log, "cell.hip"),
                           kernels=lambda: resources_from_log(log, tc.kind, "gfx942"), summary=lambda: log[-2000:])


def test_the_simulator_build_reads_its_header_from_a_pch_and_makes_the_same_program():
    """The CPU simulator's builds force-include its hip/hip_runtime.h; from the PCH the program is the same."""
    from rocmlab.hip import simulate

    sim = driver.find_toolchain(simulate.KIND)
    if sim is None:
        pytest.skip(simulate.problem())
    seed_simulator_runtime(driver.cache_dir())       # not compared here: the session's copy (tests/helpers/sim_runtime.py)
    src = (paths.kernels_dir() / "ballot.hip").read_text()
    flags = ["-DROCMLAB_SIM_PCH_TEST"]
    without = driver.compile_source(src, sim, output_kind="exe", target="gfx942", flags=flags, use_cache=False)
    assert without.ok and "-include-pch" not in without.command, without.log[-2000:]   # the first ask: none yet
    with_pch = driver.compile_source(src, sim, output_kind="exe", target="gfx942", flags=flags, use_cache=False)
    assert with_pch.ok and "-include-pch" in with_pch.command, with_pch.log[-2000:]
    # the same code: every allocated section but the build id (the simulator's line tables for the sanitizer
    # name the precompiled header, so the debug sections and the build id that hashes them differ)
    assert _code_sections(Path(with_pch.output)) == _code_sections(Path(without.output))
    bad = src.replace("__global__", "__global__ void broken() { undefined_sim_thing(); }\n__global__", 1)
    r = driver.compile_source(bad, sim, output_kind="exe", target="gfx942", flags=flags, use_cache=False)
    assert not r.ok and "-include-pch" in r.command and any("undefined_sim_thing" in d.message for d in r.diagnostics)


def _code_sections(path: Path) -> dict[str, bytes]:
    """An ELF64 file's allocated sections (SHF_ALLOC: what is loaded and run) by name, less the build id."""
    import struct

    data = path.read_bytes()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = heads[shstrndx]

    def name(h):
        start = names[4] + h[0]
        return data[start:data.index(b"\0", start)].decode()

    return {name(h): data[h[4]:h[4] + h[5]] for h in heads
            if h[2] & 0x2 and h[1] != 8 and name(h) != ".note.gnu.build-id"}     # SHF_ALLOC, not NOBITS
