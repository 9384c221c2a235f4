"""Bad input to rocmlab port: each case gives a clear message, and SRC is never written."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from rocmlab.cli import main
from rocmlab.port import PortInputError, port

KERNEL = """#include <cuda_runtime.h>
__global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
"""


def digest(root: Path) -> dict:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            if p.is_symlink() or not p.is_file():
                out[str(p.relative_to(root))] = "link:" + os.readlink(p) if p.is_symlink() else "special"
            else:
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def project(tmp_path):
    src = tmp_path / "proj"
    (src / "k").mkdir(parents=True)
    (src / "k" / "axpy.cu").write_text(KERNEL)
    (src / "README.txt").write_bytes(b"\xff\xfe not utf-8, not source: copied as is\n")
    return src


def test_empty_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(PortInputError, match="no CUDA sources found"):
        port(tmp_path / "empty", tmp_path / "out", compile=False)
    assert not (tmp_path / "out").exists()


def test_missing_and_file_src(tmp_path):
    with pytest.raises(PortInputError, match="does not exist"):
        port(tmp_path / "nope", tmp_path / "out", compile=False)
    (tmp_path / "one.cu").write_text(KERNEL)
    with pytest.raises(PortInputError, match="is a file, not a folder"):
        port(tmp_path / "one.cu", tmp_path / "out", compile=False)


def test_invalid_utf8_is_skipped_with_its_position(project, tmp_path):
    bad = "// caf\xe9\n__global__ void k() {}\n".encode("latin-1")
    (project / "k" / "latin1.cu").write_bytes(bad)
    before = digest(project)
    res = port(project, tmp_path / "out", compile=False)
    probs = {p.path: p for p in res.problems}
    assert probs["k/latin1.cu"].kind == "invalid-utf8"
    assert "byte 0xe9" in probs["k/latin1.cu"].message and "line 1" in probs["k/latin1.cu"].message
    assert "iconv" in probs["k/latin1.cu"].fix
    assert (tmp_path / "out" / "k" / "axpy.hip").is_file()            # the rest is ported
    assert not (tmp_path / "out" / "k" / "latin1.hip").exists()
    assert (tmp_path / "out" / "README.txt").read_bytes() == (project / "README.txt").read_bytes()
    assert digest(project) == before


def test_unreadable_file(project, tmp_path, monkeypatch):
    secret = project / "k" / "secret.cu"
    secret.write_text(KERNEL)
    real = Path.read_bytes

    def read_bytes(self):
        if self.name == "secret.cu":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    res = port(project, tmp_path / "out", compile=False)
    p = next(p for p in res.problems if p.path == "k/secret.cu")
    assert p.kind == "unreadable" and "permission denied" in p.message and "chmod" in p.fix


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_by_mode(project, tmp_path):
    secret = project / "k" / "secret.cu"
    secret.write_text(KERNEL)
    secret.chmod(0)
    try:
        res = port(project, tmp_path / "out", compile=False)
    finally:
        secret.chmod(0o644)
    assert any(p.path == "k/secret.cu" and p.kind == "unreadable" for p in res.problems)


def test_symlink_loops(project, tmp_path):
    (project / "k" / "again").symlink_to("..", target_is_directory=True)      # a folder loop
    (project / "self.cu").symlink_to("self.cu")                                # a link to itself
    (project / "gone.cu").symlink_to("does-not-exist.cu")
    before = digest(project)
    res = port(project, tmp_path / "out", compile=False)
    kinds = {p.path: p.kind for p in res.problems}
    assert kinds["k/again"] == "symlink-loop"
    assert kinds["self.cu"] == "symlink-loop"
    assert kinds["gone.cu"] == "broken-symlink"
    assert [f["source"] for f in res.files] == ["k/axpy.cu"]                   # ported once, no endless walk
    assert digest(project) == before


def test_fifo_is_skipped(project, tmp_path):
    os.mkfifo(project / "pipe.cu")
    res = port(project, tmp_path / "out", compile=False)                     # must not block reading it
    assert any(p.path == "pipe.cu" and p.kind == "not-a-file" for p in res.problems)


@pytest.mark.parametrize("where", ["same", "inside", "parent"])
def test_out_overlapping_src(project, where):
    out = {"same": project, "inside": project / "hip-out", "parent": project.parent}[where]
    before = digest(project)
    with pytest.raises(PortInputError, match="overlaps the source folder"):
        port(project, out, compile=False)
    assert digest(project) == before
    assert not (project / "hip-out").exists()


def test_report_inside_src_refused_before_writing(project, tmp_path):
    before = digest(project)
    with pytest.raises(PortInputError, match="inside SRC"):
        port(project, tmp_path / "out", compile=False, report=str(project / "report.html"))
    assert digest(project) == before
    assert not (tmp_path / "out").exists()


def test_non_empty_out_needs_force(project, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    with pytest.raises(PortInputError, match="not empty"):
        port(project, out, compile=False)
    assert (out / "precious.txt").read_text() == "keep me"
    port(project, out, compile=False, force=True)
    assert not (out / "precious.txt").exists()
    port(project, out, compile=False)          # an earlier port is replaced without --force


def test_bad_arch(project, tmp_path):
    with pytest.raises(PortInputError, match="unknown --target"):
        port(project, tmp_path / "out", "sm_90", compile=False)


def test_cli_bad_input_exit_2(project, tmp_path, capsys):
    assert main(["port", str(project), "--out", str(project / "x"), "--no-compile"]) == 2
    assert "overlaps the source folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["port", str(tmp_path / "empty"), "--out", str(tmp_path / "o"), "--no-compile"]) == 2
    assert "no CUDA sources found" in capsys.readouterr().err


def test_cli_no_compile_writes_report(project, tmp_path, capsys):
    rc = main(["port", str(project), "--out", str(tmp_path / "o"), "--no-compile", "--report",
               str(tmp_path / "r" / "port.html")])
    assert rc == 0
    text = capsys.readouterr().out
    assert "report:" in text and (tmp_path / "r" / "port.json").is_file()
    assert (tmp_path / "o" / "k" / "axpy.hip").read_text().count("hip/hip_runtime.h") == 1


def test_cli_compiles_and_exit_status(project, tmp_path, capsys):
    from rocmlab.port.unit_build import choose_toolchain

    try:
        choose_toolchain()
    except RuntimeError as exc:
        pytest.skip(f"no HIP toolchain: {exc}")
    assert main(["port", str(project), "--out", str(tmp_path / "ok"), "-j", "1"]) == 0
    assert "compiled 1/1 translation units (100%)" in capsys.readouterr().out
    (project / "k" / "broken.cu").write_text("__global__ void k(float* x) { x[0] = undefined_thing; }\n")
    assert main(["port", str(project), "--out", str(tmp_path / "bad"), "-j", "2"]) == 1
    out = capsys.readouterr().out
    assert "FAILED k/broken.hip [compile-error]" in out and "undefined_thing" in out
