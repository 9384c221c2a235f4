"""The scanner: reads a project's files, runs the preprocessor for each pass, and walks each file's tokens
through the trap rules.

A translation unit is read twice, as the AMD compiler compiles it: the device pass and the host pass
(:mod:`~rocmlab.cuda2hip.scan.predefined`), each folded by the
:mod:`~rocmlab.cuda2hip.scan.preprocessor`. Then every file of the pass is one flat token stream; the
walk records launches, calls and identifiers of compiled code, and hands each token to the rule rooms,
grouped by what they detect: :mod:`~rocmlab.cuda2hip.scan.rules_wave_ops`,
:mod:`~rocmlab.cuda2hip.scan.rules_lane_math`, :mod:`~rocmlab.cuda2hip.scan.rules_wave_constants`
(wave64), :mod:`~rocmlab.cuda2hip.scan.rules_cuda_guards`, :mod:`~rocmlab.cuda2hip.scan.rules_cuda_names`
(CUDA left over) and :mod:`~rocmlab.cuda2hip.scan.rules_hardware`. A finding is kept once per place and
rule; one in code never compiled for the target is at most ``info``. Files are read only inside the
project's root and its include folders (a symlink out of them is never followed).
"""

from __future__ import annotations

import os
from pathlib import Path

from rocmlab.cuda2hip.scan import (rules_cuda_guards, rules_cuda_names, rules_hardware, rules_lane_math,
                                   rules_wave_constants, rules_wave_ops)
from rocmlab.cuda2hip.scan.contexts import contexts, folded_to_32
from rocmlab.cuda2hip.scan.findings import Finding, ScanReport
from rocmlab.cuda2hip.scan.predefined import SYSTEM_HEADER_MACROS, config_for, wavefront_size
from rocmlab.cuda2hip.scan.preprocessor import MAX_INCLUDE_DEPTH, Preprocessor, Unit
from rocmlab.cuda2hip.scan.stream import number_around
from rocmlab.cuda2hip.scan.tokens import Tok, int_value, tokenize

#: Library key -> identifier prefixes / namespaces that mean its API is used.
LIBRARY_PREFIXES: dict[str, tuple[str, ...]] = {
    "cublas": ("cublas", "hipblas", "rocblas_"), "cufft": ("cufft", "hipfft", "rocfft_"),
    "curand": ("curand", "hiprand", "rocrand_"), "cusparse": ("cusparse", "hipsparse", "rocsparse_"),
    "cusolver": ("cusolver", "hipsolver", "rocsolver_"), "cudnn": ("cudnn", "miopen"),
    "thrust": ("thrust::",), "cub": ("cub::", "hipcub::"), "nccl": ("nccl", "rccl"), "openmp": ("omp_",),
}

LAUNCH_FUNCS = ("hipLaunchKernelGGL", "hipLaunchKernelEx", "hipLaunchCooperativeKernel", "hipModuleLaunchKernel",
                "hipLaunchKernel", "cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cuLaunchKernel")

#: Names whose use makes a unit "warp-level": its host code that sizes or checks results per 32 counts.
WARP_LEVEL = {"__activemask", "__lane_id", "warpSize", "tiled_partition", "thread_block_tile", "coalesced_threads",
              "__syncwarp"}
WARP_LEVEL_PREFIXES = ("__ballot", "__any", "__all", "__shfl", "__match", "__reduce_", "__popcll")


def snippet_of(lines_text: list[str], line: int) -> str:
    """The source line ``line`` (1-based), stripped and cut at 160 characters."""
    return lines_text[line - 1].strip()[:160] if 0 < line <= len(lines_text) else ""


