"""The exchange race (issue 31): a learner swaps their hand-in folder, or their latest hand-in, for a symbolic
link to another learner's hand-in while the grader (root) collects. Two real uids, a racing process that runs
as the attacker's uid, many collects: the grader never collects the victim's file as the attacker's.

The control runs the same race against a collector that opens hand-ins by path (what a plain ``open`` does):
it collects the victim's file."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from rocmlab.workshop import exchange as xc

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists(),
                                reason="needs root (two real uids through setpriv) and /usr/bin/python3")

ITERATIONS = int(os.environ.get("ROCMLAB_RACE_ITERATIONS", "3000"))
EX = "vector-add"
VICTIM_DATA = b"// the victim's own work: VICTIM\n"
ATTACKER_DATA = b"// the attacker's work: ATTACKER\n"

# Runs as the attacker's uid: swaps inbound/attacker/EX for a link to the victim's folder, and plants a newer
# "hand-in" that is a link to the victim's file, as fast as it can, until killed.
RACER = textwrap.dedent("""
    import os, sys
    mine, victim_dir, victim_file = sys.argv[1], sys.argv[2], sys.argv[3]
    real = mine + ".real"
    planted = os.path.join(mine, "99999999T999999999999Z-zzzzzz.hip")
    while True:
        try:
            os.symlink(victim_file, planted)
        except OSError:
            pass
        try:
            os.rename(mine, real)
            os.symlink(victim_dir, mine)
            os.unlink(mine)
            os.rename(real, mine)
        except OSError:
            pass
        try:
            os.unlink(planted)
        except OSError:
            pass
""")


@pytest.fixture
def two_learners():
    """An exchange in a folder both uids can pass through, with 'victim' and 'attacker' owned by two fresh uids."""
    top = Path(tempfile.mkdtemp(prefix="rocmlab-race-", dir="/tmp"))
    os.chmod(top, 0o711)
    exch = top / "exchange"
    base = 1_900_000_000 + secrets.randbelow(1_000_000)
    uids = {"victim": base, "attacker": base + 1}
    try:
        for name, uid in uids.items():
            xc.prepare_learner(exch, name, uid=uid, gid=uid)
        victim_file = xc.write_handin(exch, "victim", EX, VICTIM_DATA)
        mine = xc.write_handin(exch, "attacker", EX, ATTACKER_DATA)
        for name, uid in uids.items():         # the hand-ins are the learners' own, as write_handin makes them
            for p in (exch / "inbound" / name / EX, *(exch / "inbound" / name / EX).iterdir()):
                os.chown(p, uid, uid)
        yield exch, uids, victim_file, mine
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _racer(exch: Path, uid: int, victim_file: Path) -> subprocess.Popen:
    mine = exch / "inbound" / "attacker" / EX
    return subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "/usr/bin/python3",
                             "-c", RACER, str(mine), str(victim_file.parent), str(victim_file)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _naive_collect(exch: Path) -> bytes | None:
    """The control: a collector that opens by path (follows links), as a plain open() would."""
    folder = exch / "inbound" / "attacker" / EX
    try:
        names = sorted(n for n in os.listdir(folder) if not n.startswith(".") and n.endswith(".hip"))
        return (folder / names[-1]).read_bytes() if names else None
    except OSError:
        return None


def _race(exch, uids, victim_file, collect_once, iterations) -> dict:
    racer = _racer(exch, uids["attacker"], victim_file)
    counts = {"wrong": 0, "own": 0, "nothing": 0}
    try:
        time.sleep(0.2)
        assert racer.poll() is None, "the racing process did not start"
        for _ in range(iterations):
            data = collect_once()
            key = "wrong" if data == VICTIM_DATA else "own" if data == ATTACKER_DATA else "nothing"
            counts[key] += 1
    finally:
        racer.kill()
        racer.wait()
    return counts


def _collect_attacker(exch: Path) -> bytes | None:
    got = {h.learner: d for h, d in xc._latest(exch, EX)}
    return got.get("attacker")


@pytest.fixture(params=["openat2", "openat-per-component"])
def resolver(request, monkeypatch):
    """Both ways of opening beneath a folder: the kernel's openat2, and the fallback for kernels without it."""
    if request.param == "openat-per-component":
        monkeypatch.setattr(xc, "_openat2_state", [None])
    else:
        monkeypatch.setattr(xc, "_openat2_state", [])
        fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.close(xc.open_beneath(fd, "tmp", os.O_RDONLY | os.O_DIRECTORY))
        finally:
            os.close(fd)
        if xc._openat2_state == [None]:
            pytest.skip("this kernel has no openat2")
    return request.param


