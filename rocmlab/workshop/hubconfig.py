"""JupyterHub configuration for a workshop on one machine: each learner their own Unix user, a GPU seat each.

Called from the config file :func:`rocmlab.workshop.hub.write_config` writes. Two modes:

- ``users`` (the workshop): the hub runs as root. On a learner's first spawn it creates (or reuses) the Unix
  user ``PREFIX + NAME`` with a private home (0700) under ``homes``, and :class:`WorkshopSpawner` starts the
  learner's JupyterLab as that user (JupyterHub's ``LocalProcessSpawner``: setuid, setgid, their own groups),
  in a cgroup with memory, CPU and process limits and device rules (only their GPU seat's nodes), in a mount
  namespace with a private tmpfs /tmp (the folders a server reads that lie under /tmp, such as a course
  installed in a clone there, are bound back read-only), in a home that is a file system of its own size (the disk cap). The
  spawn hooks write into the home only through :mod:`.learner_space` (never following a learner's link). The instructor (the hub's admin) grades, so their
  server runs as root, like an admin of The Littlest JupyterHub who has sudo.
- ``dry-run``: as JupyterHub's ``SimpleLocalProcessSpawner``: every server as the hub's own Unix user. Nothing
  keeps learners apart: it is for trying the course alone, and as the control of the isolation tests.

Reference answers stay with the instructor (``users`` mode, unless ``references="kept"``): every learner's
server gets ``ROCMLAB_REFERENCES=off``, and at start the hub (root) locks the reference files of the package the
servers run (:func:`lock_server_references`: root-only, 0600), so a learner's process can neither load nor read
them, while the instructor's server and grader (root) can (:mod:`rocmlab.workshop.references`).

A server that exits before it answers fails its spawn with its own last lines (:class:`ServerDidNotStart`):
in the error of the API call, on the learner's page and in the hub's log, never JupyterHub's bare 500.

Both: DummyAuthenticator (one shared password, the listed users only), loopback only, the GPU-seat hook of
:mod:`rocmlab.workshop.seats`, and jupyterhub-idle-culler as a hub service (stops idle servers; the seat stays).
For a real node see binder/tljh/ (SystemdSpawner, the same hook) or binder/jupyterhub/ (Kubernetes).
"""

from __future__ import annotations

import asyncio
import collections
import ctypes
import json
import os
import pwd
import re
import resource
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, SimpleLocalProcessSpawner, SpawnException, set_user_setuid
from traitlets import Float, Unicode

from rocmlab.workshop import exchange as xchg
from rocmlab.workshop import learner_space, references, seats

MODES = ("users", "dry-run")


# ----------------------------------------------------------------------------- Unix users

def ensure_unix_user(system_name: str, home: Path, record: Path | None = None,
                     disk: tuple[Path, int] | None = None) -> pwd.struct_passwd:
    """The Unix user ``system_name`` with its own group and the private home ``home`` (0700); created if
    missing (``useradd``; its name is then appended to ``record``). An existing user is used as it is, but
    its home is made its own and private. ``disk=(IMAGES, BYTES)``: the home is a file system of its own,
    ``IMAGES/NAME.img`` of BYTES (:func:`mount_home_disk`), so one learner cannot fill the node's disk."""
    try:
        pw = pwd.getpwnam(system_name)
    except KeyError:
        if record is not None:
            with open(record, "a") as fh:
                fh.write(system_name + "\n")
        home.parent.mkdir(parents=True, exist_ok=True)
        if disk:
            mount_home_disk(home, disk[0] / f"{system_name}.img", disk[1])
        r = subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--user-group", "--shell",
                            "/bin/bash", "--comment", "rocmlab workshop learner", system_name],
                           capture_output=True, text=True)
        if r.returncode != 0 and "already exists" not in r.stderr:
            raise RuntimeError(f"useradd {system_name} failed: {r.stderr.strip()}") from None
        pw = pwd.getpwnam(system_name)
    if disk:
        mount_home_disk(Path(pw.pw_dir), disk[0] / f"{system_name}.img", disk[1])
    os.makedirs(pw.pw_dir, mode=0o700, exist_ok=True)
    st = os.lstat(pw.pw_dir)
    if st.st_uid != pw.pw_uid:
        os.chown(pw.pw_dir, pw.pw_uid, pw.pw_gid)
    os.chmod(pw.pw_dir, 0o700)
    return pw


