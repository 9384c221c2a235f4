"""Read a CUDA project safely: what to port, what to copy, and what could not be read.

Nothing under SRC is ever written. Problems with single files (invalid UTF-8, a file that
cannot be read, a symlink loop, a FIFO) do not stop the port: the file is left out, and the
problem is listed with its fix. Problems with the whole request (SRC missing or empty, an
OUT that overlaps SRC) raise :class:`PortInputError` with the fix in the message.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

# Files the port translates; everything else is copied byte for byte.
SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".c")
TU_SUFFIXES = (".cu", ".cpp", ".cc", ".c")
SKIP_DIRS = (".git", ".hg", ".svn", "__pycache__")
MAX_SOURCE_BYTES = 8 << 20
MAX_DEPTH = 256              # folders below SRC; deeper trees are reported, not walked   # larger "sources" are generated or data: copied, not hipified


class PortInputError(ValueError):
    """The request cannot be carried out; the message names the problem and the fix."""


@dataclass(frozen=True)
class Problem:
    path: str            # relative to SRC
    kind: str            # invalid-utf8 | unreadable | symlink-loop | broken-symlink | symlink-outside | not-a-file | too-large | too-deep | path-too-long
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message} Fix: {self.fix}"


@dataclass
class Project:
    root: Path                                              # SRC, resolved
    sources: dict[str, str] = field(default_factory=dict)   # rel path -> text (UTF-8)
    others: list[str] = field(default_factory=list)         # rel paths copied unchanged
    problems: list[Problem] = field(default_factory=list)

    @property
    def translation_units(self) -> list[str]:
        return sorted(r for r in self.sources if r.endswith(TU_SUFFIXES))


def _overlap(src: Path, out: Path) -> bool:
    return src == out or src in out.parents or out in src.parents


#: Longest path and file name this system takes (Linux: 4096 and 255 bytes); an OUT near them leaves no room.
PATH_MAX, NAME_MAX = 4096, 255


def _check_length(out: str):
    long_name = max((len(part.encode()) for part in out.split("/")), default=0)
    if len(out.encode()) >= PATH_MAX - 256 or long_name > NAME_MAX:
        raise PortInputError(f"--out is too long ({len(out)} characters, a folder name of {long_name}; this system "
                             f"takes paths under {PATH_MAX} bytes and names of at most {NAME_MAX}, and the port "
                             "adds its own files below OUT): choose a shorter output folder, e.g. --out ./hip-port")


def check_request(src, out) -> tuple[Path, Path]:
    """SRC and OUT resolved, or PortInputError."""
    if src is None or str(src).strip() == "":
        raise PortInputError("no source folder given: pass the CUDA project's folder as SRC_DIR")
    src_p = Path(src).expanduser()
    if not src_p.exists():
        raise PortInputError(f"source folder '{src}' does not exist: check the path")
    if not src_p.is_dir():
        raise PortInputError(f"'{src}' is a file, not a folder: pass the project's folder "
                             "(to port one file, put it in a folder of its own)")
    if out is None or str(out).strip() == "":
        raise PortInputError("no output folder given: pass --out OUT_DIR (a new folder outside SRC)")
    src_r = src_p.resolve()
    _check_length(str(out))
    out_r = Path(out).expanduser().resolve()
    if _overlap(src_r, out_r):
        raise PortInputError(f"--out '{out}' overlaps the source folder '{src}' ({out_r} vs {src_r}): the port "
                             "never writes into SRC; choose an output folder outside it, e.g. "
                             f"--out {src_r.parent / (src_r.name + '-hip')}")
    if out_r.exists() and not out_r.is_dir():
        raise PortInputError(f"--out '{out}' is a file: choose a folder")
    return src_r, out_r


def _read_source(path: Path, rel: str, problems: list[Problem]) -> str | None:
    try:
        data = path.read_bytes()
    except PermissionError:
        problems.append(Problem(rel, "unreadable", "cannot be read (permission denied), so it was not ported.",
                                f"make it readable (chmod a+r '{rel}') and port again"))
        return None
    except OSError as exc:
        problems.append(Problem(rel, "unreadable", f"cannot be read ({exc.strerror or exc}), so it was not ported.",
                                "check the file (a broken disk, a network mount, a file that vanished) and port again"))
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        problems.append(Problem(rel, "invalid-utf8",
                                f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}, "
                                f"line {line}), so it was not ported.",
                                f"convert it, e.g. iconv -f latin1 -t utf-8 '{rel}' > fixed && mv fixed '{rel}'"))
        return None


def _inside_real(p: Path, root: Path) -> bool:
    """Does ``p`` (a symlink) resolve to a place inside ``root`` (resolved)?"""
    try:
        real = p.resolve(strict=True)
    except (OSError, RuntimeError):
        return False
    return real == root or root in real.parents


def collect(src_root: Path) -> Project:
    """Walk SRC (following symlinks that stay inside it, stopping at loops; a symlink that leaves SRC is
    reported and skipped) and read its CUDA sources."""
    proj = Project(root=src_root)
    seen_dirs: set[tuple[int, int]] = set()
    st = os.stat(src_root)
    seen_dirs.add((st.st_dev, st.st_ino))

    # an explicit stack, not recursion: a tree of any depth is walked (no "maximum recursion depth")
    stack: list[tuple[Path, str, frozenset]] = [(src_root, "", frozenset({(st.st_dev, st.st_ino)}))]
    while stack:
        d, rel_d, ancestors = stack.pop()
        if len(rel_d.split("/")) > MAX_DEPTH:
            proj.problems.append(Problem(rel_d, "too-deep", f"is more than {MAX_DEPTH} folders deep, so what is "
                                         "below it was skipped.", "move the sources up, or port that folder alone"))
            continue
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            proj.problems.append(Problem(rel_d or ".", "unreadable", f"folder cannot be listed ({exc.strerror}).",
                                         "make it readable (chmod a+rx) and port again"))
            continue
        for e in sorted(entries, key=lambda e: e.name, reverse=True):
            rel = f"{rel_d}/{e.name}" if rel_d else e.name
            p = Path(e.path)
            try:
                s = os.stat(p)   # follows symlinks
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    proj.problems.append(Problem(rel, "symlink-loop",
                                                 f"is a symlink loop (-> {os.readlink(p)}), so it was skipped.",
                                                 "remove the link or point it at a real file"))
                elif e.is_symlink():
                    proj.problems.append(Problem(rel, "broken-symlink",
                                                 f"is a broken symlink (-> {os.readlink(p)}), so it was skipped.",
                                                 "remove the link or restore its target"))
                else:
                    proj.problems.append(Problem(rel, "unreadable", f"cannot be examined ({exc.strerror}).",
                                                 "check its permissions"))
                continue
            if e.is_symlink() and not _inside_real(p, src_root):
                # never followed: a link out of SRC would copy (and show) files from anywhere on the machine
                proj.problems.append(Problem(rel, "symlink-outside", f"is a symbolic link that leaves the source "
                                             f"folder (-> {os.readlink(p)}), so it was not followed.",
                                             "copy the file into the project if it belongs to it, or pass its folder "
                                             "with --include DIR (read-only)"))
                continue
            if stat.S_ISDIR(s.st_mode):
                if e.name in SKIP_DIRS:
                    continue
                key = (s.st_dev, s.st_ino)
                if key in ancestors or (e.is_symlink() and key in seen_dirs):
                    proj.problems.append(Problem(rel, "symlink-loop",
                                                 f"is a symlink to a folder already in the tree (-> {os.readlink(p)}), "
                                                 "a loop, so it was skipped.",
                                                 "remove the link; the folder it points at is ported once already"))
                    continue
                seen_dirs.add(key)
                stack.append((p, rel, ancestors | {key}))
            elif stat.S_ISREG(s.st_mode):
                if e.name.endswith(SOURCE_SUFFIXES):
                    if s.st_size > MAX_SOURCE_BYTES:
                        proj.problems.append(Problem(rel, "too-large",
                                                     f"is {s.st_size >> 20} MiB, too large to be hand-written "
                                                     "source: copied unchanged, not hipified.",
                                                     "port generated sources from their generator"))
                        proj.others.append(rel)
                        continue
                    text = _read_source(p, rel, proj.problems)
                    if text is not None:
                        proj.sources[rel] = text
                else:
                    proj.others.append(rel)
            else:
                proj.problems.append(Problem(rel, "not-a-file", "is not a regular file (a FIFO, socket or device), "
                                                                "so it was skipped.", "remove it from the project folder"))

    if not proj.sources:
        found = f" ({len(proj.problems)} file(s) could not be read: {proj.problems[0]})" if proj.problems else ""
        raise PortInputError(f"no CUDA sources found in '{src_root}'{found}: a project to port needs files ending "
                             f"in {' '.join(SOURCE_SUFFIXES[:5])} ...; check the folder")
    return proj
