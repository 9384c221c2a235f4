"""What a run without bind mounts is shown (the fallback's *view*), and what a dropped uid can reach.

Without bubblewrap nothing can be bound into a run. What it reads (its ``ro_binds``) is shown to it through a
:class:`View`: a folder of its own, readable by the run's uid, holding hard links (or readable copies) of those
paths; the command's arguments name the view (:meth:`View.rewrite`), and its output names the host paths again
(:meth:`View.unrewrite`). The chroot fallback makes the view inside the root file system (:data:`ROOT_VIEWS`); a
run as root on the host system gets one for the folders its dropped uid could not reach (:func:`reachable`: a
checkout or cache under a 0700 ``/root``), this process's own Python included (:func:`python_unreachable`,
:meth:`View.add_python`). :func:`unreadable` names, before a run, a path the run could not read.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import secrets
import shutil
import stat
import sys
import sysconfig
import tempfile

from rocmlab import settings
from rocmlab.sandbox import uid_drop
from rocmlab.sandbox.processes import sweep_stale
from rocmlab.sandbox.terms import SandboxError


#: Where the chroot fallback puts each run's view inside the root file system (made by root, 0711).
ROOT_VIEWS = "run/rocmlab"
#: What one run's view may copy (files that cannot be hard-linked): more is refused with a message.
VIEW_COPY_BYTES = 1 << 30
VIEW_ENTRIES = 50_000


def python_unreachable(program: str) -> bool:
    """Whether ``program`` is this process's own Python and a uid of the sandbox's cannot run it where it is
    (its installation is under a folder closed to others, as a pyenv Python under ``/root``)."""
    try:
        same = os.path.realpath(program) == os.path.realpath(sys.executable)
    except OSError:
        return False
    return same and not (_reachable_folder(os.path.realpath(sys.executable))
                         and _reachable_folder(os.path.realpath(sys.base_prefix)))


def relative_to(arg: str, folder: str) -> str:
    """``arg`` with ``folder`` (the run's working folder) written as ``.``: the dropped uid reaches it only that way."""
    return _rewrite_arg(arg, folder, ".")


#: Flags written together with the path they take (``-I/dir``); ``--flag=/path`` is split at its ``=``.
_ARG_PREFIXES = ("-include-pch", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "-I", "-L", "-B", "-o")


def _rewrite_arg(arg: str, host: str, inside: str) -> str:
    """One argument with the path ``host`` (or a path under it) at its start, after a flag of _ARG_PREFIXES or
    after ``--flag=``, written as ``inside``."""
    head, rest = "", arg
    if arg.startswith("-"):
        if "=" in arg:
            head, rest = arg.split("=", 1)
            head += "="
        else:
            for p in _ARG_PREFIXES:
                if arg.startswith(p + "/"):
                    head, rest = p, arg[len(p):]
                    break
    if rest == host or rest.startswith(host.rstrip("/") + "/"):
        return head + inside + rest[len(host):]
    return arg


def reachable(path: str, uid: int = settings.SANDBOX_UID_BASE) -> bool:
    """Whether an unprivileged uid of the sandbox's (not the owner, not in the group) can reach ``path`` and read
    what is in it (checked up to 2,000 entries): every folder above it searchable by others, it and its folders
    readable and searchable, its files readable."""
    real = os.path.realpath(path)
    if real != "/" and not _reachable_folder(os.path.dirname(real)):
        return False
    seen = 0
    for top in [real]:
        try:
            st = os.stat(top)
        except OSError:
            return False
        if stat.S_ISREG(st.st_mode):
            return bool(st.st_mode & stat.S_IROTH)
        if (st.st_mode & 0o005) != 0o005:
            return False
        for dirpath, dirs, files in os.walk(top):
            for name in dirs + files:
                seen += 1
                if seen > 2000:
                    return True
                try:
                    m = os.lstat(os.path.join(dirpath, name)).st_mode
                except OSError:
                    continue
                if stat.S_ISDIR(m) and (m & 0o005) != 0o005 or stat.S_ISREG(m) and not m & stat.S_IROTH:
                    return False
    return True


class View:
    """What a run without bind mounts is shown: a folder of its own (``host``, seen by the run as ``inside``) with
    one entry per path it must read (``add``): hard links to the files where they may be linked (same file system,
    readable and not writable by others), else copies readable by the run's uid; folders re-made 0755. As with a
    bind, the folders above a shown path do not count, and in it what others may not read stays unreadable. Arguments
    naming a shown path are rewritten to its entry (``rewrite``), the run's output back (``unrewrite``)."""

    def __init__(self, host: str, inside: str):
        self.host, self.inside = host, inside
        self.pairs: list[tuple[str, str]] = []        # (host path, inside path), for the rewriting
        self.copied = self.entries = 0
        self.entries_limit = VIEW_ENTRIES
        self.proot_tmp: str | None = None
        self.skip: set[str] = set()             # host paths a mirror leaves out

    @classmethod
    def in_root(cls, root: str) -> View:
        """A view inside the root file system (the chroot fallback): ``root/run/rocmlab/PID-TOKEN``."""
        base = os.path.join(root, ROOT_VIEWS)
        os.makedirs(base, mode=0o711, exist_ok=True)
        st = os.lstat(base)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise SandboxError(f"{base} is not a folder of this user's: remove it, then run again")
        sweep_stale(base)                      # views of processes that are gone
        name = f"{os.getpid()}-{secrets.token_hex(6)}"
        os.mkdir(os.path.join(base, name), 0o755)
        os.chmod(os.path.join(base, name), 0o755)
        return cls(os.path.join(base, name), "/" + ROOT_VIEWS + "/" + name)

    @classmethod
    def on_host(cls) -> View:
        """A view on the host (a run as root on the host system): a 0711 folder in a temporary folder others reach."""
        for tmp in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
            if os.path.isdir(tmp) and _reachable_folder(tmp):
                break
        else:
            raise SandboxError("no temporary folder the sandbox's user can reach (/tmp must be mode 1777)")
        sweep_stale(tmp, prefix="rocmlab-view-")
        host = tempfile.mkdtemp(prefix=f"rocmlab-view-{os.getpid()}-", dir=tmp)
        os.chmod(host, 0o711)
        return cls(host, host)

    @classmethod
    def private(cls, proot_argv: list[str]) -> View:
        """PRoot's run: only a private /tmp of its own (bound over the root's), no rewriting."""
        v = cls("", "")
        v.proot_tmp = tempfile.mkdtemp(prefix=f"rocmlab-view-{os.getpid()}-")
        at = proot_argv.index("-w")
        proot_argv[at:at] = ["-b", f"{v.proot_tmp}:/tmp"]
        return v

    def add_python(self) -> tuple[str, str]:
        """This process's Python (``sys.executable``) shown to a dropped uid that cannot reach its installation (a
        pyenv Python under a 0700 ``/root``): its interpreter, its shared library and its standard library in
        ``base/`` (without the base installation's site-packages: tens of thousands of files a virtual environment
        does not use), and, for a virtual environment, ``py/pyvenv.cfg`` naming ``base/`` with the environment's
        site-packages (linked where the uid reaches it, else shown). Returns (the interpreter the run starts, the
        folder for LD_LIBRARY_PATH)."""
        ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
        base = os.path.realpath(sys.base_prefix)
        venv = os.path.realpath(sys.prefix) != base
        stdlib = os.path.realpath(sysconfig.get_path("stdlib", vars={"installed_base": base, "base": base}))
        base_site = os.path.join(stdlib, "site-packages")
        b = os.path.join(self.host, "base")
        for d in (b, os.path.join(b, "bin"), os.path.join(b, "lib")):
            os.mkdir(d, 0o755)
            os.chmod(d, 0o755)
        for lib in glob.glob(os.path.join(base, "lib", "libpython*.so*")):
            self._place(lib, os.path.join(b, "lib", os.path.basename(lib)), os.stat(lib))
        os.mkdir(os.path.join(b, "lib", ver), 0o755)
        os.chmod(os.path.join(b, "lib", ver), 0o755)
        self.skip.add(base_site)
        self._mirror_tree(stdlib, os.path.join(b, "lib", ver))
        exe_real = os.path.realpath(sys.executable)
        if not venv:
            self.skip.discard(base_site)
            if os.path.isdir(base_site):
                self._mirror(base_site, os.path.join(b, "lib", ver, "site-packages"))
            self._place(exe_real, os.path.join(b, "bin", ver), os.stat(exe_real))
            self.pairs.append((base, os.path.join(self.inside, "base")))
            return os.path.join(self.inside, "base", "bin", ver), os.path.join(self.inside, "base", "lib")
        py = os.path.join(self.host, "py")
        for d in (py, os.path.join(py, "bin"), os.path.join(py, "lib"), os.path.join(py, "lib", ver)):
            os.mkdir(d, 0o755)
            os.chmod(d, 0o755)
        self._place(exe_real, os.path.join(py, "bin", ver), os.stat(exe_real))
        with open(os.path.join(py, "pyvenv.cfg"), "w") as f:
            f.write(f"home = {os.path.join(self.inside, 'base', 'bin')}\ninclude-system-site-packages = false\n"
                    f"version = {sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}\n")
        os.chmod(os.path.join(py, "pyvenv.cfg"), 0o644)
        site = os.path.realpath(sysconfig.get_path("purelib"))
        dst = os.path.join(py, "lib", ver, "site-packages")
        if _reachable_folder(site) and os.stat(site).st_mode & 0o005 == 0o005:
            os.symlink(site, dst)
        elif self.inside == self.host:          # on the host: one shown copy, kept while the environment is unchanged
            shown = _shown_site_packages(site)
            os.symlink(shown, dst)
            self.pairs.append((site, shown))
        else:
            self._mirror(site, dst)
        self.pairs.append((base, os.path.join(self.inside, "base")))
        return os.path.join(self.inside, "py", "bin", ver), os.path.join(self.inside, "base", "lib")

    def add(self, path: str) -> str:
        dst = os.path.join(self.host, f"b{len(self.pairs)}")
        self._mirror(path, dst)
        inside = os.path.join(self.inside, os.path.basename(dst))
        self.pairs.append((path, inside))
        real = os.path.realpath(path)
        if real != path:
            self.pairs.append((real, inside))
        return inside

    def move_in(self, scratch: str):
        """The run's scratch folder moved into the view (renamed; copied where the file systems differ)."""
        dst = os.path.join(self.host, "s")
        try:
            os.rename(scratch, dst)
            how = "renamed"
        except OSError:
            shutil.copytree(scratch, dst, symlinks=True)
            how = "copied"
        self.pairs.append((scratch, os.path.join(self.inside, "s")))
        return how

    def move_out(self, scratch: str, how: str) -> None:
        src = os.path.join(self.host, "s")
        if how == "renamed":
            os.rename(src, scratch)
            return
        for e in os.scandir(scratch):
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path, ignore_errors=True)
            else:
                os.unlink(e.path)
        shutil.copytree(src, scratch, symlinks=True, dirs_exist_ok=True)

    def private_tmp(self, uid: int | None) -> str:
        """The run's own /tmp in the view (its TMPDIR and HOME), owned by its uid."""
        t = os.path.join(self.host, "t")
        os.mkdir(t, 0o700)
        if uid is not None and uid_drop.as_root():
            os.chown(t, uid, settings.SANDBOX_GID)
        return os.path.join(self.inside, "t")

    def host_path_of(self, path: str) -> str:
        """Where a host path in a shown folder is during the run, on the host."""
        inside = self.rewrite(path)
        return self.host + inside[len(self.inside):] if inside.startswith(self.inside) else path

    def inside_path(self, path: str) -> str:
        return self.rewrite(path)

    def rewrite(self, arg: str) -> str:
        """An argument naming a shown path (or one under it) as the run sees it."""
        for host, inside in sorted(self.pairs, key=lambda p: -len(p[0])):
            out = _rewrite_arg(arg, host, inside)
            if out != arg:
                return out
        return arg

    def unrewrite(self, text: str) -> str:
        """The run's output with the view's paths written as the host paths they show."""
        first: dict[str, str] = {}
        for host, inside in self.pairs:
            first.setdefault(inside, host)
        for inside, host in sorted(first.items(), key=lambda p: -len(p[0])):
            text = re.sub(re.escape(inside) + r"(?![\w.-])", lambda m, h=host: h, text)
        return text

    def remove(self) -> None:
        for d in (self.host, self.proot_tmp):
            if d:
                shutil.rmtree(d, ignore_errors=True)

    def _mirror(self, src: str, dst: str) -> None:
        """``src`` at ``dst``: it and the folders above it do not count (the caller shows it: a build folder is
        0700), but in it only what others may read is shown (a file or folder closed to others stays closed to the
        run's uid)."""
        st = os.stat(src)
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(dst, 0o755)
            os.chmod(dst, 0o755)
            self._mirror_tree(src, dst)
        elif stat.S_ISREG(st.st_mode):
            if not st.st_mode & stat.S_IROTH:
                with open(dst, "w"):
                    pass
                os.chmod(dst, 0o600)
                return
            self._place(src, dst, st)
        else:
            raise SandboxError(f"cannot show {src} to the sandboxed program: not a file or folder")

    def _mirror_tree(self, src: str, dst: str) -> None:
        skip = {h for h, _ in self.pairs} | self.skip
        with os.scandir(src) as it:
            for e in it:
                self.entries += 1
                if self.entries > self.entries_limit:
                    raise SandboxError(f"cannot show {src} to the sandboxed program without bubblewrap: more than "
                                       f"{self.entries_limit} entries; let bubblewrap run (`rocmlab doctor` says how)")
                if e.path in skip:
                    continue
                target = os.path.join(dst, e.name)
                st = e.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    os.symlink(os.readlink(e.path), target)
                elif stat.S_ISDIR(st.st_mode):
                    if (st.st_mode & 0o005) != 0o005:     # closed to others: shown closed (as a bind would be)
                        os.mkdir(target, 0o700)
                        continue
                    os.mkdir(target, 0o755)
                    os.chmod(target, 0o755)
                    self._mirror_tree(e.path, target)
                elif stat.S_ISREG(st.st_mode) and st.st_mode & stat.S_IROTH:   # what others may not read: not shown
                    self._place(e.path, target, st)

    def _place(self, src: str, dst: str, st: os.stat_result) -> None:
        linkable = (st.st_mode & stat.S_IROTH and not st.st_mode & stat.S_IWOTH
                    and st.st_dev == os.stat(os.path.dirname(dst)).st_dev)
        if linkable:
            try:
                os.link(src, dst)
                return
            except OSError:
                pass
        self.copied += st.st_size
        if self.copied > VIEW_COPY_BYTES:
            raise SandboxError(f"cannot show {src} to the sandboxed program without bubblewrap: more than "
                               f"{VIEW_COPY_BYTES >> 20} MB to copy; let bubblewrap run (`rocmlab doctor` says how)")
        shutil.copyfile(src, dst)
        os.chmod(dst, 0o755 if st.st_mode & 0o111 else 0o644)


