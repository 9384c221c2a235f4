"""``rocmlab handin`` and the instructor CLIs under bad input (issue 31): every case a clear message and exit 2,
never a traceback; each with its control (the good input that works)."""

from __future__ import annotations

import os
import resource
import time

import pytest

from rocmlab import cli
from rocmlab.workshop import exchange as xc

EX = "vector-add"


@pytest.fixture
def exch(tmp_path, monkeypatch):
    root = tmp_path / "exchange"
    xc.prepare_learner(root, "alice")
    xc.prepare_learner(root, "bob")
    monkeypatch.setenv("ROCMLAB_EXCHANGE", str(root))
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    return root


def _handin(capsys, *argv) -> tuple[int, str]:
    rc = cli.main(["handin", *argv])
    cap = capsys.readouterr()
    return rc, cap.out + cap.err


def test_feedback_id_is_validated(exch, capsys):
    fb = exch / "outbound" / "feedback" / "bob"
    (fb / f"{EX}.json").write_text('{"earned": 9, "possible": 10}')
    (fb / f"{EX}.txt").write_text("BOB'S FEEDBACK")
    (fb / f"{EX}.html").write_text("")
    for bad in (f"../bob/{EX}", "x" * 300, "/etc/passwd", "a\nb"):
        rc, out = _handin(capsys, bad, "--feedback")
        assert rc == 2 and "no exercise" in out and "Traceback" not in out and "BOB'S" not in out, out
    # control: the learner's own, valid id reaches their own folder
    rc, out = _handin(capsys, EX, "--feedback")
    assert rc == 2 and "no feedback for vector-add yet" in out


def test_huge_sparse_file_is_refused_before_reading(exch, tmp_path, capsys):
    big = tmp_path / "big.hip"
    with open(big, "wb") as f:
        f.truncate(2 << 30)                     # 2 GB, sparse: costs nothing on disk
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.monotonic()
    rc, out = _handin(capsys, EX, str(big))
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert rc == 2 and "byte limit" in out, out
    assert time.monotonic() - t < 5 and grew_mb < 64, (time.monotonic() - t, grew_mb)
    # control: a real source is handed in
    ok = tmp_path / "ok.hip"
    ok.write_text("__global__ void k() {}\n")
    rc, out = _handin(capsys, EX, str(ok))
    assert rc == 0 and "handed in" in out, out


def test_binary_and_non_utf8_files_are_refused(exch, tmp_path, capsys):
    elf = tmp_path / "prog.hip"
    elf.write_bytes(b"\x7fELF\x02\x01\x01\x00" + os.urandom(64))
    rc, out = _handin(capsys, EX, str(elf))
    assert rc == 2 and "binary file" in out, out
    latin = tmp_path / "latin.hip"
    latin.write_bytes("// café\nint main() {}\n".encode("latin-1"))
    rc, out = _handin(capsys, EX, str(latin))
    assert rc == 2 and "not UTF-8" in out, out
    fifo = tmp_path / "fifo.hip"
    os.mkfifo(fifo)
    rc, out = _handin(capsys, EX, str(fifo))                  # would block a plain read forever
    assert rc == 2 and "not a regular file" in out, out
    assert not list((exch / "inbound" / "alice").rglob("*.hip"))      # nothing was handed in
    good = tmp_path / "good.hip"                                        # control
    good.write_text("// café\n__global__ void k() {}\n")
    assert _handin(capsys, EX, str(good))[0] == 0


def test_grade_exchange_cli_bad_input(exch, tmp_path, capsys):
    f = tmp_path / "a-file"
    f.write_text("")
    rc = cli.main(["grade", "--exchange", str(exch), "--exercise", EX, "--out", str(f), "--no-progress"])
    assert rc == 2 and "not a folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["grade", "--exchange", str(exch), "--exercise", EX, "--workers", "0"])
    assert e.value.code == 2 and "give 1 to 64" in capsys.readouterr().err
