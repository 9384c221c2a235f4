"""Issue 37, on a real hub with two learners as two Unix users (the workshop mode, root): a learner cannot get root to
write through their links, cannot starve the node or another learner, cannot reach another GPU seat's device
nodes or see the grading seed, and can compile and grade HIP on a CPU node. Each attack has its control.

- spawn hooks: ``~/.profile`` and ``~/.jupyter`` replaced by links to root-only files, then a server restart;
- hand-out (``Hub.put_file``) onto a planted link, and through a linked folder;
- 3,000 processes (``pids.max`` and RLIMIT_NPROC), a disk fill past the home's cap, a /tmp fill, a private /tmp;
- GPU seats on stand-in device nodes (``mknod`` with made-up numbers: a node that passes the cgroup's device rule
  reaches the kernel, which answers "No such device or address"; a denied one answers "Operation not permitted");
- a learner's ``%%hip`` cell compiles in their server with the offline ROCm root (bound read-only under the
  hub's work folder, as /opt/rocmlab/rocm-7.2.4 would be on a node) and grades; the instructor grades the
  hand-in with ``--seed-file`` while the other learner reads every ``/proc/*/cmdline`` (the control: ``--seed``);
- clean-up: a process a learner left running (``setsid``) does not keep their user, home or cgroup behind.

The outcomes go to test-artifacts/hub/hardening.md.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from rocmlab import paths
from rocmlab.grader.spec import load
from rocmlab.hip.toolchain import READY_STAMP
from rocmlab.workshop import learner_space
from rocmlab.workshop.hub import jupyterhub
from rocmlab.workshop.hubconfig import Cgroups

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("ROCMLAB_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "hub"
PREFIX = f"rh{secrets.token_hex(2)}-"
L1, L2 = "learner01", "learner02"
PIDS, DISK, TMP = 512, "256M", "64M"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the workshop hub runs as root (it creates users)")
TABLE: list[tuple[str, str, str]] = []       # (attack, outcome now, control)


def _mknod(path: Path, major: int, minor: int) -> Path:
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    os.chmod(path, 0o666)
    return path


@pytest.fixture(scope="module")
def hub(needs_proxy, no_leftovers):
    base = Path(tempfile.mkdtemp(prefix="rocmlab-hub-hard-"))
    os.chmod(base, 0o711)
    dev = base / "dev"
    dev.mkdir(mode=0o755)
    # stand-ins for /dev/kfd and two CPX partitions' render nodes: numbers no driver here answers to
    nodes = {"kfd": _mknod(dev / "kfd", 511, 0), "r0": _mknod(dev / "renderD201", 226, 201),
             "r1": _mknod(dev / "renderD202", 226, 202)}
    secret = base / "root-only"                     # what a learner's links point at: root's, 0700 / 0600
    secret.mkdir(mode=0o700)
    canary = secret / "canary"
    canary.write_text(f"root's {secrets.token_hex(8)}\n")
    os.chmod(canary, 0o600)
    canary_dir = secret / "folder"
    canary_dir.mkdir(mode=0o700)
    rocm = base / "rocm-7.2.4"                      # the offline root, read-only where every user can read it
    have_root = (paths.rocm_root() / READY_STAMP).is_file()
    if have_root:
        rocm.mkdir(mode=0o755)
        subprocess.run(["mount", "--bind", str(paths.rocm_root()), str(rocm)], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(rocm)], check=True)
    try:
        with jupyterhub(base, [L1, L2], n_gpus=2, user_prefix=PREFIX, cull_idle_s=None, mem_limit="2G",
                        cpu_limit=1.0, pids_limit=PIDS, disk_limit=DISK, tmp_limit=TMP,
                        gpu_devices=[[str(nodes["kfd"]), str(nodes["r0"])], [str(nodes["kfd"]), str(nodes["r1"])]],
                        rocm_root=rocm if have_root else None) as h:
            h.nodes, h.canary, h.canary_dir, h.have_root = nodes, canary, canary_dir, have_root
            h.canary_text = canary.read_text()
            for n in (L1, L2):
                h.spawn(n, timeout_s=240)
            yield h
            no_leftovers |= h.remember_pids()
        # clean-up: users, homes' file systems, cgroups (a learner's setsid process did not keep them)
        assert not [p.pw_name for p in pwd.getpwall() if p.pw_name.startswith(PREFIX)], "users left behind"
        assert not any(os.path.ismount(base / "home" / n) for n in (L1, L2)), "home file systems left mounted"
        assert not Cgroups(f"rocmlab-hub-{h.port}").processes_of(L1)
        assert not [b for b in Cgroups(f"rocmlab-hub-{h.port}").bases.values() if b.exists()], "cgroups left"
        assert not list((base / "hub" / "disks").glob("*.img"))       # the homes' and the hand-in folders' images
        assert not any(os.path.ismount(h.exchange / "inbound" / n) for n in (L1, L2)), "hand-in file systems left"
        TABLE.append(("a learner leaves a `setsid` process running, the hub stops",
                      "users, home file systems and cgroups removed", "the process was running before the stop"))
    finally:
        if have_root:
            subprocess.run(["umount", str(rocm)], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
        _write_table()


def _unchanged(h) -> bool:
    st = h.canary.stat()
    return (h.canary.read_text() == h.canary_text and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600
            and h.canary_dir.stat().st_uid == 0 and stat.S_IMODE(h.canary_dir.stat().st_mode) == 0o700
            and not list(h.canary_dir.iterdir()))


def test_spawn_hooks_never_follow_a_learners_links(hub):
    home = hub.home(L1)
    uid = pwd.getpwnam(PREFIX + L1).pw_uid
    profile = home / ".profile"
    # the control: the hook wrote the course's PATH into the learner's own .profile at the first start
    assert "rocmlab workshop" in profile.read_text() and profile.stat().st_uid == uid
    hub.terminal(L1, f"rm -rf ~/.profile ~/.jupyter; ln -s {hub.canary} ~/.profile; "
                     f"ln -s {hub.canary_dir} ~/.jupyter")
    assert os.path.realpath(profile) == str(hub.canary)           # a by-path write would land in root's file
    hub.stop_server(L1)
    hub.spawn(L1, timeout_s=240)                                   # the restart runs the hooks again, as root
    assert _unchanged(hub), "root followed a learner's link"
    assert profile.is_symlink() and (home / ".jupyter").is_symlink()
    log = hub.log_tail(4000)
    assert f"{profile} is a symbolic link (to {hub.canary}): refused" in log, log[-2000:]
    assert f"{home / '.jupyter'} is a symbolic link (to {hub.canary_dir}): refused" in log
    TABLE.append(("`~/.profile` -> root's 0600 file, `~/.jupyter` -> root's 0700 folder, server restarted",
                  "refused and logged; the server starts; both still root's, unchanged",
                  "first start: the PATH line went into the learner's own `.profile`"))


def test_a_hand_out_onto_a_planted_link_is_refused(hub):
    uid = pwd.getpwnam(PREFIX + L1).pw_uid
    hub.terminal(L1, f"ln -s {hub.canary} ~/handout.hip; ln -s {hub.canary_dir} ~/sub")
    with pytest.raises(learner_space.PlantedLink, match=r"handout.hip is a symbolic link .*: refused"):
        hub.put_file(L1, "handout.hip", "// the exercise\n")
    with pytest.raises(learner_space.PlantedLink, match=r"sub is a symbolic link .*: refused"):
        hub.put_file(L1, "sub/handout.hip", "// the exercise\n")
    assert _unchanged(hub)
    got = hub.put_file(L1, "week1/handout.hip", "// the exercise\n")      # the control: a real destination
    assert got.read_text() == "// the exercise\n" and got.stat().st_uid == uid and got.parent.stat().st_uid == uid
    TABLE.append(("hand-out onto `~/handout.hip` -> root's file, and into `~/sub` -> root's folder",
                  "PlantedLink (the path and the fix); root's file and folder unchanged",
                  "the same hand-out to `week1/handout.hip` is written, the learner's"))


def test_each_server_opens_only_its_own_seats_device_nodes(hub):
    seat = {n: int(hub.server_env(n)["ROCMLAB_WORKSHOP_GPU"]) for n in (L1, L2)}
    assert sorted(seat.values()) == [0, 1] and all(hub.server_env(n)["HIP_VISIBLE_DEVICES"] == "0" for n in seat)
    for n in (L1, L2):
        script = "; ".join(f'( exec 3<>{p} ) 2>&1 | sed "s/^/{k}: /"; true' for k, p in hub.nodes.items())
        out = hub.terminal(n, script)
        got = {ln.split(": ", 1)[0]: ln for ln in out.splitlines() if ln.split(": ", 1)[0] in hub.nodes}
        mine, other = f"r{seat[n]}", f"r{1 - seat[n]}"
        assert "No such device or address" in got["kfd"], out
        assert "No such device or address" in got[mine], out
        assert "Operation not permitted" in got[other], out
    for p in hub.nodes.values():                 # the control: outside the cgroup every node reaches the kernel
        with pytest.raises(OSError, match="No such device or address"):
            os.close(os.open(p, os.O_RDWR))
    TABLE.append(("open the other seat's render node (stand-in `mknod` 226:201/202, and /dev/kfd 511:0)",
                  "own seat and kfd: ENXIO (passed the device rule); other seat: EPERM",
                  "as root outside the cgroups every node gives ENXIO"))


def test_3000_processes_stop_at_pids_max_and_the_other_learner_is_not_starved(hub):
    cg = Cgroups(f"rocmlab-hub-{hub.port}")
    assert cg.limits_of(L1)["pids"] == PIDS
    code = ("import os, time\nkids, err = [], ''\nfor i in range(3000):\n    try:\n        pid = os.fork()\n"
            "    except OSError as e:\n        err = str(e)\n        break\n    if pid == 0:\n        time.sleep(60)\n"
            "        os._exit(0)\n    kids.append(pid)\nopen(os.path.expanduser('~/kids'), 'w').write(' '.join(map(str, kids)))\n"
            "print('STARTED', len(kids), err)\n")
    hub.put_file(L1, "fork.py", code)
    out = hub.terminal(L1, "python3 ~/fork.py", timeout_s=120)
    started = int(out.split("STARTED ")[1].split()[0])
    now, top = cg.pids_of(L1)
    try:
        assert "Resource temporarily unavailable" in out and PIDS // 2 < started < PIDS and now <= top == PIDS, (out, now)
        other = hub.terminal(L2, "for i in $(seq 50); do sleep 5 & done; jobs -p | wc -l")    # the control
        assert other.split()[-1] == "50", other
    finally:
        kids = learner_space.read_file(hub.home(L1), pwd.getpwnam(PREFIX + L1).pw_uid, "kids") or b""
        for pid in kids.split():
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass
    TABLE.append((f"3,000 processes from one learner's terminal (pids.max {PIDS})",
                  f"{started} started, then 'Resource temporarily unavailable'; pids.current {now} <= {top}",
                  "meanwhile the other learner starts 50 processes"))


def test_a_disk_fill_stops_at_the_cap_and_tmp_is_private_and_capped(hub):
    free_before = shutil.disk_usage(hub.workdir).free
    out = hub.terminal(L1, f"echo mine > /tmp/mine-{L1}; cat /tmp/mine-{L1}; "
                           "head -c 400M /dev/zero > ~/fill; echo rc=$? HOME_MB=$(du -m ~/fill | cut -f1); "
                           "head -c 100M /dev/zero > /tmp/fill; echo tmp-rc=$? TMP_MB=$(du -m /tmp/fill | cut -f1)",
                       timeout_s=120)
    assert "No space left on device" in out and "rc=1 " in out and "tmp-rc=1 " in out, out
    home_mb, tmp_mb = (int(re.search(rf"{k}=(\d+)", out).group(1)) for k in ("HOME_MB", "TMP_MB"))
    assert 200 <= home_mb <= 256 and 56 <= tmp_mb <= 64, out
    assert re.search(r"^mine$", out, re.M), out            # the control: the learner's own /tmp works
    used = (free_before - shutil.disk_usage(hub.workdir).free) / 2**20
    other = hub.terminal(L2, f"ls /tmp/mine-{L1} 2>&1; head -c 1M /dev/zero > ~/ok && echo wrote-1M")
    assert "No such file or directory" in other and "wrote-1M" in other, other     # L2 unaffected, not L1's /tmp
    assert not Path(f"/tmp/mine-{L1}").exists()
    again = hub.terminal(L1, "rm ~/fill /tmp/fill; head -c 1M /dev/zero > ~/ok && echo wrote-1M")
    assert "wrote-1M" in again
    TABLE.append((f"write 400 MB into the home (cap {DISK}), 100 MB into /tmp (tmpfs {TMP})",
                  f"'No space left on device' at {home_mb} MB and {tmp_mb} MB; the node's disk lost {used:.0f} MB",
                  "the other learner writes 1 MB and does not see the first one's /tmp file"))


def test_dev_shm_and_the_hand_in_folder_are_capped_per_learner(hub):
    """Issue 56: a 1.07 GB /dev/shm file outlived the learner's server, the hub and the user, and 2.3 GB went into
    the learner's own exchange/inbound/ (outside the capped home). Now /dev/shm is the server's own tmpfs (of the
    /tmp size, gone with the server) and inbound/LEARNER a file system of exchange.INBOUND_BYTES."""
    from rocmlab.workshop.exchange import INBOUND_BYTES

    inbound = hub.exchange / "inbound" / L1
    cap_mb = INBOUND_BYTES >> 20
    out = hub.terminal(L1, f"echo mine > /dev/shm/mine-{L1}; cat /dev/shm/mine-{L1}; "
                           f"head -c 100M /dev/zero > /dev/shm/fill; echo shm-rc=$? SHM_MB=$(du -m /dev/shm/fill | cut -f1); "
                           f"head -c {cap_mb + 100}M /dev/zero > {inbound}/fill; "
                           f"echo in-rc=$? IN_MB=$(du -m {inbound}/fill | cut -f1); rm -f /dev/shm/fill {inbound}/fill",
                       timeout_s=120)
    assert "shm-rc=1 " in out and "in-rc=1 " in out and "No space left on device" in out, out
    shm_mb, in_mb = (int(re.search(rf"{k}=(\d+)", out).group(1)) for k in ("SHM_MB", "IN_MB"))
    assert shm_mb <= 64 and in_mb <= cap_mb, out
    assert re.search(r"^mine$", out, re.M), out                     # the control: the learner's own /dev/shm works
    assert not Path(f"/dev/shm/mine-{L1}").exists()                 # the host's /dev/shm never saw it
    other = hub.terminal(L2, f"ls /dev/shm/mine-{L1} 2>&1; echo x > {hub.exchange / 'inbound' / L2}/ok && echo wrote")
    assert "No such file or directory" in other and "wrote" in other, other   # L2: its own, and it can hand in
    TABLE.append((f"write 100 MB into /dev/shm, {cap_mb + 100} MB into the learner's exchange/inbound/",
                  f"'No space left on device' at {shm_mb} MB (the server's own tmpfs, gone with it) and {in_mb} MB "
                  f"(inbound/{L1} is a {cap_mb} MiB file system)",
                  "the learner's own /dev/shm file reads back; the other learner neither sees it nor is stopped"))


def test_a_learners_hip_cell_compiles_and_grades_and_the_seed_stays_hidden(hub):
    if not hub.have_root:
        pytest.fail(f"no offline ROCm root at {paths.rocm_root()}: run bash scripts/setup/20-rocm-root.sh")
    sol = load("vector-add").solution
    hub.put_file(L1, "vector_add.hip", sol)
    cg = Cgroups(f"rocmlab-hub-{hub.port}")
    peak, stop = [0], threading.Event()

    def sample():                     # what one learner's compile and grade use: tasks, for the limits table
        while not stop.is_set():
            peak[0] = max(peak[0], cg.pids_of(L1)[0])
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    mem_peak = cg.bases.get("memory", Path("/nonexistent")) / L1 / "memory.max_usage_in_bytes"
    if mem_peak.exists():
        mem_peak.write_text("0")
    sampler.start()
    out = hub.execute(L1, "%load_ext rocmlab\nimport os\nprint('ROOT', os.environ['ROCMLAB_ROCM_ROOT'])", 120)
    assert f"ROOT {hub.workdir / 'rocm-7.2.4'}" in out, out
    cell = ("#include <hip/hip_runtime.h>\n__global__ void scale(float* x, float a, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= a;\n}\n"
            "int main() { return 0; }\n")                     # a %%hip cell as a learner types it
    out = hub.execute(L1, f"%load_ext rocmlab\nget_ipython().run_cell_magic('hip', '--no-run', {cell!r})",
                      timeout_s=300)
    assert "built for gfx942 with hipcc" in out and "(offline ROCm 7.2.4 root)" in out, out
    out = hub.execute(L1, f"from rocmlab import grader\nr = grader.check('vector-add', {sol!r})\n"
                          "print('GRADE', r.status, r.check('compiles').status, r.earned)\nprint(r.to_text())",
                      timeout_s=300)
    assert "GRADE graded passed" in out, out
    stop.set()
    sampler.join()
    used_mb = int(mem_peak.read_text()) / 2**20 if mem_peak.exists() else float("nan")
    disk_mb = int(subprocess.run(["du", "-sm", str(hub.home(L1))], capture_output=True, text=True).stdout.split()[0])
    assert 0 < peak[0] < PIDS
    TABLE.append(("(measured) one learner's `%%hip` compile and grade",
                  f"peak {peak[0]} tasks in the cgroup, memory peak {used_mb:.0f} MiB, home {disk_mb} MB after",
                  f"limits: pids {PIDS}, memory 2 GiB, disk {DISK}"))
    hand = hub.execute(L1, "import os\nfrom rocmlab.workshop import exchange\n"
                           "print(exchange.handin('vector-add', os.path.expanduser('~/vector_add.hip')))")
    assert f"inbound/{L1}/vector-add/" in hand, hand
    seed_file = hub.instructor_dir / "grading-seed"
    seed = seed_file.read_text().strip()
    seen = {}
    for how in ("--seed-file", "--seed"):        # the second is the control
        hub.put_file(L2, "watch.sh", "for i in $(seq 200); do cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '; "
                                     "echo; sleep 0.05; done > /tmp/seen\n")
        hub.terminal(L2, "rm -f /tmp/seen; setsid nohup bash ~/watch.sh > /dev/null 2>&1 < /dev/null & true")
        arg = str(seed_file) if how == "--seed-file" else seed
        r = subprocess.run([sys.executable, "-m", "rocmlab.cli", "grade", "--exchange", str(hub.exchange),
                            "--exercise", "vector-add", how, arg, "--no-progress"], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0 and "1 feedback returned" in r.stdout, r.stdout + r.stderr
        time.sleep(0.3)
        subprocess.run(["pkill", "-u", PREFIX + L2, "-f", "watch.sh"], capture_output=True)
        seen[how] = hub.terminal(L2, "grep -c -- 'rocmlab.cli grade' /tmp/seen; "
                                     f"grep -c -- ' {seed} ' /tmp/seen; true", timeout_s=60).split()
    assert int(seen["--seed-file"][0]) > 0 and seen["--seed-file"][1] == "0", seen    # saw the grader, no seed
    assert int(seen["--seed"][0]) > 0 and int(seen["--seed"][1]) > 0, seen             # the control
    fb = hub.execute(L1, "from rocmlab.workshop import exchange\nprint(exchange.feedback('vector-add').info)")
    assert "'earned': 10.0" in fb, fb
    TABLE.append(("another learner reads every `/proc/*/cmdline` while the instructor grades",
                  f"grader seen in {seen['--seed-file'][0]} samples, the seed in 0 (`--seed-file`, 0600)",
                  f"with `--seed` the seed is in {seen['--seed'][1]} samples"))
    TABLE.append(("a learner's `%%hip` cell and a grade on a CPU node",
                  "compiles with the offline root (read-only, ROCMLAB_ROCM_ROOT); graded; feedback returned",
                  "the root is what the hub set: " + str(hub.workdir / "rocm-7.2.4")))


def test_zz_a_learners_leftover_process_does_not_block_clean_up(hub):
    hub.terminal(L2, "setsid nohup sleep 600 > /dev/null 2>&1 < /dev/null & echo started")
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-u", PREFIX + L2, "-x", "sleep"], capture_output=True, text=True).stdout.split()
    assert left, "the control: the learner's process is running"
    # the hub fixture's exit removes the user, home and cgroups and asserts it


def _write_table() -> None:
    if not TABLE:
        return
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    rows = ["| attack | outcome now | control |", "|---|---|---|", *(f"| {a} | {o} | {c} |" for a, o, c in TABLE)]
    (ARTIFACTS / "hardening.md").write_text("\n".join(rows) + "\n")