def unreadable(paths) -> str:
    """The first of ``paths`` (or of the files and folders in one, up to 2,000 entries each) that a sandboxed run
    cannot read here, as 'PATH (mode)'; '' when it reads them all. The folders above a path do not count
    (bubblewrap and the fallback's view show the path itself). As root a run has a uid of its own: what others may
    read; otherwise this user's own access."""
    for top in paths:
        for path in _walk_bounded(str(top), 2000):
            try:
                st = os.stat(path)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            if uid_drop.as_root():
                ok = (st.st_mode & 0o005) == 0o005 if is_dir else bool(st.st_mode & stat.S_IROTH)
            else:
                ok = os.access(path, os.R_OK | (os.X_OK if is_dir else 0))
            if not ok:
                return f"{path} (mode {stat.S_IMODE(st.st_mode):04o})"
    return ""


def _walk_bounded(top: str, limit: int):
    yield top
    n = 0
    if not os.path.isdir(top):
        return
    for dirpath, dirs, files in os.walk(top):
        for name in dirs + files:
            n += 1
            if n > limit:
                return
            yield os.path.join(dirpath, name)


def _reachable_folder(path: str) -> bool:
    real = os.path.realpath(path)
    cur = "/"
    for p in real.strip("/").split("/"):
        cur = os.path.join(cur, p)
        try:
            if not os.stat(cur).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