def mount_home_disk(home: Path, image: Path, size: int) -> None:
    """Mount the file system image ``image`` (``size`` bytes, made with mkfs.ext4 on first use; sparse, so it
    takes only what is written) on ``home``, nosuid and nodev: the learner's disk cap. Writing past it fails
    with "No space left on device" for that learner only. A no-op when ``home`` is already a mount point.
    Refuses a home that already has files and no image (mounting would hide them)."""
    if os.path.ismount(home):
        return
    image.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    home.mkdir(mode=0o700, exist_ok=True)
    if not image.exists():
        if any(home.iterdir()):
            raise RuntimeError(f"{home} already has files: a disk cap would hide them; give this hub a fresh homes "
                               "folder, or disk_limit=None for users who exist already")
        with open(image, "wb") as fh:
            fh.truncate(size)
        os.chmod(image, 0o600)
        r = subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-L", "rocmlab-home", str(image)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            image.unlink()
            raise RuntimeError(f"mkfs.ext4 {image} failed: {r.stderr.strip()} (apt-get install e2fsprogs)")
    r = subprocess.run(["mount", "-o", "loop,nosuid,nodev", str(image), str(home)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"mounting {image} on {home} failed: {r.stderr.strip()} (the disk cap needs root and "
                           "loop devices; or start the hub with disk_limit=None and a quota)")
    lost = home / "lost+found"
    if lost.is_dir() and not any(lost.iterdir()):
        lost.rmdir()


def unmount_home_disk(home: Path, image: Path | None = None) -> None:
    """Unmount a learner's home file system (lazily if something still holds it) and delete its image."""
    if os.path.ismount(home):
        r = subprocess.run(["umount", str(home)], capture_output=True, text=True)
        if r.returncode != 0:
            subprocess.run(["umount", "-l", str(home)], capture_output=True, text=True)
    if image is not None and image.exists():
        image.unlink()


def remove_unix_user(system_name: str, wait_s: float = 15.0) -> bool:
    """Kill every process of the user, wait for them to end, then ``userdel --remove`` (home too); False if
    there was no such user. Never leaves the user behind: raises only when userdel fails for another reason."""
    import time

    try:
        uid = pwd.getpwnam(system_name).pw_uid
    except KeyError:
        return False
    deadline = time.monotonic() + wait_s
    while True:
        subprocess.run(["pkill", "-KILL", "-u", system_name], capture_output=True)
        busy = subprocess.run(["pgrep", "-u", system_name], capture_output=True, text=True).stdout.split()
        if not busy or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    r = subprocess.run(["userdel", "--remove", *(["--force"] if busy else []), system_name],
                       capture_output=True, text=True)
    if r.returncode == 8:                       # "currently used by process N": a process outlived the wait
        r = subprocess.run(["userdel", "--remove", "--force", system_name], capture_output=True, text=True)
    if r.returncode not in (0, 12):              # 12: the home could not be removed (already gone)
        raise RuntimeError(f"userdel {system_name} failed: {r.stderr.strip()}")
    remove_shared_memory(uid)
    return True


def remove_shared_memory(uid: int, shm: str = "/dev/shm") -> int:
    """Remove what ``uid`` left in the host's ``shm`` (a server without a private /dev/shm, or one started before
    it had one): its files and folders, never following a link. Returns how many entries went."""
    import shutil

    gone = 0
    try:
        entries = list(os.scandir(shm))
    except OSError:
        return 0
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
            if st.st_uid != uid:
                continue
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
            gone += 1
        except OSError:
            continue
    return gone


# ----------------------------------------------------------------------------- limits (cgroups)

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGT]?)$")


def parse_bytes(value) -> int:
    """``"2G"`` -> 2 GiB in bytes, as JupyterHub's mem_limit reads it."""
    if isinstance(value, int):
        return value
    m = _SIZE.match(str(value).strip().upper())
    if not m:
        raise ValueError(f"memory limit {value!r}: give bytes or a number with K, M, G or T (e.g. 2G)")
    return int(float(m.group(1)) * 1024 ** " KMGT".index(m.group(2) or " "))


#: cgroup v1 hierarchies a learner's server joins (memory and cpu are needed; pids and devices where present).
V1_CONTROLLERS = ("memory", "cpu", "pids", "devices")
#: Character devices every server may open (as Docker's default list): null, zero, full, random, urandom, tty,
#: console, ptmx (JupyterLab's terminals) and the pseudo-terminals.
BASE_DEVICES = ("c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm", "c 5:0 rwm", "c 5:1 rwm",
                "c 5:2 rwm", "c 136:* rwm")


