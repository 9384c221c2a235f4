"""Building bubblewrap's command line (:func:`bwrap_argv`): what a run sees, and nothing else.

A read-only system: of the host only :data:`SYSTEM_DIRS`, or another root file system as ``/`` (less
:data:`ROOT_SKIPPED`), its ``/etc`` cut to the entries asked for (:data:`TOOL_ETC` for a compile); bounded tmpfs
for /tmp and /dev/shm, and a private tmpfs scratch where asked; the paths a run reads bound read-only at their own
paths, with their missing parents made traversable; the GPU's device nodes only when asked; and, as root,
setpriv's drop to the run's own uid before the program starts. Only the argv: the probe that bubblewrap starts
here is :mod:`rocmlab.sandbox.detection`'s, the run :mod:`rocmlab.sandbox.runner`'s.
"""

from __future__ import annotations

import glob
import os
import shutil

from rocmlab import settings
from rocmlab.sandbox import uid_drop


#: Top-level folders of the host bound (read-only) when ``root="/"``: what a program needs, nothing else.
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt")
#: What a compiler or an interpreter needs of a root's ``/etc`` (:func:`run`'s ``etc``): the loader's files, the
#: alternatives' links (``/usr/bin/c++`` and the like) and the distribution's name (a driver script may ask it;
#: ``/usr/lib`` holds it too). Nothing of the machine's users, names or settings, which learner code could otherwise
#: probe (``__has_include("/etc/passwd")``), include into a diagnostic, or read and hand back in a re-grade.
TOOL_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "os-release", "lsb-release")
#: Top-level folders of another root file system that are NOT bound (the sandbox makes its own).
ROOT_SKIPPED = ("proc", "sys", "dev", "tmp", "run", "home", "root", "mnt", "media", "lost+found")
#: GPU device nodes, bound only for ``gpu=True``.
GPU_NODES = ("/dev/kfd", "/dev/dri", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
             "/dev/nvidia-modeset", "/dev/nvidia[0-9]*", "/dev/nvidia-caps")
#: A graded run's private scratch (a tmpfs: its binary and input are bound in, only its output file reaches disk).
RUN_SCRATCH_BYTES = 64 << 20
#: /dev/shm in the sandbox is a tmpfs of this size (its pages are memory: they count in the whole run's limit too).
SHM_BYTES = 64 << 20


def _system_binds(root: str, etc=None) -> list[str]:
    """The root's folders, read-only; with ``etc`` (names), its ``/etc`` holds those entries only."""
    args: list[str] = []
    names = SYSTEM_DIRS if root == "/" else sorted(os.listdir(root))
    for name in names:
        src = os.path.join(root, name)
        if name in ROOT_SKIPPED or not os.path.lexists(src):
            continue
        if os.path.islink(src):
            args += ["--symlink", os.readlink(src), "/" + name]
        elif name == "etc" and etc is not None and os.path.isdir(src):
            args += ["--dir", "/etc"]
            for entry in etc:
                path = os.path.join(src, entry)
                if os.path.islink(path):
                    args += ["--symlink", os.readlink(path), "/etc/" + entry]
                elif os.path.lexists(path):
                    args += ["--ro-bind", path, "/etc/" + entry]
        elif os.path.isdir(src):
            args += ["--ro-bind", src, "/" + name]
    return args


def _gpu_nodes() -> list[str]:
    found: list[str] = []
    for pattern in GPU_NODES:
        found += sorted(glob.glob(pattern))
    return found


def bwrap_argv(cmd, *, root, scratch, ro_binds, gpu, cwd, info_fd, uid=None, private=None, etc=None) -> list[str]:
    """``private``: (bytes, files) to make the scratch a tmpfs of that size, with ``files`` (host path,
    writable) bound into it at the same path; None binds the scratch folder itself, read-write. ``etc``: see
    :func:`run`."""
    a = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
         "--unshare-uts", "--unshare-cgroup-try"]
    if not uid_drop.as_root():
        a += ["--unshare-user", "--uid", str(settings.SANDBOX_UID), "--gid", str(settings.SANDBOX_GID)]
    if info_fd is not None:
        a += ["--info-fd", str(info_fd)]
    a += ["--tmpfs", "/", *_system_binds(root, etc), "--dev", "/dev", "--proc", "/proc",
          "--size", str(settings.SANDBOX_TMP_BYTES), "--perms", "1777", "--tmpfs", "/tmp",
          "--size", str(SHM_BYTES), "--perms", "1777", "--tmpfs", "/dev/shm"]
    made: set[str] = set()
    system = {"/" + x for x in (SYSTEM_DIRS if root == "/" else os.listdir(root)) if x not in ROOT_SKIPPED}
    for path in ro_binds:
        a += _parents(path, system, made) + ["--ro-bind", os.path.realpath(path), path]
    if scratch and private is not None:
        size, files = private
        a += _parents(scratch, system, made) + ["--size", str(size), "--perms", "1777", "--tmpfs", scratch]
        for path, writable in files:
            a += ["--bind" if writable else "--ro-bind", path, path]
    elif scratch:
        a += _parents(scratch, system, made) + ["--bind", scratch, scratch]
    groups: list[int] = []
    if gpu:
        for node in _gpu_nodes():
            a += ["--dev-bind", node, node]
            for n in [node, *glob.glob(node + "/*")]:
                try:
                    groups.append(os.stat(n).st_gid)
                except OSError:
                    pass
        a += ["--ro-bind", "/sys", "/sys"]
    a += ["--remount-ro", "/", "--chdir", cwd or scratch or "/tmp", "--"]
    if uid_drop.as_root():
        a += uid_drop.setpriv_argv(groups, uid)
    return a + list(cmd)


def _parents(path: str, system: set[str], made: set[str]) -> list[str]:
    """Make a bind's missing parent folders traversable (bubblewrap would copy the host folders' modes,
    and a 0700 temporary folder above the scratch would lock the unprivileged program out)."""
    out: list[str] = []
    parts = path.strip("/").split("/")[:-1]
    if not parts or "/" + parts[0] in system:
        return out
    cur = ""
    for p in parts:
        cur += "/" + p
        if cur not in made and cur not in ("/tmp", "/dev", "/proc"):
            made.add(cur)
            out += ["--perms", "0755", "--dir", cur]
    return out
