"""THE trap scanner: what a HIP port still gets wrong on an AMD GPU, judged on the code the AMD
compiler really compiles. Lab 02, the grader's static checks and ``rocmlab port`` all call it.

API
---
``scan(source_or_path, *, target=settings.DEFAULT_TARGET, include_dirs=(), defines=None,
filename=None, root=None) -> ScanReport``

- ``source_or_path``: HIP (or CUDA) source text, or a path (``os.PathLike``, or a ``str`` naming
  an existing file and holding no newline). A single file is a one-file project.
- ``include_dirs``: the project's ``-I`` folders (relative to ``root`` or absolute; outside
  ``root`` is fine: they are read, never written). ``defines``: ``{"NAME": "value"}`` (``-D``).
- ``root``: the project folder (default: the file's folder). Files reached through a symlink that
  leaves ``root`` and every include folder are never read.

``scan_project(root, files, *, target, include_dirs, defines) -> ScanReport``: every translation
unit in ``files`` (``.cu .hip .cpp .cc .c``) with its includes; headers no unit includes are
scanned too, as never compiled.

``ScanReport``:

- ``findings``: :class:`Finding` (``file``, ``line``, ``column``, ``rule``, ``kind``,
  ``severity``, ``message``, ``fix``, ``snippet``, ``compiled``), sorted by file and line.
  ``compiled`` is True when the line is compiled for the target in the device or the host pass.
  ONE severity scale, :data:`SEVERITIES`: ``error`` (wrong results, or does not compile on the
  target), ``warning`` (often fine, sometimes not: read the line), ``info``. A finding in code
  that is never compiled is never above ``info``.
- ``config``: the macros assumed, per pass (``device``: ``__HIP_PLATFORM_AMD__``, ``__HIPCC__``,
  ``__HIP__``, ``__HIP_DEVICE_COMPILE__``, ``__AMDGCN__``, ``__AMDGCN_WAVEFRONT_SIZE=64``,
  ``__gfx942__``...; ``host``: the same without the device ones), the target, its wavefront size,
  and what system headers are assumed to define (they are never read).
- ``launches``: ``(file, line, kernel)`` of every kernel launch in compiled code (``<<<...>>>``,
  ``hipLaunchKernelGGL``, ``hipLaunchCooperativeKernel``, ``hipModuleLaunchKernel``...).
- ``calls``: ``{name: [(file, line), ...]}`` of every function-like name called in compiled code.
- ``identifiers``: every identifier in compiled code (for "requires" checks).
- ``cuda_left``: findings of kind ``cuda-left`` in compiled code.
- ``libraries``: keys of :data:`LIBRARY_PREFIXES` whose API is used in compiled code.
- ``files_read`` / ``outside_root``: every file read, and those outside ``root``.
- ``has_main``: a ``main`` is defined in compiled code.

How it works, one room (module) each:

- :mod:`.tokens`: a linear tokenizer (one master regular expression; comments and strings are tokens);
- :mod:`.preprocessor`: ``#if/#ifdef/#elif/#else/#endif``, ``#define``/``#undef`` with object- and
  function-like macros, ``#include "..."`` and ``<...>`` resolved in the project's own folders only
  (system headers are never expanded), run twice per unit with the macros of :mod:`.predefined`
  (device pass, host pass);
- :mod:`.scanner`: reads the files and walks each file's tokens through the rules, with a bounded
  look-around (:mod:`.stream`) and each token's context (:mod:`.contexts`: device code, first 32
  threads only, after a fold to 32 values);
- the rules, grouped by what they detect: :mod:`.rules_wave_ops` (ballots, shuffles, masks, tiles,
  warpSize), :mod:`.rules_lane_math` (lane/warp arithmetic and loops over 32 lanes),
  :mod:`.rules_wave_constants` (constants that spell a warp of 32), :mod:`.rules_cuda_guards`
  (``__CUDA_ARCH__``/``CUDA_VERSION``/``__NVCC__`` tests), :mod:`.rules_cuda_names` (CUDA headers,
  names and libraries left over) and :mod:`.rules_hardware` (inline PTX, textures, device properties,
  LDS padding);
- :mod:`.findings`: what comes back (:class:`Finding`, :class:`ScanReport`).

Values that flow from a lane count or a ballot are tracked through ``#define``, ``const``/``constexpr``
and plain variables: a name whose value is 32 (or 5 as a log2, 31/0x1f as a lane mask, 0xffffffff as a
full mask) counts as that number.
"""

