"""JupyterHub configuration for a workshop on one machine: loopback only, DummyAuthenticator, one JupyterLab
process per learner (SimpleLocalProcessSpawner: all as the hub's Unix user), a GPU seat per learner.

Called from the config file :func:`rocmlab.workshop.hub.write_config` writes. For a real node use
binder/tljh/ (each learner a Unix user, SystemdSpawner) or binder/jupyterhub/ (Kubernetes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rocmlab.workshop import seats


def configure(c, s: dict) -> None:
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
    c.JupyterHub.services = [{"name": "rocmlab-admin", "api_token": s["token"]}]
    c.JupyterHub.load_roles = [{"name": "rocmlab-admin", "services": ["rocmlab-admin"],
                                "scopes": ["admin:users", "admin:servers", "tokens", "access:servers",
                                           "read:users"]}]

    c.JupyterHub.spawner_class = "simple"
    c.SimpleLocalProcessSpawner.home_dir_template = str(work / "home" / "{username}")
    c.Spawner.cmd = [s["python"], "-m", "jupyterhub.singleuser"]
    c.Spawner.args = ["--ServerApp.ip=127.0.0.1"] + (["--allow-root"] if os.geteuid() == 0 else [])
    c.Spawner.default_url = "/lab"
    c.Spawner.environment = {k: v for k, v in s["environment"].items() if v}
    c.Spawner.start_timeout = 180
    c.Spawner.http_timeout = 180
    c.Spawner.notebook_dir = "~"

    assigner = seats.GpuAssigner(work / "gpu-seats.json", s["n_gpus"])
    seat_hook = seats.make_pre_spawn_hook(assigner, exchange=s["exchange"])

    def pre_spawn(spawner):
        home = Path(spawner.home_dir)
        home.mkdir(parents=True, exist_ok=True)
        if s.get("quiet_lab"):
            _quiet_lab(home)
        seat_hook(spawner)

    c.Spawner.pre_spawn_hook = pre_spawn


def _quiet_lab(home: Path) -> None:
    """No news or update pop-ups in the learner's JupyterLab (they would cover screenshots)."""
    d = home / ".jupyter" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    d.mkdir(parents=True, exist_ok=True)
    (d / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false",
                                                                    "checkForUpdates": False}))
