"""rocmlab port on the three sample code bases, compiled for gfx942 with the offline ROCm 7.2 root
(the CI machine's toolchain). The expected traps are marked in the samples with ``expect-trap:``
comments."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from rocmlab.course.labs.lab02_porting_cuda_to_hip.port_view import SAMPLES_DIR as SAMPLES
from rocmlab.port import port
from rocmlab.port.unit_build import choose_toolchain

BASES = ("reduce_intrinsics", "coop_streams", "blas_atomics")


def _toolchain_or_skip():
    try:
        return choose_toolchain()
    except RuntimeError as exc:
        pytest.skip(f"no HIP toolchain here: {exc}")


def _offline_only(res):
    if res.toolchain_kind != "offline" or "7.2" not in res.toolchain:
        pytest.skip(f"expected results are for the offline ROCm 7.2 root (this is {res.toolchain})")


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    _toolchain_or_skip()
    before = {b: tree_digest(SAMPLES / b) for b in BASES}
    out = {}
    for b in BASES:
        out[b] = port(SAMPLES / b, tmp_path_factory.mktemp(b) / "hip", "gfx942", workers=2)
    after = {b: tree_digest(SAMPLES / b) for b in BASES}
    return out, before, after


def test_sources_never_modified(ported):
    _, before, after = ported
    assert before == after
    assert all(before[b] for b in BASES)


def test_tree_kept_and_files_renamed(ported):
    res = ported[0]["coop_streams"]
    out = Path(res.out)
    assert (out / "kernels" / "grid_sum.hip").is_file()          # .cu -> .hip, folder kept
    assert (out / "common" / "hip_check.h").is_file()            # cuda_check.h -> hip_check.h
    assert not (out / "kernels" / "hip").exists()                 # no hip/ sub-folders (plain hipify makes them)
    assert {f["source"] for f in res.files} == {str(p.relative_to(SAMPLES / "coop_streams"))
                                                 for p in (SAMPLES / "coop_streams").rglob("*") if p.is_file()}


def _expected_traps(text: str) -> set[tuple[int, str]]:
    exp = set()
    for i, line in enumerate(text.split("\n"), start=1):
        m = re.search(r"expect-trap:\s*([\w\-, ]+)", line)
        if m:
            exp |= {(i, r.strip()) for r in m.group(1).split(",") if r.strip()}
    return exp


@pytest.mark.parametrize("base", BASES)
def test_every_marked_trap_found_and_nothing_else(ported, base):
    res = ported[0][base]
    out = Path(res.out)
    found_all = {(t.path, t.line, t.rule, t.severity, t.compiled) for t in res.traps}
    for f in res.files:
        text = (out / f["ported"]).read_text()
        expected = _expected_traps(text)
        found = {(line, rule) for path, line, rule, level, compiled in found_all
                 if path == f["ported"] and compiled and level != "info"}
        assert found == expected, f"{f['ported']}: missing {expected - found}, unexpected {found - expected}"


def test_clean_wave_agnostic_file_has_no_traps(ported):
    res = ported[0]["reduce_intrinsics"]
    assert [t for t in res.traps if t.path == "src/ballot_count.hip" and t.severity != "info"] == []
    row = next(f for f in res.files if f["ported"] == "src/ballot_count.hip")
    assert row["compile"] == "ok"


def test_every_cuda_arch_guard_is_an_error_and_code_is_kept(ported):
    for b in BASES:
        res = ported[0][b]
        src_guards = sum(len(re.findall(r"^\s*#\s*(?:if|ifdef|ifndef|elif)\b.*__CUDA_ARCH__", p.read_text(), re.M))
                         for p in (SAMPLES / b).rglob("*") if p.is_file())
        traps = [t for t in res.traps if t.rule == "cuda-arch-guard"]
        assert len(traps) == src_guards
        assert all(t.severity == "error" for t in traps)
        for t in traps:
            line = (Path(res.out) / t.path).read_text().split("\n")[t.line - 1]
            assert "__CUDA_ARCH__" in line and "rocmlab port: TRAP" in line   # annotated, not rewritten
    reduce = (Path(ported[0]["reduce_intrinsics"].out) / "src" / "reduce.hip").read_text()
    assert "atomicAdd(out, v);" in reduce and "atomicCAS(p, assumed" in reduce   # both branches still there
    why = {t.line: t.message for t in ported[0]["reduce_intrinsics"].traps if t.rule == "cuda-arch-guard"}
    assert all("NEVER compiled" in w or "ALWAYS compiled" in w for w in why.values())


def test_mechanical_fixes_with_file_and_line(ported):
    res = ported[0]["coop_streams"]
    kinds = {(f.path, f.kind) for f in res.fixes}
    assert ("app/pipeline.hip", "include-renamed") in kinds
    assert ("common/hip_check.h", "cuda-only-macro") in kinds
    assert ("app/pipeline.hip", "explicit-hip-runtime") in kinds
    for f in res.fixes:
        line = (Path(res.out) / f.path).read_text().split("\n")[f.line - 1]
        assert line.strip() == f.after.strip(), f
    guard = (Path(res.out) / "common" / "hip_check.h").read_text()
    assert "__DRIVER_TYPES_H__" not in guard and "HIP_INCLUDE_HIP_DRIVER_TYPES_H" in guard
    r1 = ported[0]["reduce_intrinsics"]
    assert any(f.kind == "explicit-hip-runtime" and f.path == "src/main.hip" for f in r1.fixes)
    assert any(f.kind == "include-renamed" and "hip_utils.cuh" in f.after for f in r1.fixes)


EXPECTED_STATUS = {   # ROCm 7.2 for gfx942, after the port's fixes (64-bit masks, cg::reduce header, ...)
    "reduce_intrinsics": {"src/reduce.hip": "ok", "src/ballot_count.hip": "ok", "src/main.hip": "ok",
                          "src/count_main.hip": "ok"},
    "coop_streams": {"kernels/grid_sum.hip": "ok", "kernels/tile_reduce.hip": "ok",
                     "kernels/histogram.hip": "ok", "app/pipeline.hip": "ok", "app/graph_capture.hip": "ok"},
    "blas_atomics": {"src/gemm_cublas.hip": "ok", "src/sort_thrust.hip": "ok",
                     "src/lane_ptx.hip": "inline-ptx", "src/texture_lookup.hip": "texture-surface",
                     "src/atomics_scan.hip": "ok", "src/driver_api.cpp": "ok", "src/device_query.cpp": "ok",
                     "src/main.hip": "ok"},
}


@pytest.mark.parametrize("base", BASES)
def test_compile_status_and_first_error_category(ported, base):
    res = ported[0][base]
    _offline_only(res)
    got = {u.path: u.category for u in res.units}
    assert got == EXPECTED_STATUS[base]
    for u in res.units:
        assert (u.status == "ok") == (u.category == "ok")
        if u.status != "ok":
            assert u.error and u.error_file and u.error_line > 0
    assert not res.compat_used


def test_links_where_there_is_a_main(ported):
    _offline_only(ported[0]["reduce_intrinsics"])
    links = {(b, link.main): link for b in BASES for link in ported[0][b].links}
    assert links[("reduce_intrinsics", "src/count_main.hip")].status == "ok"      # needs only ballot_count
    assert links[("reduce_intrinsics", "src/main.hip")].status == "ok"   # reduce.hip compiles after the fixes
    blas = links[("blas_atomics", "src/main.hip")]
    assert "-lhipblas" in blas.command            # a library used in compiled code is linked
    if blas.status != "ok":                        # the offline root ships hipBLAS's .so without rocBLAS's
        assert blas.category == "link-undefined" and "rocblas" in blas.error
    else:
        prog = Path(ported[0]["blas_atomics"].out) / blas.program
        assert prog.is_file() and prog.read_bytes()[:4] == b"\x7fELF"
    assert "-lhipblas" not in links[("reduce_intrinsics", "src/main.hip")].command


def test_libraries_needed(ported):
    assert ported[0]["blas_atomics"].libraries == ["cublas", "thrust"]
    assert ported[0]["reduce_intrinsics"].libraries == []


def test_reports_json_and_html(ported):
    res = ported[0]["coop_streams"]
    _offline_only(res)
    data = json.loads(Path(res.report_json).read_text())
    assert data["summary"]["compiled"] == res.n_compiled == 5
    assert data["scan_config"]["device_pass"]["__HIP_DEVICE_COMPILE__"] == "1"
    assert {t["severity"] for t in data["traps"]} <= {"error", "warning", "info"}
    assert all(t["message"] and t["fix"] for t in data["traps"])
    page = Path(res.report_html).read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "Plotly" not in page and "<script" not in page and page.count("<svg") >= 2   # inline SVG, no JS
    assert len(page.encode()) < 500_000
    assert page.index("Traps in the project's own code") < page.index("Translation units")
    text = re.sub(r"<[^>]+>", "", page)          # what the reader sees (long names carry <wbr> break points)
    assert "kernels/grid_sum.hip:12" in text


def test_baseline_plain_hipify_compiles_fewer(ported, tmp_path):
    from rocmlab.port.baseline import plain_hipify

    res = ported[0]["reduce_intrinsics"]
    base = plain_hipify(SAMPLES / "reduce_intrinsics", tmp_path / "plain", ("gfx942",), workers=2)
    assert len(base.units) == res.n_units == 4
    assert all("/hip/" in u.path for u in base.units)           # torch's own layout
    assert base.n_compiled < res.n_compiled
    assert base.categories().get("missing-hip-api", 0) >= 1      # hipMalloc undeclared: no implicit include


def test_gfx90a_compiles_textures_gfx942_does_not(tmp_path):
    """ROCm 7.2: gfx90a (MI200) has image instructions, gfx942 (MI300X) has none."""
    tc = _toolchain_or_skip()
    if not tc.supports("gfx90a"):
        pytest.skip("no gfx90a here")
    res = port(SAMPLES / "blas_atomics", tmp_path / "hip", "gfx90a", workers=2)
    _offline_only(res)
    cats = {u.path: u for u in res.units}
    assert cats["src/texture_lookup.hip"].status == "ok"
    assert any("--offload-arch=gfx90a" in c for c in cats["src/main.hip"].command)


def test_report_renders_in_a_real_browser(ported):
    """The HTML report opened from disk in Chromium with JavaScript off and no network: charts and tables readable."""
    import shutil

    pw = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    res = ported[0]["blas_atomics"]
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(java_script_enabled=False)
            page.route("http*://**", lambda route: route.abort())        # proves it needs no network
            page.goto(Path(res.report_html).as_uri())
            n_svg = page.locator("svg").count()
            text = page.inner_text("body")
        finally:
            browser.close()
    assert n_svg >= 2
    assert "src/gemm_cublas.hip" in text and "hipBLAS" in text and "rocThrust" in text


def test_notebook_view(ported, capsys):
    pytest.importorskip("IPython")
    from rocmlab.course.labs.lab02_porting_cuda_to_hip import port_view as notebook

    assert set(BASES) <= set(notebook.samples())
    res = notebook.show(ported[0]["coop_streams"])
    out = capsys.readouterr().out
    assert "translation units compiled after rocmlab port (coop_streams, gfx942): 5/5" in out
    assert "[cpu:" in out or "[cuda:" in out or "[rocm:" in out       # the figure names its backend
    assert res is ported[0]["coop_streams"]
    with pytest.raises(ValueError, match="no sample code base"):
        notebook.sample_path("nope")


def test_traps_point_back_at_the_cuda_source(ported):
    for b in BASES:
        for t in ported[0][b].traps:
            if t.severity == "info" or not t.compiled or t.src_line == 0 and t.severity == "warning":
                continue                    # warnings from the port's own fixes sit on changed lines
            assert t.src_line > 0, t
            src_line = (SAMPLES / b / t.src_path).read_text().split("\n")[t.src_line - 1]
            assert "expect-trap" in src_line and t.rule in src_line


def test_notebook_view_without_a_compiler(tmp_path, monkeypatch, capsys):
    pytest.importorskip("IPython")
    from rocmlab.course.labs.lab02_porting_cuda_to_hip import port_view as notebook
    from rocmlab.port import unit_build

    def none(kind="auto"):
        raise RuntimeError("no HIP compiler found (rocm, offline): install ...")

    monkeypatch.setattr(unit_build, "choose_toolchain", none)
    res = notebook.port_view("reduce_intrinsics", out=tmp_path / "o")
    assert not res.compiled and res.units == []
    assert "cannot compile on this machine" in capsys.readouterr().out
    assert any(t.rule == "cuda-arch-guard" for t in res.traps)