from __future__ import annotations

import os
from pathlib import Path

from rocmlab import settings
from rocmlab.cuda2hip.scan.findings import KINDS, SEVERITIES, Finding, ScanReport
from rocmlab.cuda2hip.scan.scanner import Scanner
from rocmlab.cuda2hip.scan.tokens import Tok, strip_comments_and_strings, tokenize

__all__ = ["HEADER_SUFFIXES", "KINDS", "SEVERITIES", "TU_SUFFIXES", "Finding", "ScanReport", "Tok", "scan",
           "scan_project", "strip_comments_and_strings", "tokenize"]

TU_SUFFIXES = (".cu", ".hip", ".cpp", ".cc", ".c", ".cxx")
HEADER_SUFFIXES = (".h", ".cuh", ".hpp", ".hh", ".inl", ".hxx", ".inc")


def _is_path(x) -> bool:
    if isinstance(x, os.PathLike):
        return True
    return isinstance(x, str) and "\n" not in x and len(x) < 4096 and os.path.isfile(x)


def scan(source_or_path, *, target: str = settings.DEFAULT_TARGET, include_dirs=(), defines=None,
         filename: str | None = None, root=None) -> ScanReport:
    """Scan one file (text or path) as the AMD compiler compiles it for ``target``. See the module doc."""
    _check_target(target)
    if _is_path(source_or_path):
        path = Path(source_or_path).absolute()
        path = Path(os.path.normpath(str(path)))
        root_p = Path(root).absolute() if root else path.parent
        s = Scanner(root_p, include_dirs, target, defines)
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {path}")
        s.run_unit(path)
        return s.finish()
    if not isinstance(source_or_path, str):
        raise TypeError("scan() takes HIP/CUDA source text (str) or a path")
    name = filename or "source.hip"
    root_p = Path(root).absolute() if root else Path.cwd()
    path = Path(os.path.normpath(str(root_p / name)))
    s = Scanner(root_p, include_dirs, target, defines)
    s.sources[str(path)] = source_or_path
    s.run_unit(path)
    return s.finish()


def scan_project(root, files=None, *, target: str = settings.DEFAULT_TARGET, include_dirs=(), defines=None,
                 sources: dict[str, str] | None = None, not_units=()) -> ScanReport:
    """Scan every translation unit of a project (``files``: paths relative to ``root``; default: all
    source files under it), then every header no unit included, as never compiled. ``sources``
    ({rel path: text}) are used instead of the files on disk when given. ``not_units``: sources that
    another file #includes (a .cu included by a .cu): scanned as part of their includer, like headers."""
    _check_target(target)
    root_p = Path(os.path.normpath(str(Path(root).absolute())))
    s = Scanner(root_p, include_dirs, target, defines)
    if sources:
        for rel, text in sources.items():
            s.sources[str(Path(os.path.normpath(str(root_p / rel))))] = text
        rels = sorted(sources) if files is None else sorted(files)
    else:
        rels = sorted(files) if files is not None else sorted(
            str(p.relative_to(root_p)) for p in root_p.rglob("*") if p.is_file()
            and p.suffix in TU_SUFFIXES + HEADER_SUFFIXES)
    tus = [r for r in rels if r.endswith(TU_SUFFIXES) and r not in set(not_units)]
    for r in tus:
        s.run_unit(Path(os.path.normpath(str(root_p / r))))
    seen = set(s.token_cache)
    for r in rels:
        p = Path(os.path.normpath(str(root_p / r)))
        if r not in tus and str(p) not in seen:
            s.run_header_alone(p)
    return s.finish()


def _check_target(target: str):
    if target not in settings.AMD_TARGETS:
        raise ValueError(f"unknown target {target!r}: choose one of {', '.join(settings.AMD_TARGETS)}")
