"""The course in a container without user namespaces (Docker's default profile, Binder, most Kubernetes pods): with
bubblewrap made unavailable (``ROCMLAB_SANDBOX=no-bwrap``) and the checkout copied under a 0700 folder (as ``/root``
is), a learner's ``%%hip`` cell compiles and runs on the CPU simulator, a compile reads the package's own include
folder with ``-I`` (Lab 11's cells) and one exercise per check kind is graded with its points, as root (chroot and the
uid drop) and as an unprivileged user (PRoot); and Lab 01, 02 and 11 run headless as root (marked slow: minutes on 2
cores; ``tests/helpers/container_fallback_scenario.py --preflight`` runs them as any user). Each run is
``tests/helpers/container_fallback_scenario.py`` in a child process; the rows it writes are asserted here. The control is
today's code before issue 39: every compile there stopped with "cannot enter the root file system ... without
bubblewrap"."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from rocmlab.hip.toolchain import discover_offline
from rocmlab.paths import repo_root

REPO = repo_root()
ROOTFS = discover_offline()
LEARNER = "rocmlab-ci"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: it makes the 0700 folders and runs as another user"),
    pytest.mark.skipif(ROOTFS is None, reason="no offline ROCm root (bash scripts/setup/20-rocm-root.sh)"),
    pytest.mark.skipif(not (REPO / "tests" / "helpers" / "container_fallback_scenario.py").is_file(), reason="not a checkout"),
]


def _copy_checkout(dest: Path) -> None:
    """The checkout's files (tracked and new, not ignored: no .venv, no caches) copied to ``dest``."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True)
    names = [n for n in listed.stdout.decode().split("\0") if n] if listed.returncode == 0 else []
    if not names:
        shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "test-artifacts"))
        return
    for name in names:
        src = REPO / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def _learner() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(LEARNER)
    except KeyError:
        done = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell",
                               "/usr/sbin/nologin", LEARNER], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot make the unprivileged user {LEARNER}: {done.stderr.strip()}")
        return pwd.getpwnam(LEARNER)


def _python_for_others() -> tuple[str, str]:
    """(a Python of this version that other users can run, the site-packages to put on its path)."""
    site = sysconfig.get_paths()["purelib"]
    want = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for cand in (sys.executable, f"/usr/bin/{want}", f"/usr/local/bin/{want}"):
        real = os.path.realpath(cand)
        if os.path.exists(real) and _others_reach(real):
            break
    else:
        pytest.skip(f"no {want} that other users can run (this one is {sys.executable})")
    if not _others_reach(site):
        pytest.skip(f"other users cannot read this environment's packages ({site})")
    return real, site


def _others_reach(path: str) -> bool:
    cur = "/"
    for part in Path(path).resolve().parts[1:]:
        cur = os.path.join(cur, part)
        if not os.stat(cur).st_mode & 0o001:
            return False
    return True


def _scenario(top: Path, *, user: pwd.struct_passwd | None, rootfs: str, preflight: bool = False) -> list[dict]:
    """Run the scenario in ``top/checkout`` with HOME and ROCMLAB_HOME in ``top`` (0700): as root, or as ``user``."""
    python, site = (sys.executable, "") if user is None else _python_for_others()
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8", "HOME": str(top / "home"),
           "ROCMLAB_HOME": str(top / "home" / ".cache" / "rocmlab"), "ROCMLAB_ROCM_ROOT": rootfs,
           "ROCMLAB_SANDBOX": "no-bwrap", "ROCMLAB_QUICK": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(top / "checkout"), site) if p)}
    out = top / f"rows-{user.pw_name if user else 'root'}-{'preflight' if preflight else 'session'}.json"
    cmd = [python, str(top / "checkout" / "tests" / "helpers" / "container_fallback_scenario.py"), "--out", str(out)]
    cmd += ["--preflight"] if preflight else []
    if user is not None:
        cmd = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", *cmd]
    done = subprocess.run(cmd, cwd=top, env=env, capture_output=True, text=True, timeout=1200)
    assert out.is_file(), f"the scenario wrote no rows (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    rows = json.loads(out.read_text())
    print(done.stdout)
    return rows


@pytest.fixture(scope="module")
def closed_checkout():
    """A copy of the checkout in a 0700 folder of root's (as /root is)."""
    top = Path(tempfile.mkdtemp(prefix="rocmlab-fallback-root-"))
    os.chmod(top, 0o700)
    _copy_checkout(top / "checkout")
    yield top
    shutil.rmtree(top, ignore_errors=True)


def _assert_all_ok(rows: list[dict], way: str) -> None:
    by = {r["item"]: r for r in rows}
    iso = by["doctor: isolation"]
    assert way in iso["detail"], iso
    bad = [r for r in rows if r["item"] != "doctor: isolation" and r["result"] != "ok"]
    assert not bad, "\n".join(f"{r['item']}: {r['result']} {r['points']} {r['detail']}" for r in bad)
    grades = [r for r in rows if r["item"].startswith("grade ")]
    assert len(grades) == 3 and all(float(r["points"].split("/")[0]) > 0 for r in grades), grades
    kinds = set(", ".join(r["item"].split("(", 1)[1].rstrip(")") for r in grades).split(", "))
    assert kinds == {"static", "compile", "run", "compare", "perf", "isa", "speedup"}, kinds


def test_fallback_as_root_with_the_checkout_in_a_0700_folder(closed_checkout):
    rows = _scenario(closed_checkout, user=None, rootfs=ROOTFS.root)
    _assert_all_ok(rows, "entered with chroot")


def test_fallback_as_an_unprivileged_user_with_proot():
    if shutil.which("proot") is None:
        pytest.skip("PRoot is not installed (apt-get install proot): the unprivileged fallback needs it")
    user = _learner()
    top = Path(tempfile.mkdtemp(prefix="rocmlab-fallback-user-"))
    try:
        _copy_checkout(top / "checkout")
        rootfs = ROOTFS.root
        if not _others_reach(str(Path(rootfs) / "usr" / "bin")):
            # the learner cannot read root's copy (it is under the 0700 /root): a hard-linked copy, read-only to them
            rootfs = str(top / "rocm")
            link = subprocess.run(["cp", "-al", ROOTFS.root, rootfs], capture_output=True, text=True)
            if link.returncode != 0:
                pytest.skip(f"cannot give the learner a readable ROCm root here ({link.stderr.strip()[:200]})")
        subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(top / "checkout")], check=True)
        os.chown(top, user.pw_uid, user.pw_gid)
        os.chmod(top, 0o700)                           # the learner's own closed home
        rows = _scenario(top, user=user, rootfs=rootfs)
        _assert_all_ok(rows, "entered with PRoot")
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.slow
def test_fallback_preflight_of_lab_01_02_and_11_as_root(closed_checkout):
    rows = _scenario(closed_checkout, user=None, rootfs=ROOTFS.root, preflight=True)
    labs = [r for r in rows if r["item"].startswith("preflight ")]
    assert [r["item"].split()[1][:2] for r in labs] == ["01", "02", "11"], labs
    assert all(r["result"] == "ok" for r in labs), labs
