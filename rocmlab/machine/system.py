"""Which operating system this is, and whether it runs in a container: what set-up decides by and the
doctor names first (AMD's ROCm images are Ubuntu; the course is also set up on Debian).

Read through a :class:`~rocmlab.machine.detect.Probe`, so tests run it on fake file trees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocmlab.machine.detect import Probe

#: The distributions set-up is proven on (docs/setup/, a page per platform): id -> versions.
TESTED: dict[str, tuple[str, ...]] = {"debian": ("12", "13"), "ubuntu": ("22.04", "24.04")}

_CGROUP_HINTS = (("kubepods", "kubernetes"), ("docker", "docker"), ("containerd", "containerd"),
                 ("libpod", "podman"), ("lxc", "lxc"))


@dataclass(frozen=True)
class System:
    id: str                    # os-release ID: debian, ubuntu, ... ('unknown' without /etc/os-release)
    version: str               # VERSION_ID: 12, 24.04 ('' when absent, e.g. Debian sid)
    pretty: str                # PRETTY_NAME
    container: str | None      # docker, podman, kubernetes, containerd, lxc, wsl-free 'container' ..., or None

    @property
    def tested(self) -> bool:
        return self.version in TESTED.get(self.id, ())

    def label(self) -> str:
        where = f"container: {self.container}" if self.container else "not a container"
        return f"{self.pretty} ({where})"

    def to_dict(self) -> dict:
        return {"id": self.id, "version": self.version, "pretty": self.pretty, "container": self.container,
                "tested": self.tested}


def _os_release(probe: Probe) -> dict[str, str]:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            text = probe.path(path).read_text()
        except OSError:
            continue
        out = {}
        for line in text.splitlines():
            m = re.match(r"\s*([A-Z_]+)=(.*)", line)
            if m:
                out[m.group(1)] = m.group(2).strip().strip('"').strip("'")
        return out
    return {}


def container(probe: Probe) -> str | None:
    """The container kind this process runs in, or None: /.dockerenv (Docker), /run/.containerenv (Podman),
    the ``container`` variable (systemd-nspawn, Podman), Kubernetes' variables, or PID 1's cgroup."""
    if probe.path("/.dockerenv").exists():
        return "docker"
    if probe.path("/run/.containerenv").exists():
        return "podman"
    if probe.env.get("container"):
        return probe.env["container"]
    if probe.env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    try:
        cgroup = probe.path("/proc/1/cgroup").read_text()
    except OSError:
        return None
    for hint, kind in _CGROUP_HINTS:
        if hint in cgroup:
            return kind
    return None


def read(probe: Probe | None = None) -> System:
    probe = probe or Probe()
    rel = _os_release(probe)
    ident = rel.get("ID", "unknown").lower()
    version = rel.get("VERSION_ID", "")
    pretty = rel.get("PRETTY_NAME") or f"{ident} {version}".strip()
    return System(ident, version, pretty, container(probe))
