"""The hub's configuration rendered for fixed inputs, against the text it rendered before issue 55 split
:func:`rocmlab.workshop.hubconfig.configure` and :func:`rocmlab.workshop.hub.jupyterhub` into stages (kept in
tests/hub/config_render/, captured from the code before the split): the config file
:func:`~rocmlab.workshop.hub.write_config` writes, byte for byte; what that file sets when JupyterHub runs it (every
setting, in a normalized form: paths under the test's folder as WORK, hooks as ``<function>``); the line it prints;
and what its pre-spawn hook does for an instructor and (dry run) a learner. No hub is started: what depends on
the machine (cgroups, mount namespaces, the reference lock, free ports) is fixed by the test."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from traitlets.config import Config

from rocmlab.workshop import hub, hubconfig

EXPECTED = Path(__file__).parent / "config_render"

#: The texts were captured as root (as a workshop hub runs: a dry-run hub as root adds --allow-root).
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the expected texts are a root hub's")


class FakeCgroups:
    """Cgroups as a v1 machine with every controller has them, or none (``available=False``); never written."""

    available = True

    def __init__(self, tag: str):
        self.tag = tag

    @property
    def limits_pids(self) -> bool:
        return self.available

    @property
    def limits_devices(self) -> bool:
        return self.available

    def describe(self) -> str:
        return f"fake cgroups {self.tag}" if self.available else "none (fake)"

    def prepare(self, *a, **k):
        raise AssertionError("only learners' servers in users mode get a cgroup: not spawned here")


class NoCgroups(FakeCgroups):
    available = False


class Log:
    def __init__(self):
        self.lines = []

    def info(self, fmt, *args):
        self.lines.append("info: " + fmt % args)

    def warning(self, fmt, *args):
        self.lines.append("warning: " + fmt % args)


def _spawner(name: str, admin: bool):
    return SimpleNamespace(user=SimpleNamespace(name=name, admin=admin), environment={"FROM_CONFIG": "1"},
                           log=Log())


def _shown(value, work: str) -> str:
    if isinstance(value, type):
        text = f"<class {value.__module__}.{value.__qualname__}>"
    elif callable(value):
        text = "<function>"
    elif isinstance(value, set):
        text = repr(sorted(value))
    else:
        text = repr(value)
    return text.replace(work, "WORK")


def render(c: Config, work: Path) -> str:
    return "\n".join(f"{section}.{key} = {_shown(value, str(work))}"
                     for section in sorted(c) for key, value in sorted(c[section].items()))


def _tree(root: Path, work: Path) -> list[str]:
    out = []
    for p in sorted(root.rglob("*")):
        mode = f"{p.stat().st_mode & 0o7777:o}"
        body = p.read_text() if p.is_file() else ""
        out.append(f"{p.relative_to(work)} {mode} {body!r}".replace(str(work), "WORK"))
    return out


def _written(tmp_path: Path, monkeypatch, **options) -> Path:
    """write_config for two learners, with the ports, this Python and the proxy fixed."""
    ports = iter(range(42001, 42100))
    monkeypatch.setattr(hub, "free_port", lambda: next(ports))
    monkeypatch.setattr(sys, "executable", "/opt/py/bin/python")
    monkeypatch.setattr(hub.shutil, "which", lambda name: f"/usr/bin/{name}")
    state = tmp_path / "hub"
    state.mkdir()
    return hub.write_config(state, learners=["ada", "bob"], instructor="instructor", n_gpus=2,
                            exchange=tmp_path / "exchange", homes=tmp_path / "home", port=41000, token="TOKEN",
                            password="PASSWORD", **options)


def _run_config(path: Path, capsys) -> tuple[Config, str]:
    """The config file as JupyterHub runs it (``c`` given); the line it printed."""
    c = Config()
    capsys.readouterr()
    exec(compile(path.read_text(), str(path), "exec"), {"c": c})
    return c, capsys.readouterr().err


def _check(name: str, text: str) -> None:
    expected = (EXPECTED / f"{name}.txt").read_text()
    assert text == expected, f"{name}: rendered config differs from {EXPECTED / name}.txt"


def _spawned(c: Config, tmp_path: Path, names: list[tuple[str, bool]]) -> list[str]:
    out = []
    for name, admin in names:
        sp = _spawner(name, admin)
        c.Spawner.pre_spawn_hook(sp)
        out.append(f"{name} environment: {_shown(sp.environment, str(tmp_path))}")
        out.append(f"{name} cgroup procs: {sp._cgroup_procs!r}")
        out += [f"{name} log {line}" for line in sp.log.lines]
        c.Spawner.post_stop_hook(sp)
        out += [f"{name} stopped {line}" for line in sp.log.lines[-1:]]
    return out + _tree(tmp_path / "home", tmp_path)


def test_dry_run_config_file_settings_and_spawns_are_as_before(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(hubconfig, "Cgroups", NoCgroups)
    path = _written(tmp_path, monkeypatch, mode="dry-run")
    _check("dry_run_file", path.read_text().replace(str(tmp_path), "WORK"))
    assert f"{path.stat().st_mode & 0o777:o}" == "600"
    c, said = _run_config(path, capsys)
    _check("dry_run_settings", render(c, tmp_path) + "\n" + said)
    (tmp_path / "exchange").mkdir()
    _check("dry_run_spawns", "\n".join(_spawned(c, tmp_path, [("ada", False), ("instructor", True)])) + "\n")


def test_users_config_with_every_option_is_as_before(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(hubconfig, "Cgroups", FakeCgroups)
    monkeypatch.setattr(hubconfig, "can_unshare_mounts", lambda: "")
    monkeypatch.setattr(hubconfig, "lock_server_references", lambda python: ([Path("/a.py"), Path(python)], ""))
    path = _written(tmp_path, monkeypatch, mode="users", user_prefix="rl-", environment={
        "PATH": "/x/bin", "PYTHONPATH": "", "ROCMLAB_QUICK": "1"}, quiet_lab=True, mem_limit="3G", cpu_limit=2.4,
        cull_idle_s=600, server_args=["--a=1"], server_python="/opt/other/python",
        admin_environment={"ROCMLAB_HOME": "/root/rl"}, pids_limit=512, disk_limit="4G", tmp_limit="1G",
        gpu_devices=[["/dev/kfd", "/dev/dri/renderD128"], ["/dev/kfd", "/dev/dri/renderD136"]],
        server_reads=["/tmp/clone"])
    _check("users_file", path.read_text().replace(str(tmp_path), "WORK"))
    c, said = _run_config(path, capsys)
    _check("users_settings", render(c, tmp_path) + "\n" + said)
    _check("users_spawns", "\n".join(_spawned(c, tmp_path, [("instructor", True)])) + "\n")


@pytest.mark.parametrize("refs", ["withheld", "kept"])
def test_users_config_without_locks_cgroups_or_namespaces_is_as_before(tmp_path, monkeypatch, capsys, refs):
    monkeypatch.setattr(hubconfig, "Cgroups", NoCgroups)
    monkeypatch.setattr(hubconfig, "can_unshare_mounts", lambda: "unshare --mount failed: no")
    monkeypatch.setattr(hubconfig, "lock_server_references", lambda python: ([], "the hub is not root"))
    path = _written(tmp_path, monkeypatch, mode="users", cpu_limit=None, mem_limit=None, cull_idle_s=None,
                    tmp_limit="1G", gpu_devices=None, quiet_lab=False)
    s = json.loads(json.loads(path.read_text().split("json.loads(", 1)[1].rsplit("))", 1)[0]))
    s["references"] = refs
    c = Config()
    capsys.readouterr()
    hubconfig.configure(c, s)
    _check(f"users_bare_{refs}", render(c, tmp_path) + "\n" + capsys.readouterr().err)


def test_an_unknown_mode_is_refused_with_the_same_words(tmp_path):
    with pytest.raises(ValueError) as exc:
        hubconfig.configure(Config(), {"workdir": str(tmp_path), "mode": "single"})
    assert str(exc.value) == "hub mode 'single': use one of ('users', 'dry-run')"


def test_the_expected_texts_were_captured_before_the_split():
    """Every expected text is here and names no machine-dependent path (the test's folder is WORK)."""
    names = sorted(p.stem for p in EXPECTED.glob("*.txt"))
    assert names == sorted(["dry_run_file", "dry_run_settings", "dry_run_spawns", "users_file", "users_settings",
                            "users_spawns", "users_bare_withheld", "users_bare_kept"])
    for n in names:
        assert "/tmp/pytest" not in (EXPECTED / f"{n}.txt").read_text(), n
