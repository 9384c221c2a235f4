"""JupyterHub configuration for a workshop on one machine: each learner their own Unix user, a GPU seat each.

Called from the config file :func:`rocmlab.workshop.hub.write_config` writes. Two modes:

- ``users`` (the workshop): the hub runs as root. On a learner's first spawn it creates (or reuses) the Unix
  user ``PREFIX + NAME`` with a private home (0700) under ``homes``, and :class:`WorkshopSpawner` starts the
  learner's JupyterLab as that user (JupyterHub's ``LocalProcessSpawner``: setuid, setgid, their own groups),
  in a cgroup with the memory and CPU limits of ``limits``. The instructor (the hub's admin) grades, so their
  server runs as root, like an admin of The Littlest JupyterHub who has sudo.
- ``dry-run``: JupyterHub's ``SimpleLocalProcessSpawner``: every server as the hub's own Unix user. Nothing
  keeps learners apart: it is for trying the course alone, and as the control of the isolation tests.

Both: DummyAuthenticator (one shared password, the listed users only), loopback only, the GPU-seat hook of
:mod:`rocmlab.workshop.seats`, and jupyterhub-idle-culler as a hub service (stops idle servers; the seat stays).
For a real node see binder/tljh/ (SystemdSpawner, the same hook) or binder/jupyterhub/ (Kubernetes).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import subprocess
import sys
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
from traitlets import Float, Unicode

from rocmlab.workshop import seats

MODES = ("users", "dry-run")


# ----------------------------------------------------------------------------- Unix users

def ensure_unix_user(system_name: str, home: Path, record: Path | None = None) -> pwd.struct_passwd:
    """The Unix user ``system_name`` with its own group and the private home ``home`` (0700); created if
    missing (``useradd``; its name is then appended to ``record``). An existing user is used as it is, but
    its home is made its own and private."""
    try:
        pw = pwd.getpwnam(system_name)
    except KeyError:
        if record is not None:
            with open(record, "a") as fh:
                fh.write(system_name + "\n")
        home.parent.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--user-group", "--shell",
                            "/bin/bash", "--comment", "rocmlab workshop learner", system_name],
                           capture_output=True, text=True)
        if r.returncode != 0 and "already exists" not in r.stderr:
            raise RuntimeError(f"useradd {system_name} failed: {r.stderr.strip()}") from None
        pw = pwd.getpwnam(system_name)
    os.makedirs(pw.pw_dir, mode=0o700, exist_ok=True)
    st = os.lstat(pw.pw_dir)
    if st.st_uid != pw.pw_uid:
        os.chown(pw.pw_dir, pw.pw_uid, pw.pw_gid)
    os.chmod(pw.pw_dir, 0o700)
    return pw


def remove_unix_user(system_name: str) -> bool:
    """``userdel --remove`` (home too); False if there was no such user."""
    try:
        pwd.getpwnam(system_name)
    except KeyError:
        return False
    subprocess.run(["pkill", "-KILL", "-u", system_name], capture_output=True)
    r = subprocess.run(["userdel", "--remove", system_name], capture_output=True, text=True)
    if r.returncode not in (0, 12):              # 12: the home could not be removed (already gone)
        raise RuntimeError(f"userdel {system_name} failed: {r.stderr.strip()}")
    return True


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


class Cgroups:
    """One cgroup per learner server under the hub's own (cgroup v2, or v1's memory and cpu hierarchies):
    ``memory`` caps what the server and its kernels may use, ``cpu`` caps its CPU time at ``cpus`` cores
    (a quota per 100 ms) and gives every server the same share (weight) when the machine is busy: the
    weight of one ordinary process, as without cgroups (:meth:`prepare`)."""

    def __init__(self, tag: str, proc_cgroup: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup"):
        self.tag, self.root = tag, Path(root)
        self.version, self.bases = None, {}
        try:
            lines = Path(proc_cgroup).read_text().splitlines()
        except OSError:
            return
        paths = {}
        for line in lines:
            _, ctrls, path = line.split(":", 2)
            for ctrl in ctrls.split(",") if ctrls else [""]:
                paths[ctrl] = path
        v1 = {c: self.root / c / paths[c].lstrip("/") for c in ("memory", "cpu") if c in paths}
        if len(v1) == 2 and all(os.access(p, os.W_OK) for p in v1.values()):
            self.version, self.bases = 1, {c: p / tag for c, p in v1.items()}
        elif "" in paths and (self.root / "cgroup.controllers").exists():
            base = self.root / paths[""].lstrip("/")
            if os.access(base, os.W_OK) and {"memory", "cpu"} <= set((base / "cgroup.controllers").read_text().split()):
                self.version, self.bases = 2, {"": base / tag}

    @property
    def available(self) -> bool:
        return self.version is not None

    def describe(self) -> str:
        return f"cgroup v{self.version}" if self.available else "none (no writable cgroup: limits not enforced)"

    def prepare(self, name: str, mem_bytes: int | None, cpus: float | None, servers: int = 1) -> list[Path]:
        """Make the learner's cgroup(s) with the limits; returns the ``cgroup.procs`` files to join.

        The hub's own group weighs as much as ``servers`` ordinary processes, so that together the servers
        get the share of the machine they would get without cgroups (a group next to other processes counts
        as ONE of them: 30 servers in one group of default weight would share one process's CPU)."""
        if not self.available:
            return []
        procs = []
        if self.version == 1:
            mem, cpu = self.bases["memory"] / name, self.bases["cpu"] / name
            for d in (mem, cpu):
                d.mkdir(parents=True, exist_ok=True)
            (self.bases["cpu"] / "cpu.shares").write_text(str(1024 * max(1, servers)))
            if mem_bytes:
                (mem / "memory.limit_in_bytes").write_text(str(mem_bytes))
                if (mem / "memory.memsw.limit_in_bytes").exists():      # no swapping past the limit either
                    (mem / "memory.memsw.limit_in_bytes").write_text(str(mem_bytes))
            if cpus:
                period = int((cpu / "cpu.cfs_period_us").read_text())
                (cpu / "cpu.cfs_quota_us").write_text(str(int(cpus * period)))
            (cpu / "cpu.shares").write_text("1024")
            procs = [mem / "cgroup.procs", cpu / "cgroup.procs"]
        else:
            base = self.bases[""]
            base.mkdir(exist_ok=True)
            (base / "cgroup.subtree_control").write_text("+memory +cpu")
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
            procs = [d / "cgroup.procs"]
        return procs

    def limits_of(self, name: str) -> dict:
        """What the learner's cgroup enforces now (for tests and the instructor)."""
        if self.version == 1:
            mem = int((self.bases["memory"] / name / "memory.limit_in_bytes").read_text())
            cpu = self.bases["cpu"] / name
            quota, period = (int((cpu / f).read_text()) for f in ("cpu.cfs_quota_us", "cpu.cfs_period_us"))
            return {"memory_bytes": mem, "cpus": quota / period if quota > 0 else None}
        if self.version == 2:
            d = self.bases[""] / name
            mem = (d / "memory.max").read_text().strip()
            quota, period = (d / "cpu.max").read_text().split()
            return {"memory_bytes": None if mem == "max" else int(mem),
                    "cpus": None if quota == "max" else int(quota) / int(period)}
        return {}

    def remove(self) -> None:
        """Remove every learner cgroup of this hub (their processes must be gone)."""
        for base in self.bases.values():
            if base.is_dir():
                for d in sorted(base.iterdir(), reverse=True):
                    if d.is_dir():
                        try:
                            d.rmdir()
                        except OSError:
                            pass
                try:
                    base.rmdir()
                except OSError:
                    pass


# ----------------------------------------------------------------------------- the spawner

class WorkshopSpawner(LocalProcessSpawner):
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

        def preexec():
            for f in procs:                     # join the learner's cgroups while still root
                with open(f, "w") as fh:
                    fh.write(str(os.getpid()))
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


# ----------------------------------------------------------------------------- the config

def configure(c, s: dict) -> None:
    work = Path(s["workdir"])
    mode = s.get("mode", "users")
    if mode not in MODES:
        raise ValueError(f"hub mode {mode!r}: use one of {MODES}")
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

    cgroups = Cgroups(s.get("cgroup_tag") or f"rocmlab-hub-{s['port']}")
    if mode == "users":
        c.JupyterHub.spawner_class = WorkshopSpawner
        c.WorkshopSpawner.user_prefix = s["user_prefix"]
        c.WorkshopSpawner.homes = str(homes)
    else:
        c.JupyterHub.spawner_class = "simple"
        c.SimpleLocalProcessSpawner.home_dir_template = str(homes / "{username}")
        if os.geteuid() == 0:
            c.Spawner.args = [*c.Spawner.args, "--allow-root"]

    assigner = seats.GpuAssigner(work / "gpu-seats.json", s["n_gpus"])
    seat_hook = seats.make_pre_spawn_hook(assigner, exchange=s["exchange"])
    mem_bytes = parse_bytes(s["mem_limit"]) if s.get("mem_limit") else None

    def pre_spawn(spawner):
        name = spawner.user.name
        home = homes / name
        if spawner.user.admin:      # the instructor grades with the node's toolchain, frees seats (`seats release`)
            spawner.environment = {**(spawner.environment or {}), **s.get("admin_environment", {}),
                                   "ROCMLAB_GPU_STATE": str(assigner.path)}
        if mode == "users" and not spawner.user.admin:
            pw = ensure_unix_user(spawner.system_user, home, record=work / "created-users")
            uid, gid = pw.pw_uid, pw.pw_gid
            spawner._cgroup_procs = cgroups.prepare(name, mem_bytes, s.get("cpu_limit"), len(s["learners"]) + 1)
        else:
            home.mkdir(parents=True, exist_ok=True)
            os.chmod(home, 0o700)
            uid = gid = None
            spawner._cgroup_procs = []
        if s.get("quiet_lab"):
            _quiet_lab(home, uid, gid)
        _course_on_path(home, s["environment"].get("PATH", ""), uid, gid)
        seat_hook(spawner)

    def post_stop(spawner):
        spawner.log.info("rocmlab: %s's server stopped; their GPU seat stays theirs until an admin releases it",
                         spawner.user.name)

    c.Spawner.pre_spawn_hook = pre_spawn
    c.Spawner.post_stop_hook = post_stop
    print(f"rocmlab hub: mode {mode}; limits per server: memory {s.get('mem_limit') or 'none'}, "
          f"CPU {s.get('cpu_limit') or 'none'} ({cgroups.describe()}); {s['n_gpus']} GPU seats; "
          f"idle culler {str(s.get('cull_idle_s')) + ' s' if s.get('cull_idle_s') else 'off'}", file=sys.stderr)


def _quiet_lab(home: Path, uid: int | None, gid: int | None) -> None:
    """No news or update pop-ups in the learner's JupyterLab (they would cover screenshots)."""
    parts = [".jupyter", "lab", "user-settings", "@jupyterlab", "apputils-extension"]
    d = home
    for p in parts:
        d = d / p
        d.mkdir(exist_ok=True)
        if uid is not None:
            os.chown(d, uid, gid)
    f = d / "notification.jupyterlab-settings"
    f.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    if uid is not None:
        os.chown(f, uid, gid)


def _course_on_path(home: Path, path: str, uid: int | None, gid: int | None) -> None:
    """The course's ``python`` and ``rocmlab`` in the learner's terminals: JupyterLab's terminal is a login
    shell, which takes PATH from /etc/profile and ~/.profile, not from the server's environment."""
    if not path:
        return
    f = home / ".profile"
    line = f'export PATH="{path}"  # rocmlab workshop: the course\'s python and rocmlab first\n'
    text = f.read_text() if f.exists() else ""
    if line not in text:
        f.write_text(text + ("" if text.endswith("\n") or not text else "\n") + line)
        if uid is not None:
            os.chown(f, uid, gid)
