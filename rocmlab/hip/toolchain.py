"""Which HIP/CUDA compilers this machine has. Discovery only: :mod:`rocmlab.hip.compile` builds
every command line and runs every compiler.

Three kinds, in the order labs prefer them:

- ``rocm``: hipcc from a ROCm install (``/opt/rocm``, a rocm/pytorch image): compile and run on
  an AMD GPU.
- ``offline``: the ROCm 7.2.4 root file system that ``scripts/setup/20-rocm-root.sh`` builds from
  Debian's packages (hipcc, clang-22, HIP 7.2 headers, device libraries, rocPRIM/rocThrust/hipCUB,
  hipBLAS headers and link libraries) at :func:`rocmlab.paths.rocm_root`. The compiler runs
  inside that root (bubblewrap, read-only), so the host keeps its own system. It compiles and
  links for gfx942, gfx950 and gfx90a without a GPU.
- ``nvcc``: for CUDA sources, and for HIP sources through the HIP->CUDA path.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from rocmlab.machine.detect import Probe
from rocmlab.settings import AMD_TARGETS, OFFLINE_ROCM_VERSION

#: The file the set-up script writes last inside the root; without it the root is incomplete.
READY_STAMP = ".rocmlab-ready"
#: Targets a ROCm install's hipcc is offered for (clang knows many more; any gfx target is accepted).
ROCM_TARGETS = (*AMD_TARGETS, "gfx908", "gfx1100")

NO_TOOLCHAIN_FIX = {
    "rocm": "install ROCm (hipcc lives in /opt/rocm/bin: add it to PATH), or use a rocm/pytorch image",
    "offline": (f"build the offline ROCm {OFFLINE_ROCM_VERSION} root once: rocmlab setup rocm-root (it runs the "
                "package's 20-rocm-root.sh; as root; about 2 minutes and 1.2 GB; needs debootstrap and bubblewrap; "
                "in a checkout ./go setup does it too)"),
    "nvcc": "install the CUDA toolkit (nvcc) or add /usr/local/cuda/bin to PATH",
    "cpu": (f"the CPU simulator compiles with the offline ROCm {OFFLINE_ROCM_VERSION} root's clang: build the root once "
            "(rocmlab setup rocm-root, which runs the package's 20-rocm-root.sh; in a checkout ./go setup does it too)"),
}


@dataclass(frozen=True)
class Toolchain:
    """A compiler rocmlab can drive.

    ``kind`` is ``rocm``, ``offline`` or ``nvcc``. ``compiler`` is the path the command line uses:
    for ``offline`` that is the path *inside* ``root`` (``/usr/bin/hipcc``), where it runs.
    """

    kind: str
    compiler: str
    version: str                    # the compiler's version (HIP version for hipcc)
    targets: tuple[str, ...]        # AMD targets it builds; ("sm_*",) for nvcc
    root: str | None = None         # offline: the ROCm root file system the compiler runs in
    rocm_version: str = ""          # the ROCm release, where known (offline: the pinned one)

    @property
    def label(self) -> str:
        name = Path(self.compiler).name
        if self.kind == "offline":
            return f"{name} {self.version} (offline ROCm {self.rocm_version} root)"
        if self.kind == "cpu":
            return f"{name} {self.version} (cpu: wave64 simulator)"
        where = {"rocm": "ROCm", "nvcc": "CUDA"}[self.kind]
        return f"{name} {self.version} ({where})"

    def describe(self) -> str:
        where = f" in {self.root}" if self.root else f" at {self.compiler}"
        return f"{self.label}{where}; targets {', '.join(self.targets)}"

    def supports(self, target: str) -> bool:
        if self.kind == "nvcc":
            return target.startswith(("sm_", "compute_"))
        if self.kind == "cpu":
            return target in self.targets
        return target.startswith("gfx") and (self.kind == "rocm" or target in self.targets)

    def inside(self, path: str) -> Path:
        """A path as the compiler sees it, on the host (offline: under the root)."""
        return Path(self.root) / path.lstrip("/") if self.root else Path(path)


def _stamp_facts(root: Path) -> dict[str, str]:
    facts = {}
    try:
        for line in (root / READY_STAMP).read_text().splitlines():
            key, _, value = line.partition(" ")
            facts.setdefault(key, value)
    except OSError:
        pass
    return facts


def offline_root(probe: Probe | None = None) -> Path:
    """Where the offline root is expected (``ROCMLAB_ROCM_ROOT``, else ``ROCMLAB_HOME/rocm-7.2.4``)."""
    probe = probe or Probe()
    if probe.env.get("ROCMLAB_ROCM_ROOT"):
        return Path(probe.env["ROCMLAB_ROCM_ROOT"])
    home = probe.env.get("ROCMLAB_HOME") or os.path.join(probe.env.get("HOME", os.path.expanduser("~")),
                                                         ".cache", "rocmlab")
    return Path(home) / f"rocm-{OFFLINE_ROCM_VERSION}"


def offline_problem(probe: Probe | None = None) -> str:
    """'' when the offline root is usable, else what is missing and the fix."""
    probe = probe or Probe()
    root = offline_root(probe)
    if not (root / READY_STAMP).is_file() or not (root / "usr/bin/hipcc").exists():
        return f"no offline ROCm {OFFLINE_ROCM_VERSION} root at {root}: {NO_TOOLCHAIN_FIX['offline']}"
    if not os.access(root / "usr" / "bin", os.R_OK | os.X_OK):
        return (f"this user cannot read the offline ROCm root {root}: build one as this user (ROCMLAB_HOME=DIR "
                "rocmlab setup rocm-root) or point ROCMLAB_ROCM_ROOT at a copy it can read")
    from rocmlab import sandbox

    if probe.find("bwrap") and sandbox.isolation().namespaces:
        return ""
    entry, why = sandbox.fallback_entry(probe.find("proot"))
    if not entry:
        return ("the offline ROCm root needs bubblewrap to run its compiler (apt-get install -y bubblewrap), or "
                f"where user namespaces are refused (a container): {why}")
    return ""


def discover_offline(probe: Probe | None = None) -> Toolchain | None:
    probe = probe or Probe()
    if offline_problem(probe):
        return None
    root = offline_root(probe)
    facts = _stamp_facts(root)
    return Toolchain("offline", "/usr/bin/hipcc", facts.get("hip") or "unknown", AMD_TARGETS, str(root),
                     facts.get("rocm", OFFLINE_ROCM_VERSION))


#: The oldest installed ROCm rocmlab uses as its AMD compiler (older HIP lacks what the course teaches:
#: the *_sync warp functions with 64-bit masks, ROCm 7's run-time warpSize). Debian 12's own HIP 5.2 is older.
MIN_INSTALLED_ROCM = (6, 0)


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def rocm_installs(probe: Probe | None = None) -> list[Path]:
    """Folders that may hold an installed ROCm, most preferred first: ``ROCM_PATH``, ``/opt/rocm``,
    ``/opt/rocm-X.Y.Z`` (newest first), and the install a ``hipcc`` on PATH belongs to."""
    probe = probe or Probe()
    cands = []
    if probe.env.get("ROCM_PATH"):
        cands.append(probe.path(probe.env["ROCM_PATH"]))
    cands.append(probe.path("/opt/rocm"))
    cands += sorted(probe.path("/opt").glob("rocm-*"), key=lambda p: _version_key(p.name), reverse=True)
    on_path = probe.find("hipcc")
    if on_path:
        cands.append(Path(on_path).resolve().parent.parent)
    seen, out = set(), []
    for c in cands:
        key = c.resolve() if c.exists() else c
        if (c / READY_STAMP).exists():
            continue     # rocmlab's own offline root (e.g. built at /opt/rocm-7.2.4): not an install that runs here
        if key not in seen and c.is_dir():
            seen.add(key)
            out.append(c)
    return out


def installed_rocm_version(install: Path, probe: Probe | None = None) -> str | None:
    """The ROCm release of an install: its ``.info/version``, else what ``hipconfig --version`` or ``hipcc
    --version`` say."""
    probe = probe or Probe()
    try:
        m = re.search(r"(\d+\.\d+(?:\.\d+)?)", (install / ".info" / "version").read_text())
        if m:
            return m.group(1)
    except OSError:
        pass
    for tool, pattern in (("hipconfig", r"(\d+\.\d+(?:\.\d+)?)"), ("hipcc", r"HIP version: (\d+\.\d+(?:\.\d+)?)")):
        if (install / "bin" / tool).exists():     # HIP's version follows the ROCm release's (HIP 6.2.x: ROCm 6.2)
            found = _tool_version(probe, [str(install / "bin" / tool), "--version"], pattern)
            if found:
                return found
    return None


def discover(kind: str, probe: Probe | None = None) -> Toolchain | None:
    """The toolchain of one kind on this machine, or None."""
    probe = probe or Probe()
    if kind == "rocm":
        for install in rocm_installs(probe):
            rv = installed_rocm_version(install, probe)
            if not rv or _version_key(rv)[:2] < MIN_INSTALLED_ROCM:
                continue    # not a ROCm install, or too old (Debian 12's HIP 5.2): the offline root serves instead
            for name in ("hipcc", "amdclang++"):
                cand = install / "bin" / name
                if cand.exists():
                    ver = _tool_version(probe, [str(cand), "--version"],
                                        r"(?:HIP version|clang version)[: ]+(\S+)") or "unknown"
                    return Toolchain("rocm", str(cand), ver, ROCM_TARGETS, None, rv)
        return None
    if kind == "offline":
        return discover_offline(probe)
    if kind == "nvcc":
        nvcc = probe.find("nvcc") or (str(probe.path("/usr/local/cuda/bin/nvcc"))
                                      if probe.path("/usr/local/cuda/bin/nvcc").exists() else None)
        if not nvcc:
            return None
        ver = _tool_version(probe, [nvcc, "--version"], r"release [\d.]+, V(\S+)") or "unknown"
        return Toolchain("nvcc", nvcc, ver, ("sm_*",))
    raise ValueError(f"unknown toolchain kind {kind!r}: use 'rocm', 'offline' or 'nvcc' "
                     "(the CPU simulator, 'cpu', is rocmlab.hip.simulate.discover)")


def _tool_version(probe: Probe, cmd: list[str], pattern: str) -> str | None:
    """A version string from a tool's output (``--version``: it compiles nothing)."""
    m = re.search(pattern, probe.run(cmd) or "")
    return m.group(1) if m else None


def host_tool(*names: str) -> str | None:
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    return None


def main(argv: list[str] | None = None) -> int:
    """``python -m rocmlab.hip.toolchain``: print the installed ROCm compiler rocmlab would use and exit 0, or
    exit 1 when there is none (scripts/setup/20-rocm-root.sh asks this, so set-up and rocmlab agree)."""
    tc = discover("rocm")
    if tc is None:
        print("no installed ROCm (6.0 or newer) found in ROCM_PATH, /opt/rocm, /opt/rocm-* or beside a hipcc on PATH")
        return 1
    print(f"ROCm {tc.rocm_version or 'unknown'}: {tc.compiler} (HIP {tc.version})")
    return 0


if __name__ == "__main__":  # pragma: no cover - run by the set-up script
    import sys

    sys.exit(main())