#: Entries a shown environment's site-packages may have (torch alone is about 50,000; hard links, made once).
SITE_VIEW_ENTRIES = 400_000


def _shown_site_packages(site: str) -> str:
    """The environment's ``site-packages`` shown to a dropped uid that cannot reach it (a virtual environment under
    root's 0700 home, as root without bubblewrap): a tree of hard links in a 0755 folder of root's in the temporary
    folder, made once and kept while the environment is unchanged (named by its path and by the names and times of
    its top-level entries: installing, removing or upgrading a package changes them). Only what others may read is
    shown. A folder of that name not owned by this user, or writable by others, is never used (a learner could have
    made it): another name is chosen."""
    tmp = next((t for t in (tempfile.gettempdir(), "/tmp", "/var/tmp") if os.path.isdir(t) and _reachable_folder(t)),
               None)
    if tmp is None:
        raise SandboxError("no temporary folder the sandbox's user can reach (/tmp must be mode 1777)")
    stamp = hashlib.sha256(site.encode())
    with os.scandir(site) as it:
        for e in sorted(it, key=lambda e: e.name):
            stamp.update(f"{e.name}:{e.stat(follow_symlinks=False).st_mtime_ns}\n".encode())
    where = hashlib.sha256(site.encode()).hexdigest()[:12]
    name = f"rocmlab-site-{os.geteuid()}-{where}-{stamp.hexdigest()[:16]}"
    for attempt in range(4):
        final = os.path.join(tmp, name if attempt == 0 else f"{name}-{secrets.token_hex(4)}")
        try:
            st = os.lstat(final)
        except FileNotFoundError:
            break
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022:
            return final
    else:
        raise SandboxError(f"cannot show {site} to the sandboxed program: folders named like it in {tmp} are not "
                           "this user's; remove them, or let bubblewrap run (`rocmlab doctor` says how)")
    for old in glob.glob(os.path.join(tmp, f"rocmlab-site-{os.geteuid()}-{where}-*")):
        st = os.lstat(old)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and old != final:
            shutil.rmtree(old, ignore_errors=True)            # an older state of the same environment
    building = tempfile.mkdtemp(prefix=f"rocmlab-view-{os.getpid()}-", dir=tmp)
    try:
        maker = View(building, building)
        maker.entries_limit = SITE_VIEW_ENTRIES
        maker._mirror(site, os.path.join(building, "site-packages"))
        made = os.path.join(building, "site-packages")
        try:
            os.rename(made, final)
        except OSError:                           # another grader made it first
            st = os.lstat(final)
            if not (stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022):
                raise SandboxError(f"{final} is not a folder of this user's: remove it, then run again") from None
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return final
