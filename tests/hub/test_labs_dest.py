"""`rocmlab labs DEST` never writes through a symbolic link inside DEST (issue 37): a link at DEST/exercises or at
a notebook's name (dangling too) is reported and skipped, its target untouched; bad names exit 2 with a message.
The control: the same copy into a fresh DEST writes every file."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from rocmlab import catalog

ROOT = Path(__file__).resolve().parents[2]


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "rocmlab.cli", "labs", *args], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120, cwd=cwd)


def test_links_inside_dest_are_skipped_never_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    canary = victim / "canary.txt"
    canary.write_text(secrets.token_hex(8))
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "exercises").symlink_to(victim)                                # a folder of the labs is a link
    dangling = tmp_path / f"created-through-dangling-{secrets.token_hex(3)}.ipynb"
    (dest / "00-setup.ipynb").symlink_to(dangling)                         # a notebook is a dangling link
    before = sorted(p.name for p in victim.iterdir())
    r = cli(str(dest))
    assert r.returncode == 0, r.stderr
    assert f"skipped {dest / 'exercises'}: it is a symbolic link" in r.stderr, r.stderr
    assert f"skipped {dest / '00-setup.ipynb'}: it is a symbolic link" in r.stderr, r.stderr
    assert sorted(p.name for p in victim.iterdir()) == before and not dangling.exists()
    assert (dest / "01-hip-programming-model.ipynb").is_file()            # the rest was copied
    # the control: a fresh DEST gets the exercises folder and the notebook
    fresh = tmp_path / "fresh"
    copied, kept = catalog.copy_labs(fresh)
    n_exercises = sum(1 for p in copied if p.is_relative_to(fresh / "exercises"))
    assert n_exercises > 0 and (fresh / "00-setup.ipynb").is_file() and not kept
    assert f"copied {len(copied) - n_exercises - 1} files" in r.stdout, r.stdout


def test_bad_dest_names_exit_2_with_the_fix(tmp_path):
    for bad, words in (("", "DEST is empty"), ("x" * 300, "at most 255 bytes"), ("  ", "DEST is empty")):
        r = cli(bad, cwd=tmp_path)
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, (bad[:10], r.stderr)
    assert list(tmp_path.iterdir()) == []
    r = cli("x" * 200, cwd=tmp_path)                                       # the control: a long but legal name
    assert r.returncode == 0 and (tmp_path / ("x" * 200) / "00-setup.ipynb").is_file(), r.stderr
