"""The hand-in exchange without a hub: permissions between two real uids, latest-graded-once, resumable
grading, links refused, and the CLI (`rocmlab handin`, `rocmlab grade --exchange`).

The uid tests fork, drop to uid/gid 20001 or 20002 (no /etc/passwd entry is needed, nothing is added to the
system) and try what a learner's process could try. They need root, as the hub does on a workshop node.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rocmlab.grader.spec import load
from tests.helpers.uid_child import run_as
from rocmlab.workshop import exchange as xc

ROOT = Path(__file__).resolve().parents[2]
A, B = 20001, 20002
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as two different uids (as a hub does)")


@pytest.fixture
def exch():
    """An exchange in a world-traversable temp folder (pytest's tmp_path is 0700, closed to other uids)."""
    base = Path(tempfile.mkdtemp(prefix="rocmlab-exchange-"))
    os.chmod(base, 0o755)
    yield base / "exchange"
    shutil.rmtree(base, ignore_errors=True)


def as_uid(uid: int, fn) -> str:
    """Run ``fn()`` in a forked child as uid:gid ``uid`` with no extra groups; its return value or 'DENIED'."""
    def child() -> str:
        try:
            return str(fn())
        except PermissionError:
            return "DENIED"
        except Exception as exc:
            return f"ERROR {type(exc).__name__}: {exc}"

    return run_as(uid, child)


@root_only
def test_a_learner_cannot_read_or_list_another_learners_hand_in(exch):
    xc.prepare_learner(exch, "alice", uid=A, gid=A)
    xc.prepare_learner(exch, "bob", uid=B, gid=B)
    secret = f"// alice {random.getrandbits(64):x}\n".encode()
    path = as_uid(A, lambda: xc.write_handin(exch, "alice", "vector-add", secret))
    assert path.startswith(str(exch / "inbound" / "alice" / "vector-add")), path
    p = Path(path)
    assert p.read_bytes() == secret and p.stat().st_uid == A and (p.stat().st_mode & 0o777) == 0o600
    # the control: alice reads her own hand-in back
    assert as_uid(A, lambda: Path(path).read_bytes().decode()) == secret.decode()
    # bob cannot read it, list alice's folder, list inbound/, or hand in under alice's name
    assert as_uid(B, lambda: Path(path).read_bytes()) == "DENIED"
    assert as_uid(B, lambda: os.listdir(exch / "inbound" / "alice")) == "DENIED"
    assert as_uid(B, lambda: os.listdir(exch / "inbound")) == "DENIED"
    assert "belongs to another user" in as_uid(B, lambda: xc.write_handin(exch, "alice", "x", b"int main(){}"))
    assert as_uid(B, lambda: os.listdir(exch / "grades")) == "DENIED"


@root_only
def test_feedback_is_readable_by_its_learner_only(exch):
    xc.prepare_learner(exch, "alice", uid=A, gid=A)
    xc.prepare_learner(exch, "bob", uid=B, gid=B)
    sol = load("vector-add").solution.encode()
    as_uid(A, lambda: xc.write_handin(exch, "alice", "vector-add", sol))
    as_uid(B, lambda: xc.write_handin(exch, "bob", "vector-add", sol))
    # grading without the grader: the feedback step alone, on a result as grade_folder writes it
    out = exch / "grades"
    handins = [h for h in xc.latest_handins(exch, "vector-add")]
    for h in handins:
        (out / "feedback" / h.learner).mkdir(parents=True)
        (out / "feedback" / h.learner / "vector-add.txt").write_text(f"for {h.learner}\n")
        (out / "feedback" / h.learner / "vector-add.html").write_text(f"<p>for {h.learner}</p>")
        (out / "results").mkdir(exist_ok=True)
        (out / "results" / f"{h.learner}__vector-add.json").write_text(json.dumps({"earned": 5, "possible": 10}))
    assert xc.return_feedback(exch, out, handins) == 2
    fb = exch / "outbound" / "feedback"
    assert as_uid(A, lambda: xc.feedback("vector-add", "alice", exch).text) == "for alice\n"
    assert as_uid(B, lambda: (fb / "alice" / "vector-add.txt").read_text()) == "DENIED"
    assert as_uid(B, lambda: os.listdir(fb)) == "DENIED"
    assert as_uid(A, lambda: (fb / "alice" / "vector-add.txt").write_text("forged")) == "DENIED"


def test_the_latest_hand_in_is_graded_once_and_grading_resumes(exch):
    """Three learners; alice hands in twice (starter, then solution). Grading takes each latest once,
    a rerun grades nothing, a crash (a lost result) is made good, and a new hand-in is graded."""
    ex = load("vector-add")
    for name in ("alice", "bob", "carol"):
        xc.prepare_learner(exch, name)
    first = xc.write_handin(exch, "alice", "vector-add", ex.starter.encode(), ".cu")
    latest = xc.write_handin(exch, "alice", "vector-add", ex.solution.encode())
    xc.write_handin(exch, "bob", "vector-add", ex.starter.encode(), ".cu")
    xc.write_handin(exch, "carol", "vector-add", ex.solution.encode())
    assert first.name < latest.name                       # stamps sort in hand-in order

    c = xc.grade_exchange(exch, ["vector-add"], workers=2, progress=False)
    assert (c["learners"], c["handins"], c["graded"], c["returned"]) == (3, 4, 3, 3), c
    out = exch / "grades"
    results = {p.stem.split("__")[0]: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    assert sorted(results) == ["alice", "bob", "carol"]
    info = json.loads((exch / "outbound/feedback/alice/vector-add.json").read_text())
    assert info["handin"] == latest.name and info["count"] == 2
    # the solution earns what the starter does not (the control: bob handed in the starter)
    assert results["alice"]["earned"] == results["carol"]["earned"] > results["bob"]["earned"]
    rows = (out / "grades.csv").read_text().splitlines()
    assert rows[0].startswith("assignment,duedate,timestamp,student_id") and len(rows) == 4
    assert first.exists() and latest.exists()             # nothing handed in is ever removed

    again = xc.grade_exchange(exch, ["vector-add"], workers=2, progress=False)
    assert (again["graded"], again["skipped"]) == (0, 3)

    (out / "results" / "carol__vector-add.json").unlink()     # as if grading died before carol's result
    (exch / "outbound/feedback/carol/vector-add.json").unlink()
    newest = xc.write_handin(exch, "bob", "vector-add", ex.solution.encode())
    resumed = xc.grade_exchange(exch, ["vector-add"], workers=2, progress=False)
    assert (resumed["graded"], resumed["skipped"]) == (2, 1), resumed
    assert json.loads((exch / "outbound/feedback/bob/vector-add.json").read_text())["handin"] == newest.name
    assert json.loads((exch / "outbound/feedback/carol/vector-add.json").read_text())["earned"] == \
        results["carol"]["earned"]
    assert len((out / "grades.csv").read_text().splitlines()) == 4      # still one row per learner


def test_links_and_hidden_files_in_a_learners_folder_are_not_collected(exch):
    xc.prepare_learner(exch, "mallory")
    folder = exch / "inbound" / "mallory" / "vector-add"
    folder.mkdir()
    secret = exch.parent / "secret.hip"
    secret.write_text("// not mallory's\n")
    (folder / "99999999T999999999999Z-zzzzzz.hip").symlink_to(secret)
    (folder / ".handin-half.tmp").write_text("half")
    assert xc.latest_handins(exch, "vector-add") == []
    real = xc.write_handin(exch, "mallory", "vector-add", b"// mine\n")      # the control
    assert [h.path for h in xc.latest_handins(exch, "vector-add")] == [real]
    got = xc.collect(exch, "vector-add", exch / "grades")
    assert (exch / "grades/submissions/mallory/vector-add.hip").read_bytes() == b"// mine\n" and len(got) == 1


def test_clear_errors(exch, tmp_path, monkeypatch):
    monkeypatch.delenv("ROCMLAB_EXCHANGE", raising=False)
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    f = tmp_path / "k.hip"
    f.write_text("int main() { return 0; }\n")
    with pytest.raises(xc.ExchangeError, match="set ROCMLAB_EXCHANGE"):
        xc.handin("vector-add", f, learner="alice")
    with pytest.raises(xc.ExchangeError, match="no hand-in folder .*rocmlab handin --prepare alice"):
        xc.handin("vector-add", f, learner="alice", exchange=exch)
    xc.prepare_learner(exch, "alice")
    for bad in ("../bob", "a/b/c", "x" * 300, "", "/abs", "a//b", ".hidden", "a/.."):
        with pytest.raises(xc.ExchangeError, match="item id .* is not usable .*: give one or two names"):
            xc.handin(bad, f, learner="alice", exchange=exch)
    (tmp_path / "empty.hip").write_text("  \n")
    with pytest.raises(xc.ExchangeError, match="is empty"):
        xc.handin("vector-add", tmp_path / "empty.hip", learner="alice", exchange=exch)
    with pytest.raises(xc.ExchangeError, match="not usable as a folder name"):
        xc.handin("vector-add", f, learner="../bob", exchange=exch)
    with pytest.raises(xc.ExchangeError, match="nobody has handed in vector-add"):
        xc.grade_exchange(exch, ["vector-add"], progress=False)
    with pytest.raises(xc.ExchangeError, match="not graded your hand-in"):
        xc.feedback("vector-add", "alice", exch)
    assert xc.handin("vector-add", f, learner="alice", exchange=exch).is_file()       # the control


def test_cli_handin_and_grade_exchange(exch, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), JUPYTERHUB_USER="dana", ROCMLAB_EXCHANGE=str(exch))

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "rocmlab.cli", *args], env=env, capture_output=True,
                              text=True, timeout=300)

    r = cli("handin", "--prepare", "dana")
    assert r.returncode == 0, r.stderr
    sol = tmp_path / "vector_add.hip"
    sol.write_text(load("vector-add").solution)
    r = cli("handin", "vector-add", str(sol))
    assert r.returncode == 0 and "handed in" in r.stdout, r.stderr
    r = cli("handin", "vector-add", "--feedback")
    assert r.returncode == 2 and "not graded your hand-in" in r.stderr
    r = cli("grade", "--exchange", str(exch), "--exercise", "vector-add", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "1 learners, 1 hand-ins" in r.stdout and "1 feedback returned" in r.stdout, r.stdout
    r = cli("handin", "vector-add", "--feedback")
    assert r.returncode == 0 and re.search(r"points( \(instructor-graded\))? for hand-in", r.stdout) \
        and "compiles" in r.stdout, r.stdout + r.stderr
    r = cli("grade", str(tmp_path), "--exchange", str(exch), "--exercise", "vector-add")
    assert r.returncode == 2 and "not both" in r.stderr


@root_only
def test_a_planted_latest_name_or_an_edited_hand_in_is_not_graded_as_latest(exch):
    """As the learner's own uid: plant ``99991231T...-ffffff.hip`` and edit an earlier hand-in; the exchange's
    record (the kernel's change time, the grader's ledger) picks the real latest and reports both. Controls:
    a real later hand-in is taken, and with the stamp check off the planted name would have won."""
    xc.prepare_learner(exch, "mallory", uid=A, gid=A)
    tag = os.urandom(4).hex()
    first = as_uid(A, lambda: xc.write_handin(exch, "mallory", "vector-add", f"// first {tag}\n".encode()))
    second = Path(as_uid(A, lambda: xc.write_handin(exch, "mallory", "vector-add", f"// second {tag}\n".encode())))
    planted = second.parent / "99991231T235959999999Z-ffffff.hip"
    as_uid(A, lambda: planted.write_text(f"// planted {tag}\n"))
    refused: list = []
    [h] = xc.latest_handins(exch, "vector-add", refused)
    assert h.path == second and h.path.read_text() == f"// second {tag}\n"
    assert [(r.name, "a planted name" in r.reason) for r in refused] == [(planted.name, True)]
    # the control: ordered by name alone (what the exchange did before), the planted file is "latest"
    assert sorted(p.name for p in second.parent.iterdir())[-1] == planted.name

    out = exch / "grades"
    assert [h.path for h in xc.collect(exch, "vector-add", out)] == [second]
    # the learner edits the collected hand-in in place, keeping its name (and resetting its mtime)
    st = second.stat()
    as_uid(A, lambda: (second.write_text(f"// edited {tag}\n"), os.utime(second, ns=(st.st_atime_ns, st.st_mtime_ns))))
    xc.STAMP_SLACK_S, slack = 1e9, xc.STAMP_SLACK_S         # only the ledger can tell now
    try:
        refused = []
        got = xc.collect(exch, "vector-add", out, refused)
    finally:
        xc.STAMP_SLACK_S = slack
    assert [h.path.name for h in got] == [Path(first).name], got          # the earlier hand-in, as handed in
    assert any(r.name == second.name and "changed after the grader first collected it" in r.reason for r in refused)
    assert (out / "submissions/mallory/vector-add.hip").read_text() == f"// first {tag}\n"
    # the change time alone tells too, once the slack has passed (simulated: the stamp is an hour old)
    assert "changed 3600 s after" in xc.stamp_problem(second.name, xc.stamp_time(second.name) + 3600)
    assert xc.stamp_problem(second.name, xc.stamp_time(second.name) + 0.5) == ""       # the control
    # a real hand-in made later is the latest again (the control for the refusals)
    third = Path(as_uid(A, lambda: xc.write_handin(exch, "mallory", "vector-add", b"// third\n")))
    assert [h.path for h in xc.collect(exch, "vector-add", out)] == [third]


def test_item_ids_with_a_slash_and_every_answer_suffix_round_trip(exch, tmp_path):
    """The id rule the other graded items rely on: 'LAB/TASK' ids nest in inbound/ and are flat ('+') in
    every file the exchange writes; .py and .json answers keep their suffix."""
    xc.prepare_learner(exch, "ana")
    item = f"08-mi300x-package/xcd-remap-{random.randrange(10**6)}"
    for suffix, text in ((".py", "def remap(i):\n    return i\n"), (".json", '{"answer": 42}\n')):
        src = tmp_path / f"answer{suffix}"
        src.write_text(text)
        p = xc.handin(item, src, learner="ana", exchange=exch)
        assert p.parent == exch / "inbound" / "ana" / item and p.suffix == suffix
        [h] = xc.collect(exch, item, exch / "grades")
        assert h.path == p
        flat = xc.flat_item(item)
        assert "/" not in flat and flat.replace("+", "/") == item
        assert (exch / "grades" / "submissions" / "ana" / f"{flat}{suffix}").read_text() == text
    assert xc.check_item("vector-add") == "vector-add"
    with pytest.raises(xc.ExchangeError, match="not usable"):
        xc.flat_item("a+b")                     # '+' is the flat form's separator, never part of an id
