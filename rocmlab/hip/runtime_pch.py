"""A precompiled ``<hip/hip_runtime.h>`` for the halves of a cell's build.

Most of a small cell's compile time is clang reading the HIP runtime headers: on a 2-core machine with
the offline ROCm 7.2.4 root, 0.45 s of the 0.59 s a vector-add's device half takes, and as much of its
host half. clang can load those headers from a precompiled header (PCH) instead, one per half (device
for one target, or host), built once per toolchain, target and flags and kept under
``cache_dir()/hip-pch``. A cell's device half then takes 0.24 s and its host half 0.19 s, with the
same diagnostics, resource remarks and code (``tests/hip/whole/test_compile_fast_path.py`` compares them).

It is used only where it cannot change what the compiler sees:

- the source's first line that is not blank or a comment is ``#include <hip/hip_runtime.h>`` (so the
  header is read first either way, and the source's own include is then a no-op: its include guard);
- no flag changes where the runtime headers are found: ``-I DIR`` only for an absolute DIR with no ``hip/``
  folder in it (the grader's own include folder), none of ``-isystem``, ``-include``, ``--rocm-path`` ...;
- clang checks the rest itself: a PCH built with other language options, macros or header files is
  refused with a fatal error, and then the build runs again without it (:func:`refused`).

A PCH is built the second time a (toolchain, half, target, flags) is asked for: building one costs about
0.6 s more than the compile it serves, so a flag set used once (Lab 01's ``-mno-wavefrontsize64``, one
listing for gfx90a) is compiled as before, and the cells that repeat a flag set (every cell with none) pay
it once. A full build (``exe``) is made from its two halves when both PCHs are there (``compile.exe_commands``:
byte for byte hipcc's own program). The CPU simulator's builds (rocmlab.hip.sim) force-include its own
``hip/hip_runtime.h``: they read it from a PCH of that header (side ``sim``), whatever the source.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from rocmlab.paths import cache_dir

#: Bump when the header text or the way the PCH is built changes.
FORMAT = 1
HEADER = "#include <hip/hip_runtime.h>\n"
SIDES = ("device", "host")
#: The CPU simulator's header (rocmlab.hip.sim): its builds force-include it, so a PCH of it is always the same.
SIM = "sim"
#: Flags that change which headers are found: with any of them a cell takes no PCH (``-I``: see applies).
_PATH_FLAGS = ("-isystem", "-iquote", "-idirafter", "-include", "-imacros", "--rocm-path", "--hip-path",
               "-nogpuinc", "-nostdinc", "--sysroot", "-isysroot", "--cuda-path", "-x")
#: How many PCH folders (toolchain x target x flags) are kept; the least recently used go first.
KEEP = 8

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_FIRST_INCLUDE = re.compile(r'\s*#\s*include\s*[<"]hip/hip_runtime\.h[>"]\s*$')
#: clang's words when it refuses a PCH (another compiler, other options, a changed header).
_REFUSED = ("precompiled file", "precompiled header", "AST file", "PCH file")


def applies(source: str, flags=()) -> bool:
    """Whether a cell's build may read the runtime headers from a PCH (see the module docstring). Never where the
    sandbox shows the compiler a path at another path (as root without bubblewrap): a PCH records its header's path."""
    from rocmlab import sandbox

    if not sandbox.paths_kept():
        return False
    flags = [str(f) for f in flags]
    for i, f in enumerate(flags):
        if f.startswith(_PATH_FLAGS):
            return False
        if f.startswith("-I"):
            d = f[2:] or (flags[i + 1] if i + 1 < len(flags) else "")
            if not os.path.isabs(d) or os.path.exists(os.path.join(d, "hip")):
                return False
    for line in _COMMENT.sub(" ", source).splitlines():
        if line.strip():
            return bool(_FIRST_INCLUDE.match(line))
    return False


def refused(log: str) -> bool:
    """Whether a build failed because clang refused the PCH, not because of the source: an error with no
    source location ("error: OptimizationLevel differs in precompiled file ...", "fatal error: malformed or
    corrupted precompiled file ...") that names the PCH."""
    return any(line.startswith(("error:", "fatal error:")) and any(w in line for w in _REFUSED)
               for line in log.splitlines())


def folder() -> Path:
    p = cache_dir() / "hip-pch"
    p.mkdir(parents=True, exist_ok=True)
    return p


def pch_for(tc, side: str, target: str, flags, build) -> Path | None:
    """The PCH for one half (built now if it is not there yet), or None when it cannot be built here
    (the build then reads the headers itself, as it would without this module).

    ``build(header, output, cwd)`` runs the compiler call that writes it (``compile.pch_command``, through
    ``compile.run``) and returns its Completed: this module decides when and where, the driver how."""
    if side not in (*SIDES, SIM):
        raise ValueError(f"side={side!r}: one of {(*SIDES, SIM)}")
    flags = [str(f) for f in flags]
    key = hashlib.sha256(json.dumps({"pch": FORMAT, "side": side, "target": target, "flags": flags,
                                     "toolchain": [tc.kind, tc.compiler, tc.version, tc.root]},
                                    sort_keys=True, default=str).encode()).hexdigest()[:24]
    home = folder() / key
    pch = home / f"{side}.pch"
    if pch.is_file():
        os.utime(home)
        return pch
    home.mkdir(exist_ok=True)
    asked = home / f"{side}.asked"
    if not asked.exists():          # the first time: not worth a PCH yet (see the module docstring)
        asked.touch()
        return None
    header = home / "hip_runtime_pch.h"      # clang records this path: it must stay where it was built
    if not header.is_file():
        _write_atomically(header, HEADER)
    work = Path(tempfile.mkdtemp(prefix=f"tmp-{side}-", dir=folder()))   # the header's folder is read-only there
    try:
        done = build(header, work / pch.name, work)
        if not done.ok or not (work / pch.name).is_file():
            return None
        os.replace(work / pch.name, pch)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _prune(keep=home)
    return pch


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _prune(keep: Path) -> None:
    homes = sorted((p for p in folder().iterdir() if p.is_dir() and not p.name.startswith("tmp-")), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in [p for p in homes if p != keep][KEEP - 1:]:
        shutil.rmtree(old, ignore_errors=True)


def clear() -> int:
    """Delete every PCH; returns how many folders were removed."""
    n = 0
    for child in folder().iterdir():
        shutil.rmtree(child, ignore_errors=True)
        n += 1
    return n