class Scanner:
    """One scan: the files it reads (only inside the project's root and include folders), the findings, and
    what the rules learn on the way (tracked constants, 32- and 64-bit masks, names the project defines,
    and for the unit being read: each token's context)."""

    def __init__(self, root: Path, include_dirs, target: str, defines):
        self.root = root
        self.target = target
        self.defines = dict(defines or {})
        self.include_dirs: list[Path] = []
        for d in include_dirs or ():
            p = Path(d)
            p = p if p.is_absolute() else root / p
            self.include_dirs.append(Path(os.path.normpath(str(p))))
        self.allowed = [root.resolve()] + [d.resolve() for d in self.include_dirs if d.exists()]
        self.token_cache: dict[str, list[list[Tok]]] = {}
        self._texts: dict[str, list[str]] = {}
        self.sources: dict[str, str] = {}      # path -> text given in memory
        self.findings: dict[tuple, Finding] = {}
        self.report = ScanReport(target)
        self.values: dict[str, tuple[int, str, int]] = {}   # name -> (value, file, line)
        self.masks64: set[str] = set()
        self.masks32: set[str] = set()
        self.decl_type: dict[str, str] = {}
        self.own_names: set[str] = set()
        self.constants: list[tuple] = []      # constants of the unit being read, judged at its end
        self.dev: list[bool] = []             # per token of the unit: inside a __global__/__device__ function
        self.g32: list[bool] = []             # per token: only the first 32 threads run it (if (tid < 32) ...)
        self.fold: list[bool] = []            # per token: after a fold to 32 values in shared memory
        self.warp_unit = False                # the unit uses warp-level features
        self.project_warp = False             # some unit of the project does
        self.sizing: list[tuple] = []         # host constants that size per warp, judged in finish()

    # files ----------------------------------------------------------------------------------------------
    def display(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def _allowed(self, path: Path) -> bool:
        real = path.resolve()
        return any(real == a or a in real.parents for a in self.allowed)

    def lines_of(self, path: Path) -> list[list[Tok]]:
        key = str(path)
        if key not in self.token_cache:
            if key in self.sources:
                text = self.sources[key]
            else:
                try:
                    text = path.read_bytes().decode("utf-8", errors="replace")
                except OSError:
                    text = ""
                self.report.files_read.append(self.display(path))
                if not self._inside_root(path):
                    self.report.outside_root.append(str(path))
            self._texts[key] = text.split("\n")
            self.token_cache[key] = tokenize(text)
            self._collect_own_names(self.token_cache[key])
        return self.token_cache[key]

    def _inside_root(self, path: Path) -> bool:
        r = self.root.resolve()
        real = path.resolve()
        return real == r or r in real.parents

    def resolve(self, spec: str, including: Path) -> Path | None:
        if len(spec) < 3 or spec[0] not in "<\"":
            return None
        name = spec[1:-1]
        cands = []
        if spec[0] == '"':
            cands.append(including.parent / name)
        cands += [d / name for d in self.include_dirs]
        for c in cands:
            c = Path(os.path.normpath(str(c)))
            if str(c) in self.sources:
                return c
            if c.is_file():
                if not self._allowed(c):
                    if str(c) not in self.report.not_followed:
                        self.report.not_followed.append(str(c))
                    continue
                return c
        return None

    def has_include(self, spec: str) -> bool:
        if self.resolve(spec, self.root / "x") is not None:
            return True
        name = spec[1:-1]
        return name.startswith(("hip/", "hipblas", "hipcub/", "rocprim/", "thrust/", "hipfft", "hiprand",
                                "hipsparse", "hipsolver", "rocblas")) or name in ("cstdio", "cstdlib", "vector")

    # names the project defines: never "CUDA left over" --------------------------------------------------------
    def _collect_own_names(self, lines):
        for toks in lines:
            n = len(toks)
            for i, t in enumerate(toks):
                if t.kind != "id":
                    continue
                if t.text in ("define",) and i == 1 and toks[0].text == "#" and n > 2:
                    self.own_names.add(toks[2].text)
                elif t.text in ("struct", "class", "enum", "union", "typedef", "using", "namespace") and i + 1 < n:
                    j = i + 1
                    while j < n and toks[j].kind == "id" and toks[j].text in ("class", "struct"):
                        j += 1
                    if j < n:
                        self.own_names.add(toks[j].text)
                    if t.text == "typedef":
                        k = j
                        while k < n and toks[k].text != ";":
                            k += 1
                        if k - 1 > i and toks[k - 1].kind == "id":
                            self.own_names.add(toks[k - 1].text)

    def _add_function_defs(self, lines):
        """name(...) { ... : a function the project defines."""
        flat = [t for line in lines for t in line]
        for i, t in enumerate(flat):
            if t.kind == "id" and i + 1 < len(flat) and flat[i + 1].text == "(" and i > 0 and \
                    flat[i - 1].kind == "id" and flat[i - 1].text not in ("return", "else", "case"):
                depth, j = 0, i + 1
                while j < len(flat) and j < i + 400:
                    if flat[j].text == "(":
                        depth += 1
                    elif flat[j].text == ")":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                k = j + 1
                while k < len(flat) and flat[k].kind == "id" and flat[k].text in ("const", "noexcept", "override"):
                    k += 1
                if k < len(flat) and flat[k].text == "{":
                    self.own_names.add(t.text)

    # notes from the preprocessor --------------------------------------------------------------------------------
    def note_depth(self, path):
        self.add(self.display(path), 1, 1, "include-too-deep", "scan", "warning",
                 f"#include nesting is deeper than {MAX_INCLUDE_DEPTH}: this file was not scanned there (an include "
                 "cycle without a guard?)", "add an include guard or #pragma once", True)

    def note_bad_if(self, unit, idx, rest, why):
        line = rest[0].line if rest else idx + 1
        self.add(unit.path, line, 1, "unevaluated-if", "scan", "info",
                 f"this #if could not be evaluated ({why}); the scanner took it as false",
                 "check the condition; the compiler may see it differently", True)

    def note_define(self, name, body, unit, line):
        if len(body) == 1 and body[0].kind == "num":
            v = int_value(body[0].text)
        elif len(body) == 3 and body[0].text == "(" and body[2].text == ")" and body[1].kind == "num":
            v = int_value(body[1].text)
        else:
            v = None
        if v is not None:
            self.values[name] = (v, unit.path, line)

    # findings -----------------------------------------------------------------------------------------------
    def add(self, file, line, col, rule, kind, severity, message, fix, compiled, snippet=None):
        if not compiled and severity != "info":
            message = f"[never compiled for {self.target}, so not a problem there] {message}"
            severity = "info"
        key = (file, line, col, rule)
        old = self.findings.get(key)
        if old is not None:
            if old.compiled or not compiled:
                return
        snip = snippet if snippet is not None else snippet_of(self._texts.get(self._key_of(file), []), line)
        self.findings[key] = Finding(file, line, col, rule, kind, severity, message, fix, snip, compiled)

    def _key_of(self, display):
        p = Path(display)
        return str(p if p.is_absolute() else Path(os.path.normpath(str(self.root / p))))

    # running ---------------------------------------------------------------------------------------------------
    def run_unit(self, path: Path):
        for device in (True, False):
            cfg = config_for(self.target, device)
            cfg.update(self.defines)
            pp = Preprocessor(self, cfg)
            pp.run_file(path, 0)
            for u in pp.units:
                self.rules(u, device)

    def run_header_alone(self, path: Path):
        """A header no unit includes: scanned as never compiled."""
        lines = self.lines_of(path)
        u = Unit(self.display(path), lines, [False] * len(lines), [])
        for idx, toks in enumerate(lines):
            if toks and toks[0].text == "#" and len(toks) > 1:
                u.directives.append((idx, toks[1].text, toks[2:], False, False))
                if toks[1].text == "define" and len(toks) > 2:
                    self.note_define(toks[2].text, toks[3:], u, toks[2].line)
        self.rules(u, True)

    def finish(self) -> ScanReport:
        for args in self.sizing:        # host sizes per warp count when the program is warp-level
            rules_wave_constants.emit_constant(self, *args, warp_level=self.project_warp)
        self.sizing = []
        r = self.report
        r.findings = sorted(self.findings.values(), key=lambda f: (f.file, f.line, f.column, f.rule))
        lib = []
        for key, prefixes in LIBRARY_PREFIXES.items():
            if any(any(i.startswith(p.rstrip(":")) if not p.endswith("::") else i == p[:-2] for p in prefixes)
                   for i in r.identifiers):
                lib.append(key)
        r.libraries = lib
        r.config = {"target": self.target, "wavefront_size": wavefront_size(self.target),
                    "device_pass": config_for(self.target, True), "host_pass": config_for(self.target, False),
                    "defines": self.defines, "include_dirs": [str(d) for d in self.include_dirs],
                    "system_headers": "never read; assumed to define: " + "; ".join(
                        f"<{h}>: {', '.join(m)}" for h, m in SYSTEM_HEADER_MACROS.items()),
                    "__has_include": "true for files found in the project's folders and for ROCm headers",
                    "__has_builtin/__has_feature/__has_attribute": "0"}
        r.launches = sorted(set(r.launches))
        return r

    def rules(self, u: Unit, device: bool):
        """Every rule over one file of one pass: its directives, then each token of its compiled and
        uncompiled lines, in order; the constants seen are judged at the end."""
        self.constants = []
        for idx, d, rest, active, taken in u.directives:
            line = idx + 1 if not rest else rest[0].line
            rules_cuda_guards.directive_rule(self, u, line, d, rest, active, taken)
            rules_cuda_names.directive_rule(self, u, line, d, rest, active)
            rules_wave_constants.define_rule(self, u, d, rest, active)
        flat: list[Tok] = []
        act: list[bool] = []
        for idx, toks in enumerate(u.lines):
            if toks and toks[0].text == "#":
                continue
            flat += toks
            act += [u.active[idx]] * len(toks)
        if not any(act) and device is False:
            self.constants = []
            return
        self.dev, self.g32 = contexts(flat, self.value_at)
        self.fold = folded_to_32(flat, self.dev, self.value_at)
        self.warp_unit = any(t.kind == "id" and (t.text in WARP_LEVEL or t.text.startswith(WARP_LEVEL_PREFIXES))
                             for t in flat)
        self._add_function_defs(u.lines)
        # inactive line ranges, for the report
        ranges, start = [], None
        for idx, a in enumerate(u.active):
            if not a and start is None:
                start = idx + 1
            elif a and start is not None:
                ranges.append((start, idx))
                start = None
        if start is not None:
            ranges.append((start, len(u.active)))
        old = self.report.inactive_lines.get(u.path)
        if old is None or len(ranges) < len(old):
            self.report.inactive_lines[u.path] = ranges
        n = len(flat)
        rep = self.report
        for i, t in enumerate(flat):
            a = act[i]
            tx = t.text
            nxt = flat[i + 1].text if i + 1 < n else ""
            if t.kind == "id":
                if a:
                    rep.identifiers.add(tx)
                    if nxt == "::":
                        rep.identifiers.add(tx + "::")
                    if nxt == "(":
                        rep.calls.setdefault(tx, []).append((u.path, t.line))
                        if tx == "main" and i > 0 and flat[i - 1].text == "int":
                            rep.has_main = True
                    if tx in LAUNCH_FUNCS and nxt == "(":
                        k = flat[i + 2].text if i + 2 < n else ""
                        if k in ("HIP_KERNEL_NAME", "reinterpret_cast", "(") and i + 4 < n:
                            k = next((x.text for x in flat[i + 2:i + 8] if x.kind == "id" and x.text not in
                                      ("HIP_KERNEL_NAME", "reinterpret_cast", "const", "void")), k)
                        rep.launches.append((u.path, t.line, k))
                rules_wave_ops.id_rules(self, u, flat, i, a)
                if tx == "for" and nxt == "(":
                    rules_lane_math.for_rule(self, u, flat, i, a)
                rules_hardware.id_rules(self, u, flat, i, a)
                rules_cuda_guards.id_rule(self, u, flat, i, a)
                rules_cuda_names.id_rules(self, u, flat, i, a)
            elif t.kind == "num":
                v, prev, j, closes, after = number_around(flat, i)
                if v is not None:
                    rules_lane_math.num_rules(self, u, flat, i, a, v, prev, j, closes, after)
                    rules_wave_constants.variable_rule(self, u, flat, i, a, v, prev, j, after)
            elif tx == "<<<" and a:
                k = flat[i - 1].text if i > 0 else ""
                if k == ">":     # kernel<T><<<...>>>
                    j = i - 1
                    depth = 0
                    while j > 0 and j > i - 40:
                        if flat[j].text == ">":
                            depth += 1
                        elif flat[j].text == "<":
                            depth -= 1
                            if depth == 0:
                                break
                        j -= 1
                    k = flat[j - 1].text if j > 0 else k
                rep.launches.append((u.path, t.line, k))
        rules_wave_constants.judge_constants(self, flat, self.dev)

    # the values of names -------------------------------------------------------------------------------------------
    def value_at(self, flat, i) -> tuple[int | None, int]:
        """(value, index after) of an integer at flat[i]: a literal, (literal), or a tracked name."""
        if i >= len(flat):
            return None, i
        t = flat[i]
        if t.text == "(" and i + 2 < len(flat) and flat[i + 2].text == ")":
            v, _ = self.value_at(flat, i + 1)
            return v, i + 3
        if t.kind == "num":
            return int_value(t.text), i + 1
        if t.kind == "id" and t.text in self.values and (i + 1 >= len(flat) or flat[i + 1].text != "("):
            return self.values[t.text][0], i + 1
        return None, i + 1