class Cgroups:
    """One cgroup per learner server under the hub's own (cgroup v2, or v1's hierarchies): ``memory`` caps
    what the server and its kernels may use, ``cpu`` caps its CPU time at ``cpus`` cores (a quota per 100 ms)
    and gives every server the same share (weight) when the machine is busy: the weight of one ordinary
    process, as without cgroups (:meth:`prepare`); ``pids`` caps its processes and threads; ``devices`` (v1)
    lets it open only :data:`BASE_DEVICES` and its GPU seat's device nodes (on cgroup v2 the kernel has no
    such file: systemd's ``DevicePolicy=closed`` + ``DeviceAllow=`` loads the BPF program that does it, which is
    how binder/tljh/ enforces seats)."""

    def __init__(self, tag: str, proc_cgroup: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup"):
        self.tag, self.root = tag, Path(root)
        self.version, self.bases, self.v2_pids = None, {}, False
        try:
            lines = Path(proc_cgroup).read_text().splitlines()
        except OSError:
            return
        paths = {}
        for line in lines:
            _, ctrls, path = line.split(":", 2)
            for ctrl in ctrls.split(",") if ctrls else [""]:
                paths[ctrl] = path
        v1 = {c: self.root / c / paths[c].lstrip("/") for c in V1_CONTROLLERS if c in paths}
        v1 = {c: p for c, p in v1.items() if os.access(p, os.W_OK)}
        if {"memory", "cpu"} <= set(v1):
            self.version, self.bases = 1, {c: p / tag for c, p in v1.items()}
        elif "" in paths and (self.root / "cgroup.controllers").exists():
            base = self.root / paths[""].lstrip("/")
            if os.access(base, os.W_OK) and {"memory", "cpu"} <= set((base / "cgroup.controllers").read_text().split()):
                self.version, self.bases = 2, {"": base / tag}
                self.v2_pids = "pids" in (base / "cgroup.controllers").read_text().split()

    @property
    def available(self) -> bool:
        return self.version is not None

    @property
    def limits_pids(self) -> bool:
        return "pids" in self.bases or self.v2_pids

    @property
    def limits_devices(self) -> bool:
        return "devices" in self.bases

    def describe(self) -> str:
        if not self.available:
            return "none (no writable cgroup: limits not enforced)"
        return (f"cgroup v{self.version}: memory, cpu" + (", pids" if self.limits_pids else " (no pids controller)")
                + (", devices" if self.limits_devices else " (no devices controller)"))

    def prepare(self, name: str, mem_bytes: int | None, cpus: float | None, servers: int = 1,
                pids: int | None = None, devices: list[str] | None = None) -> list[Path]:
        """Make the learner's cgroup(s) with the limits; returns the ``cgroup.procs`` files to join.

        The hub's own group weighs as much as ``servers`` ordinary processes, so that together the servers
        get the share of the machine they would get without cgroups (a group next to other processes counts
        as ONE of them: 30 servers in one group of default weight would share one process's CPU).
        ``devices`` (v1): rules like ``"c 226:128 rw"`` allowed on top of :data:`BASE_DEVICES`; every other
        device is denied. None: no device rule (the machine's own permissions decide)."""
        if not self.available:
            return []
        procs = []
        if self.version == 1:
            dirs = {c: b / name for c, b in self.bases.items()}
            for d in dirs.values():
                d.mkdir(parents=True, exist_ok=True)
            (self.bases["cpu"] / "cpu.shares").write_text(str(1024 * max(1, servers)))
            mem, cpu = dirs["memory"], dirs["cpu"]
            if mem_bytes:
                (mem / "memory.limit_in_bytes").write_text(str(mem_bytes))
                if (mem / "memory.memsw.limit_in_bytes").exists():      # no swapping past the limit either
                    (mem / "memory.memsw.limit_in_bytes").write_text(str(mem_bytes))
            if cpus:
                period = int((cpu / "cpu.cfs_period_us").read_text())
                (cpu / "cpu.cfs_quota_us").write_text(str(int(cpus * period)))
            (cpu / "cpu.shares").write_text("1024")
            if pids and "pids" in dirs:
                (dirs["pids"] / "pids.max").write_text(str(pids))
            if devices is not None and "devices" in dirs:
                (dirs["devices"] / "devices.deny").write_text("a")
                for rule in (*BASE_DEVICES, *devices):
                    (dirs["devices"] / "devices.allow").write_text(rule)
            procs = [d / "cgroup.procs" for d in dirs.values()]
        else:
            base = self.bases[""]
            base.mkdir(exist_ok=True)
            (base / "cgroup.subtree_control").write_text("+memory +cpu" + (" +pids" if self.v2_pids else ""))
            (base / "cpu.weight").write_text(str(min(10000, 100 * max(1, servers))))
            d = base / name
            d.mkdir(exist_ok=True)
            if mem_bytes:
                (d / "memory.max").write_text(str(mem_bytes))
                if (d / "memory.swap.max").exists():
                    (d / "memory.swap.max").write_text("0")
            if cpus:
                (d / "cpu.max").write_text(f"{int(cpus * 100000)} 100000")
            (d / "cpu.weight").write_text("100")
            if pids and self.v2_pids:
                (d / "pids.max").write_text(str(pids))
            procs = [d / "cgroup.procs"]
        return procs

    def _dir(self, controller: str, name: str) -> Path | None:
        if self.version == 2:
            return self.bases[""] / name
        return self.bases[controller] / name if controller in self.bases else None

    def pids_of(self, name: str) -> tuple[int, int | None]:
        """(tasks now, pids.max or None) of the learner's cgroup."""
        d = self._dir("pids", name)
        if d is None or not (d / "pids.current").exists():
            return 0, None
        cur, top = int((d / "pids.current").read_text()), (d / "pids.max").read_text().strip()
        return cur, None if top == "max" else int(top)

    def processes_of(self, name: str) -> list[int]:
        """The pids in any of the learner's cgroups."""
        out = set()
        for c in self.bases:
            f = self.bases[c] / name / "cgroup.procs"
            if f.exists():
                out |= {int(x) for x in f.read_text().split()}
        return sorted(out)

    def limits_of(self, name: str) -> dict:
        """What the learner's cgroup enforces now (for tests and the instructor)."""
        if self.version == 1:
            mem = int((self.bases["memory"] / name / "memory.limit_in_bytes").read_text())
            cpu = self.bases["cpu"] / name
            quota, period = (int((cpu / f).read_text()) for f in ("cpu.cfs_quota_us", "cpu.cfs_period_us"))
            pids = None
            if "pids" in self.bases:
                top = (self.bases["pids"] / name / "pids.max").read_text().strip()
                pids = None if top == "max" else int(top)
            return {"memory_bytes": mem, "cpus": quota / period if quota > 0 else None, "pids": pids}
        if self.version == 2:
            d = self.bases[""] / name
            mem = (d / "memory.max").read_text().strip()
            quota, period = (d / "cpu.max").read_text().split()
            top = (d / "pids.max").read_text().strip() if (d / "pids.max").exists() else "max"
            return {"memory_bytes": None if mem == "max" else int(mem),
                    "cpus": None if quota == "max" else int(quota) / int(period),
                    "pids": None if top == "max" else int(top)}
        return {}

    def remove(self, wait_s: float = 10.0) -> list[str]:
        """Remove every learner cgroup of this hub, after killing what is still in them (SIGKILL, then wait up
        to ``wait_s``). Returns the cgroups that could not be removed (empty when all are gone)."""
        import signal
        import time

        left = []
        for base in self.bases.values():
            if not base.is_dir():
                continue
            for d in sorted((p for p in base.iterdir() if p.is_dir()), reverse=True):
                deadline = time.monotonic() + wait_s
                while True:
                    pids = [int(x) for x in (d / "cgroup.procs").read_text().split()] if (d / "cgroup.procs").exists() else []
                    for pid in pids:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    try:
                        d.rmdir()
                        break
                    except OSError:
                        if time.monotonic() > deadline:
                            left.append(str(d))
                            break
                        time.sleep(0.1)
            try:
                base.rmdir()
            except OSError:
                if base.exists():
                    left.append(str(base))
        return left


# ----------------------------------------------------------------------------- a private /tmp

_CLONE_NEWNS, _MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_SLAVE = 0x20000, 0x2, 0x4, 0x1000, 0x4000, 0x80000
_MS_RDONLY, _MS_REMOUNT = 0x1, 0x20


def _mount(libc, src, target, fstype, flags: int, data: str | None = None) -> None:
    if libc.mount(src and os.fsencode(src), os.fsencode(target), fstype and fstype.encode(), flags,
                  data and data.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def private_tmp_namespace(size: str, keep: tuple[str, ...] = (), read_only: tuple[str, ...] = ()) -> None:
    """In a server's process before it drops to the learner (root): a mount namespace of its own whose
    ``/tmp`` is an empty tmpfs of ``size`` (mode 1777), so learners share no /tmp and one cannot fill the
    node's; ``/dev/shm`` too (a tmpfs of the same size: its pages count in the learner's memory cgroup, and it
    ends with the server's last process, so nothing written there outlives the server). Mounts made later on the
    host still reach it (slave propagation). Folders of ``keep`` that lie under /tmp (the hub's own work folder,
    in tests) are bound back in at the same path, writable; folders of ``read_only`` (what the server reads: its
    Python environment, the course, the offline ROCm root, when they lie under /tmp) are bound back read-only.
    Outer folders first, so a writable folder inside a read-only one stays writable."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNS) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(CLONE_NEWNS): {os.strerror(err)}")
    _mount(libc, None, "/", None, _MS_REC | _MS_SLAVE)
    old = os.open("/tmp", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _mount(libc, "tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={size},mode=1777")
        if os.path.isdir("/dev/shm"):
            _mount(libc, "tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={size},mode=1777")
        binds = sorted({(os.path.normpath(p), False) for p in keep} | {(os.path.normpath(p), True) for p in read_only},
                       key=lambda b: (b[0].count("/"), b[1] is False))
        for path, ro in binds:
            rel = os.path.relpath(path, "/tmp")
            if rel.startswith("..") or rel == "." or not os.path.isdir(f"/proc/self/fd/{old}/{rel}"):
                continue
            target = os.path.join("/tmp", rel)
            if not os.path.isdir(target):
                os.makedirs(target, mode=0o711)
            _mount(libc, f"/proc/self/fd/{old}/{rel}", target, None, _MS_BIND | _MS_REC)
            if ro:
                _mount(libc, None, target, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID)
    finally:
        os.close(old)


def can_unshare_mounts() -> str:
    """"" when a server can get a private /tmp here (root with CAP_SYS_ADMIN), else why not."""
    if os.geteuid() != 0:
        return "the hub is not root"
    r = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    return "" if r.returncode == 0 else f"unshare --mount failed: {r.stderr.strip()}"


# ----------------------------------------------------------------------------- the spawner

#: How many of a server's last output lines a failed spawn shows.
TAIL_LINES = 12


class ServerDidNotStart(SpawnException):
    """A learner's server exited before it answered: the message holds its last lines (e.g. ``No module named
    'jupyterhub'``). JupyterHub shows it on the learner's page (``jupyterhub_message``), answers it to the API
    call that asked for the spawn, and logs it."""

    def __init__(self, message: str):
        super().__init__(message.replace("%", "%%"), reason="server-exited", status_code=500)
        self.message = self.jupyterhub_message = message


def _relay(stream, tail: collections.deque) -> None:
    """A server's output, line by line, into the hub's log (as before) and ``tail``; until the server closes it."""
    out = getattr(sys.stderr, "buffer", None)
    try:
        for line in iter(stream.readline, b""):
            tail.append(line.decode(errors="replace").rstrip())
            if out is not None:
                try:
                    out.write(line)
                    out.flush()
                except (OSError, ValueError):
                    out = None
    except (OSError, ValueError):      # JupyterHub closed the pipe after the process ended
        pass


async def _listening(ip: str, port: int) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), 2)
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    return True


class ServerSaysWhy:
    """For a local-process spawner: ``start`` returns once the server listens; a server that exits first fails
    the spawn with :class:`ServerDidNotStart` and its last lines. (JupyterHub alone waits for HTTP until
    ``http_timeout`` and then answers a bare 500: ``Exception is not set``.)"""

    async def start(self):
        self.popen_kwargs = {**self.popen_kwargs, "stderr": subprocess.PIPE}
        ip, port = await super().start()
        tail: collections.deque = collections.deque(maxlen=200)
        relay = threading.Thread(target=_relay, args=(self.proc.stderr, tail), daemon=True,
                                 name=f"server-output-{self.user.name}")
        relay.start()
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            status = self.proc.poll()
            if status is not None:
                relay.join(5)
                lines = [ln for ln in tail if ln.strip()][-TAIL_LINES:]
                raise ServerDidNotStart(
                    f"{self.user.name}'s server exited (status {status}) before it answered. Its last lines:\n"
                    + ("\n".join(lines) or "(it printed nothing)"))
            if await _listening(ip or "127.0.0.1", port):
                return ip, port
            await asyncio.sleep(0.2)
        return ip, port            # still starting: JupyterHub's own time-outs take it from here


class DryRunSpawner(ServerSaysWhy, SimpleLocalProcessSpawner):
    """``dry-run``: every server as the hub's own user; a server that cannot start says why."""


class WorkshopSpawner(ServerSaysWhy, LocalProcessSpawner):
    """``LocalProcessSpawner`` with the learner's Unix user named ``user_prefix + NAME`` (so a workshop's users
    never collide with the machine's own), a cgroup with the limits, and the instructor (an admin) as root."""

    user_prefix = Unicode("jupyter-", config=True, help="Unix user of learner NAME: PREFIX + NAME (TLJH's)")
    homes = Unicode("/home", config=True, help="the learners' homes: HOMES/NAME (0700)")
    cgroup_tag = Unicode("rocmlab-hub", config=True, help="the cgroup folder of this hub's servers")
    cpu_share = Float(0.0, config=True, help="CPU cores each learner server may use (0: no cap)")

    @property
    def system_user(self) -> str:
        return "root" if self.user.admin else f"{self.user_prefix}{self.user.name}"

    @property
    def home_dir(self) -> str:
        return str(Path(self.homes) / self.user.name)

    def make_preexec_fn(self, name):
        setuid = set_user_setuid(self.system_user, chdir=False)
        home = self.home_dir
        procs = getattr(self, "_cgroup_procs", [])
        private_tmp = getattr(self, "_private_tmp", None)      # (size, keep, read_only)
        nproc = getattr(self, "_nproc", None)

        def preexec():
            for f in procs:                     # join the learner's cgroups while still root
                with open(f, "w") as fh:
                    fh.write(str(os.getpid()))
            if private_tmp is not None:
                private_tmp_namespace(*private_tmp)
            if nproc:
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            setuid()
            os.chdir(home)

        return preexec

    def user_env(self, env):
        env["USER"] = self.system_user
        env["HOME"] = self.home_dir
        env["SHELL"] = "/bin/bash"
        return env

    def get_args(self):
        return super().get_args() + (["--allow-root"] if self.user.admin else [])

    async def move_certs(self, paths):          # internal SSL is off in this hub
        return paths


# ----------------------------------------------------------------------------- reference answers

LIST_REFERENCES = ("from rocmlab.workshop import references as R\n"
                   "import compileall, pathlib\n"
                   "for p in R.reference_files():\n"
                   "    p.suffix == '.py' and compileall.compile_file(str(p), quiet=2)\n"
                   "print('\\n'.join(map(str, R.locked_paths())))\n")


def lock_server_references(python: str) -> tuple[list[Path], str]:
    """Lock (root-only, 0600) the reference files of the rocmlab that ``python`` (the learners' servers'
    interpreter) imports, after compiling them so that no learner's import writes a readable copy, and its
    checkout's ``.git`` and ``tests/`` (0700; :func:`references.checkout_dirs`). Returns (the paths locked, "")
    or ([], why not)."""
    if os.geteuid() != 0:
        return [], "the hub is not root"
    r = subprocess.run([python, "-c", LIST_REFERENCES], capture_output=True, text=True, timeout=120, cwd="/",
                       env={**os.environ, references.ENV: ""})      # cwd /: no checkout in the folder wins
    if r.returncode != 0:
        return [], f"{python} could not list its reference files: {r.stderr.strip()[-300:]}"
    try:
        return references.lock([Path(p) for p in r.stdout.split("\n") if p.strip()]), ""
    except OSError as exc:
        return [], f"locking the reference files failed: {exc}"


# ----------------------------------------------------------------------------- the config

def configure(c, s: dict) -> None:
    """Configure JupyterHub (``c``, its config) from the settings :func:`rocmlab.workshop.hub.write_config` wrote
    into the config file (``s``: their JSON, the file's format): the hub, its learners' servers, the plan every
    spawn follows (:class:`SpawnPlan`) and its hooks; print what the servers are limited to."""
    mode = s.get("mode", "users")
    if mode not in MODES:
        raise ValueError(f"hub mode {mode!r}: use one of {MODES}")
    _configure_hub(c, s)
    _configure_servers(c, s, mode)
    plan = SpawnPlan.from_settings(s, mode, c.Spawner.cmd[0])
    c.Spawner.pre_spawn_hook = _pre_spawn_hook(s, plan)
    c.Spawner.post_stop_hook = _post_stop
    print(plan.summary(s), file=sys.stderr)


def _configure_hub(c, s: dict) -> None:
    """The hub itself: loopback only, its ports, files, the shared password, its admin service and idle culler."""
    work = Path(s["workdir"])
    c.JupyterHub.ip = "127.0.0.1"
    c.JupyterHub.port = s["port"]
    c.JupyterHub.hub_ip = "127.0.0.1"
    c.JupyterHub.hub_port = s["hub_port"]
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{s['proxy_api_port']}"
    if s.get("proxy"):
        c.ConfigurableHTTPProxy.command = [s["proxy"]]
    c.JupyterHub.db_url = f"sqlite:///{work / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(work / "jupyterhub_cookie_secret")
    c.JupyterHub.pid_file = str(work / "jupyterhub.pid")
    c.JupyterHub.cleanup_servers = True
    c.JupyterHub.cleanup_proxy = True

    c.JupyterHub.authenticator_class = "dummy"
    c.DummyAuthenticator.password = s["password"]
    c.Authenticator.allowed_users = set(s["learners"])
    c.Authenticator.admin_users = {s["instructor"]}
    services = [{"name": "rocmlab-admin", "api_token": s["token"]}]
    roles = [{"name": "rocmlab-admin", "services": ["rocmlab-admin"],
              "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "read:users",
                         "list:services", "read:services"]}]
    if s.get("cull_idle_s"):
        services.append({"name": "idle-culler", "command": [
            s["python"], "-m", "jupyterhub_idle_culler", f"--timeout={int(s['cull_idle_s'])}",
            f"--cull-every={max(1, int(s['cull_idle_s']) // 4)}"]})
        roles.append({"name": "idle-culler", "services": ["idle-culler"],
                      "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]})
    c.JupyterHub.services = services
    c.JupyterHub.load_roles = roles


def _configure_servers(c, s: dict, mode: str) -> None:
    """How every server starts (its command, arguments, environment, JupyterHub's limits) and which spawner
    starts it: :class:`WorkshopSpawner` (users) or :class:`DryRunSpawner`."""
    homes = Path(s["homes"])
    c.Spawner.cmd = [s.get("server_python") or s["python"], "-m", "jupyterhub.singleuser"]
    c.Spawner.args = ["--ServerApp.ip=127.0.0.1", *s.get("server_args", [])]
    c.Spawner.default_url = "/lab"
    c.Spawner.environment = {k: v for k, v in s["environment"].items() if v}
    c.Spawner.start_timeout = 180
    c.Spawner.http_timeout = 180
    c.Spawner.notebook_dir = "~"
    c.Spawner.mem_limit = s.get("mem_limit") or None
    c.Spawner.cpu_limit = s.get("cpu_limit") or None
    if mode == "users":
        c.JupyterHub.spawner_class = WorkshopSpawner
        c.WorkshopSpawner.user_prefix = s["user_prefix"]
        c.WorkshopSpawner.homes = str(homes)
    else:
        c.JupyterHub.spawner_class = DryRunSpawner
        c.DryRunSpawner.home_dir_template = str(homes / "{username}")
        if os.geteuid() == 0:
            c.Spawner.args = [*c.Spawner.args, "--allow-root"]


@dataclass(frozen=True)
class SpawnPlan:
    """What every spawn follows, worked out once when the hub starts (:meth:`from_settings`): the mode, the
    folders, the cgroups, GPU seats and their device nodes, each server's limits, what its private /tmp keeps, and
    whether the reference answers are withheld (and locked)."""
    mode: str
    work: Path                           # the hub's own folder (WORK/hub)
    homes: Path
    cgroups: Cgroups
    assigner: seats.GpuAssigner
    mem_bytes: int | None
    disk: tuple[Path, int] | None        # (images folder, bytes): each home a file system of that size
    pids: int | None
    why_no_ns: str                       # why there is no private /tmp ("" when there is)
    gpu_devices: list | None             # per seat, its device nodes
    enforce_devices: bool                # each server may open only its seat's device nodes
    keep: tuple[str, ...]                # folders the private /tmp leaves visible
    server_reads: tuple[str, ...]        # bound back read-only: rocmlab.workshop.hub.server_reads
    withhold: bool                       # reference answers withheld from learners
    locked: tuple[Path, ...]
    why_not_locked: str

    @classmethod
    def from_settings(cls, s: dict, mode: str, server_python: str) -> SpawnPlan:
        """The plan for the settings ``s``; locks the reference files of ``server_python`` when they are withheld."""
        work, homes = Path(s["workdir"]), Path(s["homes"])
        cgroups = Cgroups(s.get("cgroup_tag") or f"rocmlab-hub-{s['port']}")
        assigner = seats.GpuAssigner(work / "gpu-seats.json", s["n_gpus"])
        mem_bytes = parse_bytes(s["mem_limit"]) if s.get("mem_limit") else None
        disk = (work / "disks", parse_bytes(s["disk_limit"])) if mode == "users" and s.get("disk_limit") else None
        pids = int(s["pids_limit"]) if s.get("pids_limit") else None
        why_no_ns = can_unshare_mounts() if mode == "users" and s.get("tmp_limit") else "not asked"
        gpu_devices = s.get("gpu_devices")
        if gpu_devices == "auto":
            gpu_devices = seats.seat_device_paths(s["n_gpus"])
        enforce_devices = mode == "users" and bool(gpu_devices) and cgroups.limits_devices
        keep = tuple(str(Path(p)) for p in (work.parent, s["exchange"], homes, *s.get("keep_visible", [])))
        withhold = mode == "users" and s.get("references", "withheld") != "kept"
        locked, why_not_locked = (lock_server_references(server_python) if withhold
                                  else ([], "kept (self-study)" if mode == "users" else "kept (dry run)"))
        return cls(mode, work, homes, cgroups, assigner, mem_bytes, disk, pids, why_no_ns, gpu_devices,
                   enforce_devices, keep, tuple(s.get("server_reads", ())), withhold, tuple(locked), why_not_locked)

    def summary(self, s: dict) -> str:
        """The line the hub prints at start: every limit, and where the reference answers are."""
        if not self.withhold:
            refs_said = self.why_not_locked
        elif self.locked:
            refs_said = f"withheld from learners ({references.ENV}=off, {len(self.locked)} files locked root-only)"
        else:
            refs_said = (f"withheld from learners by the setting only ({references.ENV}=off; NOT locked: "
                         f"{self.why_not_locked})")
        return (f"rocmlab hub: mode {self.mode}; limits per server: memory {s.get('mem_limit') or 'none'}, "
                f"CPU {s.get('cpu_limit') or 'none'}, processes {self.pids or 'no cap'} ({self.cgroups.describe()}); "
                f"disk {s.get('disk_limit') if self.disk else 'no cap'}; private /tmp "
                f"{s.get('tmp_limit') if not self.why_no_ns else 'off (' + self.why_no_ns + ')'}; {s['n_gpus']} GPU "
                f"seats, devices {'enforced per seat' if self.enforce_devices else 'not enforced (HIP_VISIBLE_DEVICES only)'}; "
                f"idle culler {str(s.get('cull_idle_s')) + ' s' if s.get('cull_idle_s') else 'off'}; reference answers "
                f"{refs_said}")


def _pre_spawn_hook(s: dict, plan: SpawnPlan):
    """The hook before each server starts: the learner's Unix user, GPU seat, hand-in folder, cgroup and private
    /tmp (users mode); the instructor's environment; the home's own settings."""
    seat_hook = seats.make_pre_spawn_hook(plan.assigner, exchange=s["exchange"], devices_enforced=plan.enforce_devices)

    def pre_spawn(spawner):
        name = spawner.user.name
        home = plan.homes / name
        if spawner.user.admin:      # the instructor grades with the node's toolchain, frees seats (`seats release`)
            spawner.environment = {**(spawner.environment or {}), **s.get("admin_environment", {}),
                                   "ROCMLAB_GPU_STATE": str(plan.assigner.path)}
        learner = plan.mode == "users" and not spawner.user.admin
        if learner:         # the Unix user first: the seat hook gives them their hand-in folder
            pw = ensure_unix_user(spawner.system_user, home, record=plan.work / "created-users", disk=plan.disk)
        seat_hook(spawner)
        if learner:
            _confine_learner(spawner, s, plan, pw)
            uid, gid = pw.pw_uid, pw.pw_gid
        else:
            home.mkdir(parents=True, exist_ok=True)
            os.chmod(home, 0o700)
            uid, gid = os.geteuid(), os.getegid()
            spawner._cgroup_procs = []
        for step in (_quiet_lab if s.get("quiet_lab") else None, _course_on_path):
            if step is None:
                continue
            try:
                step(home, uid, gid, s["environment"].get("PATH", ""))
            except OSError as exc:      # a planted link (PlantedLink), a full home: logged, the server starts
                spawner.log.warning("rocmlab: %s: %s", name, exc)

    return pre_spawn


def _confine_learner(spawner, s: dict, plan: SpawnPlan, pw) -> None:
    """A learner's server (users mode): its hand-in folder a file system of its own size, its cgroup (memory, CPU,
    processes, its seat's device nodes), private /tmp, process cap, and what its environment withholds."""
    name = spawner.user.name
    if plan.disk and s.get("exchange"):     # the hand-in folder: a file system of its own size too
        mount_home_disk(Path(s["exchange"]) / "inbound" / name, plan.disk[0] / f"{spawner.system_user}-inbound.img",
                        xchg.INBOUND_BYTES)
        xchg.prepare_learner(s["exchange"], name, uid=pw.pw_uid, gid=pw.pw_gid)   # its root: theirs, 0700
    seat = int(spawner.environment["ROCMLAB_WORKSHOP_GPU"])
    devices = seats.device_rules(plan.gpu_devices[seat]) if plan.enforce_devices else None
    spawner._cgroup_procs = plan.cgroups.prepare(name, plan.mem_bytes, s.get("cpu_limit"), len(s["learners"]) + 1,
                                                 pids=plan.pids, devices=devices)
    spawner._private_tmp = (s["tmp_limit"], plan.keep, plan.server_reads) if not plan.why_no_ns else None
    spawner._nproc = plan.pids if not plan.cgroups.limits_pids else None     # the fallback without a pids cgroup
    if plan.withhold:     # the reference modules refuse to load; the lock keeps their files unreadable
        spawner.environment[references.ENV] = "off"
    if plan.disk:
        spawner.environment["ROCMLAB_DISK_LIMIT"] = str(s["disk_limit"])
    if s.get("cpu_limit"):     # torch and OpenMP start one thread per core of the NODE otherwise
        spawner.environment.setdefault("OMP_NUM_THREADS", str(max(1, int(float(s["cpu_limit"]) + 0.5))))


def _post_stop(spawner) -> None:
    spawner.log.info("rocmlab: %s's server stopped; their GPU seat stays theirs until an admin releases it",
                     spawner.user.name)


#: Where the notification settings live in a learner's home (JupyterLab's user settings).
QUIET_LAB_SETTINGS = ".jupyter/lab/user-settings/@jupyterlab/apputils-extension/notification.jupyterlab-settings"


def _quiet_lab(home: Path, uid: int, gid: int, _path: str = "") -> None:
    """No news or update pop-ups in the learner's JupyterLab (they would cover screenshots). Written without
    following any link the learner planted (:mod:`.learner_space`)."""
    learner_space.write_file(home, uid, gid, QUIET_LAB_SETTINGS,
                             json.dumps({"fetchNews": "false", "checkForUpdates": False}).encode())


def _course_on_path(home: Path, uid: int, gid: int, path: str) -> None:
    """The course's ``python`` and ``rocmlab`` in the learner's terminals: JupyterLab's terminal is a login
    shell, which takes PATH from /etc/profile and ~/.profile, not from the server's environment. Written
    without following any link the learner planted (:mod:`.learner_space`)."""
    if path:
        learner_space.append_line(home, uid, gid, ".profile",
                                  f'export PATH="{path}"  # rocmlab workshop: the course\'s python and rocmlab first\n')