def test_exchange_race_never_collects_another_learners_hand_in(two_learners, resolver, capsys):
    exch, uids, victim_file, _ = two_learners
    counts = _race(exch, uids, victim_file, lambda: _collect_attacker(exch), ITERATIONS)
    with capsys.disabled():
        print(f"\n[exchange race, {resolver}] {ITERATIONS} collects under a racing attacker uid: {counts}")
    assert counts["wrong"] == 0, counts
    assert counts["own"] > 0, f"the race never let the attacker's own hand-in through: {counts}"
    # end to end: collect() copies only the attacker's own hand-in (or nothing), never the victim's
    racer = _racer(exch, uids["attacker"], victim_file)
    try:
        for _ in range(200):
            xc.collect(exch, EX, exch / "grades")
            f = exch / "grades" / "submissions" / "attacker" / f"{EX}.hip"
            assert not f.exists() or f.read_bytes() == ATTACKER_DATA
    finally:
        racer.kill()
        racer.wait()


def test_exchange_race_control_a_path_based_collect_is_fooled(two_learners, capsys):
    exch, uids, victim_file, _ = two_learners
    # the swap held still (the state the racer passes through): a path-based collect reads the victim's file
    mine = exch / "inbound" / "attacker" / EX
    swap = ["setpriv", f"--reuid={uids['attacker']}", f"--regid={uids['attacker']}", "--clear-groups",
            "/usr/bin/python3", "-c", "import os, sys; os.rename(sys.argv[1], sys.argv[1] + '.real'); "
            "os.symlink(sys.argv[2], sys.argv[1])", str(mine), str(victim_file.parent)]
    subprocess.run(swap, check=True)
    assert _naive_collect(exch) == VICTIM_DATA
    assert _collect_attacker(exch) is None                  # the defence: nothing, never the victim's file
    os.unlink(mine)
    os.rename(str(mine) + ".real", mine)
    # and racing: how often a path-based collect is fooled (it depends on the scheduler; reported, not asserted)
    counts = _race(exch, uids, victim_file, lambda: _naive_collect(exch), ITERATIONS)
    with capsys.disabled():
        print(f"\n[exchange race, control: path-based collect] {ITERATIONS} collects: {counts}")


def test_a_hand_in_another_uid_owns_is_not_collected(two_learners):
    """A file in the learner's folder that the learner does not own (put there by someone else) is not theirs."""
    exch, uids, _, mine = two_learners
    os.chown(mine, uids["victim"], uids["victim"])
    assert _collect_attacker(exch) is None
    os.chown(mine, uids["attacker"], uids["attacker"])          # the control: their own file is collected
    assert _collect_attacker(exch) == ATTACKER_DATA


def test_open_beneath_refuses_links_and_escapes(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "d")
    (tmp_path / "d" / "flink").symlink_to(tmp_path / "d" / "f")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        f = xc.open_beneath(fd, "d/f", os.O_RDONLY)                # the control: a plain file opens
        os.close(f)
        for bad in ("link/f", "d/flink", "../" + tmp_path.name + "/d/f", "d/../d/f", "/etc/passwd"):
            with pytest.raises(OSError):
                os.close(xc.open_beneath(fd, bad, os.O_RDONLY))
    finally:
        os.close(fd)
