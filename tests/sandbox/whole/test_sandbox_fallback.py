"""The sandbox without bubblewrap (a container without user namespaces): another root file system is entered with
chroot and the uid drop (as root) or PRoot (as an ordinary user), and what a run must read is shown to it through a
view readable by its uid, whatever the modes of the folders above it (a checkout or cache under a 0700 ``/root``).
Each check has its control: the dropped uid cannot read the folder by its own path."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from rocmlab import sandbox
from rocmlab.sandbox import detection, uid_drop, view
from rocmlab.hip.toolchain import discover_offline

ROOT = discover_offline()
needs_root_user = pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop and chroot need root")
needs_offline_root = pytest.mark.skipif(ROOT is None, reason="no offline ROCm root (bash scripts/setup/20-rocm-root.sh)")


@pytest.fixture
def fallback(monkeypatch):
    monkeypatch.setenv("ROCMLAB_SANDBOX", "no-bwrap")
    yield sandbox.isolation()


@pytest.fixture
def locked():
    """A 0700 folder (as /root is) holding a readable folder with a file of fresh content, and a scratch folder."""
    top = tempfile.mkdtemp(prefix="rocmlab-locked-")
    os.chmod(top, 0o700)
    data = Path(top) / "pkg" / "include"
    data.mkdir(parents=True)
    token = secrets.token_hex(8)
    (data / "note.h").write_text(f"#define TOKEN {token}\n")
    scratch = Path(top) / "work"
    scratch.mkdir()
    yield Path(top), data, scratch, token
    shutil.rmtree(top, ignore_errors=True)


@needs_root_user
def test_dropped_uid_reads_a_folder_under_a_0700_parent_through_the_view(fallback, locked):
    top, data, scratch, token = locked
    assert fallback.level == sandbox.SETPRIV
    control = subprocess.run(uid_drop.setpriv_argv([], sandbox.run_uid()) + ["cat", str(data / "note.h")],
                             capture_output=True, text=True)
    assert control.returncode != 0 and "Permission denied" in control.stderr     # by its own path: refused
    r = sandbox.run(["sh", "-c", 'cat "$1"; id -u; echo made > out.txt', "sh", str(data / "note.h")],
                    scratch=str(scratch), ro_binds=(str(data),))
    assert r.ok, r.stderr
    assert token in r.stdout and r.stdout.split()[-1] != "0"
    assert (scratch / "out.txt").read_text() == "made\n"
    assert not list(Path(tempfile.gettempdir()).glob(f"rocmlab-view-{os.getpid()}-*"))   # the view is gone


@needs_root_user
@needs_offline_root
def test_chroot_enters_the_offline_root_with_the_uid_drop(fallback, locked):
    top, data, scratch, token = locked
    assert sandbox.root_entry() == (sandbox.CHROOT, "") and "chroot" in fallback.description
    (scratch / "in.txt").write_text("input\n")
    r = sandbox.run(["/bin/sh", "-c", 'cat /etc/debian_version; cat "$1"; cat in.txt; id -u; pwd; echo w > out.txt; '
                     'echo x >> "$1" 2>/dev/null || echo read-only; ls /root 2>&1 | head -1',
                     "sh", str(data / "note.h")], root=ROOT.root, scratch=str(scratch), ro_binds=(str(data),))
    assert r.ok, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == Path(ROOT.root, "etc/debian_version").read_text().strip()      # the root's own /etc
    assert lines[1] == f"#define TOKEN {token}" and lines[2] == "input"
    assert lines[3] != "0"                                                            # not root inside
    assert lines[4] == str(scratch)                         # the output names the host path again
    assert "read-only" in lines[5] and token in (data / "note.h").read_text() and "x" not in (data / "note.h").read_text()
    assert "Permission denied" in lines[6]
    assert (scratch / "out.txt").read_text() == "w\n" and (scratch / "in.txt").is_file()
    assert not [p for p in Path(ROOT.root, sandbox.ROOT_VIEWS).iterdir() if p.name.startswith(f"{os.getpid()}-")]


@needs_root_user
@needs_offline_root
def test_chroot_missing_program_and_signals_are_reported(fallback, locked):
    _, _, scratch, _ = locked
    with pytest.raises(FileNotFoundError, match="not found"):
        sandbox.run(["/usr/bin/no-such-program-here"], root=ROOT.root, scratch=str(scratch))
    r = sandbox.run(["/bin/sh", "-c", "kill -SEGV $$"], root=ROOT.root, scratch=str(scratch))
    assert r.signal == "SIGSEGV" and not r.ok
    assert sorted(os.listdir(scratch)) == []                                 # the scratch came back, as it was


def test_view_rewrites_paths_in_arguments_and_back_in_output():
    v = view.View("/h", "/run/rocmlab/1-a")
    v.pairs += [("/root/pkg/inc", "/run/rocmlab/1-a/b0"), ("/root/pkg/inc/sub", "/run/rocmlab/1-a/b1")]
    assert v.rewrite("-I/root/pkg/inc") == "-I/run/rocmlab/1-a/b0"
    assert v.rewrite("/root/pkg/inc/sub/x.h") == "/run/rocmlab/1-a/b1/x.h"           # the longer path wins
    assert v.rewrite("--rocm-path=/root/pkg/inc") == "--rocm-path=/run/rocmlab/1-a/b0"
    assert v.rewrite("/root/pkg/include") == "/root/pkg/include"                     # a longer name: not the path
    assert v.rewrite("-DX=/root/pkg/inc") == "-DX=/run/rocmlab/1-a/b0"
    assert v.rewrite("/x/root/pkg/inc") == "/x/root/pkg/inc"
    assert v.unrewrite("/run/rocmlab/1-a/b0/a.h:3: error") == "/root/pkg/inc/a.h:3: error"


def test_no_way_into_a_root_is_said_with_the_fix(monkeypatch, fallback):
    detection._root_entry.cache_clear()
    detection._detect.cache_clear()
    monkeypatch.setattr(uid_drop, "as_root", lambda: False)
    monkeypatch.setattr(detection.shutil, "which", lambda name: None if name == "proot" else shutil.which(name))
    try:
        iso = sandbox.isolation()
        assert iso.root_entry == "" and "apt-get install proot" in iso.root_problem
        assert "CANNOT be entered" in iso.description
        with pytest.raises(sandbox.SandboxError, match="proot"):
            sandbox.run(["true"], root="/usr")
    finally:
        detection._root_entry.cache_clear()
        detection._detect.cache_clear()


@needs_offline_root
@pytest.mark.skipif(shutil.which("proot") is None, reason="PRoot is not installed (apt-get install proot)")
def test_proot_enters_the_root_as_an_ordinary_user_would(monkeypatch, fallback, locked):
    _, data, scratch, token = locked
    detection._root_entry.cache_clear()
    detection._detect.cache_clear()
    monkeypatch.setattr(uid_drop, "as_root", lambda: False)       # the way an ordinary user's runs go
    try:
        assert sandbox.root_entry() == (sandbox.PROOT, "") and "PRoot" in sandbox.isolation().description
        r = sandbox.run(["/bin/sh", "-c", 'cat /etc/debian_version; cat "$1"; echo w > out.txt', "sh",
                         str(data / "note.h")], root=ROOT.root, scratch=str(scratch), ro_binds=(str(data),))
        assert r.ok, r.stderr
        assert r.stdout.splitlines() == [Path(ROOT.root, "etc/debian_version").read_text().strip(),
                                         f"#define TOKEN {token}"]
        assert (scratch / "out.txt").read_text() == "w\n"
        crash = sandbox.run(["/bin/sh", "-c", "kill -SEGV $$"], root=ROOT.root, scratch=str(scratch))
        assert crash.signal == "SIGSEGV" and "proot" not in crash.stderr           # PRoot's 255 and its own line
        plain = sandbox.run(["/bin/sh", "-c", "exit 3"], root=ROOT.root, scratch=str(scratch))
        assert plain.returncode == 3                                             # control: a plain exit status
        with pytest.raises(FileNotFoundError, match="not found"):
            sandbox.run(["/usr/bin/no-such-program-here"], root=ROOT.root, scratch=str(scratch))
    finally:
        detection._root_entry.cache_clear()
        detection._detect.cache_clear()


@needs_root_user
def test_an_environment_under_a_0700_folder_is_shown_once_and_remade_when_it_changes(fallback, locked, monkeypatch):
    """As root without bubblewrap, a virtual environment under root's 0700 home (torch: about 50,000 entries) is
    shown to the dropped uid as one tree of hard links, kept while the environment is unchanged; a folder of the
    same name a learner made first is never used; what others may not read stays unreadable."""
    top, data, scratch, token = locked
    site = top / "venv" / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text(f"TOKEN = {token!r}\n")
    (site / "secret.txt").write_text("closed")
    os.chmod(site / "secret.txt", 0o600)
    for p in (top / "venv", site, site / "pkg"):
        os.chmod(p, 0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(top.parent))
    first = view._shown_site_packages(str(site))
    assert Path(first, "pkg", "__init__.py").read_text() == f"TOKEN = {token!r}\n"
    assert Path(first, "pkg", "__init__.py").stat().st_ino == (site / "pkg" / "__init__.py").stat().st_ino  # a link
    assert not Path(first, "secret.txt").exists()
    r = subprocess.run(uid_drop.setpriv_argv([], sandbox.run_uid()) + ["cat", f"{first}/pkg/__init__.py"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and token in r.stdout, r.stderr
    assert view._shown_site_packages(str(site)) == first                       # kept: made once
    (site / "newpkg").mkdir()                                                      # a package installed
    second = view._shown_site_packages(str(site))
    assert second != first and Path(second, "newpkg").is_dir() and not Path(first).exists()
    # a learner's folder of the next name, made before the grader: not used, another name is chosen
    (site / "another").mkdir()
    stamp_dir = view._shown_site_packages(str(site))
    shutil.rmtree(stamp_dir)
    os.mkdir(stamp_dir, 0o777)
    os.chown(stamp_dir, sandbox.run_uid(), -1)
    (Path(stamp_dir) / "pkg").mkdir()
    third = view._shown_site_packages(str(site))
    assert third != stamp_dir and Path(third, "another").is_dir() and Path(third).stat().st_uid == 0
    for made in Path(top.parent).glob("rocmlab-site-*"):
        if str(made).startswith((first, second, third, stamp_dir)):
            shutil.rmtree(made, ignore_errors=True)
