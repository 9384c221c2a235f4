"""Names and inputs that crashed a whole ``rocmlab grade`` run (issue 31), each with its control.

- a 250-character name, a latin-1 name, a newline in a name, a folder 1100 levels deep: the one bad entry gets a
  row with the reason, the rest of the run goes on (control: the same layout read by ``os.walk`` / written as
  UTF-8 raises, as the run did before);
- learner names that start with = + - @ are neutralised in grades.csv (control: the raw name is a formula);
- one learner with two source files is a clear, stable refusal (a rerun grades nothing);
- a fuzz test: random learner-controlled names (bytes, lengths, depths) through ``rocmlab grade``: every run
  finishes, with one row per learner.

The hand-ins are empty (graded at once as "empty": no compiler needed), so these tests are about names only.
"""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from rocmlab import cli
from rocmlab.grader import batch

EX = "vector-add"


def _grade(subs: Path, out: Path, *extra) -> tuple[int, str]:
    """``rocmlab grade`` in a subprocess (a crash shows as a traceback and a status, not as a test error)."""
    code = "import sys; from rocmlab import cli; sys.exit(cli.main(sys.argv[1:]))"
    p = subprocess.run([sys.executable, "-c", code, "grade", str(subs), "--exercise", EX, "--out", str(out),
                        "--no-progress", *extra], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    return p.returncode, p.stdout + p.stderr


@pytest.fixture(autouse=True)
def _remove_deep_folders(tmp_path):
    """pytest removes old temporary folders with shutil.rmtree, which recurses: a folder 1100 levels deep would
    crash a later session. rm -rf walks it without recursion."""
    yield
    subprocess.run(["rm", "-rf", str(tmp_path)], check=False)


def _rows(out: Path) -> list[dict]:
    with open(out / "grades.csv", newline="") as f:
        return list(csv.DictReader(f))


def _deep(parent: Path, levels: int, name: bytes = b"d") -> None:
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        os.close(os.open(b"vector-add.hip", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def test_bad_names_get_a_row_each_and_the_run_goes_on(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "good.hip").write_text("")
    (subs / ("x" * 250 + ".hip")).write_text("")                                 # 250 characters
    os.close(os.open(bytes(subs) + b"/caf\xe9.hip", os.O_WRONLY | os.O_CREAT, 0o644))   # latin-1, not UTF-8
    (subs / "new\nline.hip").write_text("")                                       # forges a CSV line
    (subs / "deep").mkdir()
    _deep(subs / "deep", 1100)                                                    # 1100 levels
    (subs / "longinside").mkdir()
    (subs / "longinside" / ("y" * 250 + ".hip")).write_text("")
    rc, log = _grade(subs, out)
    assert rc == 0, log
    assert "Traceback" not in log, log
    rows = _rows(out)
    assert len(rows) == 6, rows
    ids = {r["student_id"] for r in rows}
    assert "good" in ids and "deep" in ids and "longinside" in ids
    assert sum(i.startswith("badname-") for i in ids) == 3, ids    # too long, latin-1, newline
    assert all("\n" not in r["student_id"] for r in rows)
    assert len((out / "grades.csv").read_text().splitlines()) == 7  # one line per row: nothing forged
    deep = json.loads((out / "results" / f"deep__{EX}.json").read_text())
    assert "deeper than" in deep["checks"][0]["message"], deep["checks"][0]
    bad = [json.loads(p.read_text()) for p in (out / "results").glob("badname-*.json")]
    assert all("cannot be used as a learner id" in d["checks"][0]["message"] for d in bad)
    # controls: what crashed the run before
    with pytest.raises(RecursionError):
        for _ in os.walk(subs / "deep"):
            pass
    with pytest.raises(UnicodeEncodeError):
        os.fsdecode(b"caf\xe9").encode("utf-8")
    # a rerun grades nothing again: every refusal is stable
    rc, log = _grade(subs, out)
    assert rc == 0 and "0 graded now" in log, log


def test_formula_names_are_neutralised_in_the_gradebook(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    names = ["=HYPERLINK(\"x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "plain"]
    for n in names:
        (subs / f"{n}.hip").write_text("")
    rc, log = _grade(subs, out)
    assert rc == 0, log
    cells = {r["student_id"] for r in _rows(out)}
    assert cells == {"'" + n for n in names[:4]} | {"plain"}, cells
    by_check = {r["file"] for r in csv.DictReader(open(out / "grades_by_check.csv", newline=""))}
    assert by_check == cells
    # control: written as it is, the name is a formula a spreadsheet evaluates
    assert all(n[0] in "=+-@" for n in names[:4]) and batch.csv_text("plain") == "plain"
    assert batch.csv_text("\tx").startswith("\\t") and batch.csv_text("=1") == "'=1"


def test_two_sources_of_one_learner_are_a_stable_refusal(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "dup").mkdir()
    (subs / "dup" / "vector-add.hip").write_text("// one\n")
    (subs / "dup" / "vector-add.cu").write_text("// two\n")
    (subs / "twice.hip").write_text("")
    (subs / "twice.cu").write_text("")
    (subs / "solo.hip").write_text("")                                 # the control: one file, graded
    jobs = {j.learner: j for j in batch.find_jobs(subs, [EX])}
    assert "more than one source file" in jobs["dup"].refused
    assert "more than one thing" in jobs["twice"].refused
    assert not jobs["solo"].refused
    rc, log = _grade(subs, out)
    assert rc == 0 and "3 graded now" in log, log
    rc, log = _grade(subs, out)
    assert rc == 0 and "0 graded now" in log, log                       # stable: not graded again


def _random_name(rng: random.Random) -> bytes:
    kind = rng.choice(["bytes", "long", "formula", "ascii", "unicode", "ctrl"])
    if kind == "bytes":
        return bytes(rng.choice([b for b in range(1, 256) if b != 0x2F]) for _ in range(rng.randint(1, 40)))
    if kind == "long":
        return b"L" * rng.randint(100, 250)
    if kind == "formula":
        return rng.choice([b"=", b"+", b"-", b"@", b"\t"]) + b"cmd|x"
    if kind == "unicode":
        return "".join(rng.choice("éλ中\u202e\u200b😀a") for _ in range(rng.randint(1, 30))).encode()
    if kind == "ctrl":
        return b"a\x1b[2Kb\rc\n"
    return "".join(rng.choice("abcXYZ019._-@+ ,'\"") for _ in range(rng.randint(1, 20))).encode()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fuzz_learner_names_every_run_finishes_with_a_row_per_learner(tmp_path, seed):
    rng = random.Random(seed * 7919 + os.getpid())
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    made: set[bytes] = set()
    for _ in range(25):
        name = _random_name(rng)
        if name.startswith(b".") or name in made:
            continue
        is_dir = rng.random() < 0.5
        full = bytes(subs) + b"/" + name + (b"" if is_dir else rng.choice([b".hip", b".cu", b".cpp"]))
        stem = name
        if stem in {m for m in made}:
            continue
        try:
            if is_dir:
                os.mkdir(full)
                depth = rng.choice([0, 1, 3, 12, 300])
                if depth:
                    _deep(Path(os.fsdecode(full)), depth, rng.choice([b"d", b"\xff", b"x" * 200]))
                else:
                    os.close(os.open(full + b"/" + _random_name(rng)[:200] + b".hip", os.O_WRONLY | os.O_CREAT, 0o644))
            else:
                os.close(os.open(full, os.O_WRONLY | os.O_CREAT, 0o644))
        except OSError:
            continue          # a name the file system itself refuses (too long with its suffix)
        made.add(stem)
    (subs / "control.hip").write_text("")
    made.add(b"control")
    rc, log = _grade(subs, out, "--workers", "2")
    assert rc == 0 and "Traceback" not in log, log
    rows = _rows(out)
    assert len(rows) == len(made), (len(rows), len(made), log)
    assert len({r["student_id"] for r in rows}) == len(rows)
    assert all(r["student_id"].isprintable() and not r["student_id"].startswith(("=", "+", "-", "@"))
               for r in rows)
    assert {r["student_id"] for r in rows} >= {"control"}


@pytest.mark.parametrize("argv, words", [
    (["--workers", "0"], "give 1 to 64"),
    (["--workers", "-3"], "give 1 to 64"),
    (["--workers", "x"], "not a whole number"),
])
def test_grade_cli_rejects_bad_workers(tmp_path, capsys, argv, words):
    (tmp_path / "s").mkdir()
    with pytest.raises(SystemExit) as e:
        cli.main(["grade", str(tmp_path / "s"), "--exercise", EX, *argv])
    assert e.value.code == 2 and words in capsys.readouterr().err


def test_grade_cli_bad_out_and_assignment(tmp_path, capsys):
    subs = tmp_path / "s"
    subs.mkdir()
    (subs / "a.hip").write_text("")
    afile = tmp_path / "file"
    afile.write_text("x")
    assert cli.main(["grade", str(subs), "--exercise", EX, "--out", str(afile), "--no-progress"]) == 2
    assert "not a folder" in capsys.readouterr().err
    for content in (b"\x00\x01\x02binary", b"exercises: [unclosed", b"- just\n- a list\n", "name: é\xff".encode("latin-1")):
        y = tmp_path / "a.yaml"
        y.write_bytes(content)
        assert cli.main(["grade", str(subs), "--assignment", str(y), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "Traceback" not in err, err
    y.write_text("name: hw\nexercises: [vector-add]\n")                  # the control
    assert cli.main(["grade", str(subs), "--assignment", str(y), "--out", str(tmp_path / "o"), "--no-progress"]) == 0
