"""Port CUDA to HIP, then show what the port still gets wrong on AMD (the notebook-facing view).

There is ONE translation, :func:`rocmlab.cuda2hip.translate.translate` (a single file is a
one-file project), with two renaming engines:

- ``torch``: PyTorch's ``torch.utils.hipify`` (always here: it ships with every torch build);
- ``perl``: ROCm's ``hipify-perl`` (on PATH in ROCm images, or in the offline ROCm root).

and ONE trap scanner, :func:`rocmlab.cuda2hip.scan.scan`, the same ones ``rocmlab port`` and the
grader use. :func:`hipify_source` ports a string, :func:`hipify_file` a file,
:func:`hipify_folder` a folder. Each returns a :class:`Port`: the HIP text, the renames made,
and the trap report on the output, with a side-by-side diff for notebooks.
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from rocmlab.html_table import html_table
from rocmlab.cuda2hip.scan import Finding, scan_project, strip_comments_and_strings
from rocmlab.cuda2hip.translate import (CUDA_SUFFIXES, EngineError, fix_traps, hipify_perl_command,
                                        hipify_texts, translate)

TOOLS = ("torch", "perl")
_TOOL_ALIASES = {"hipify-perl": "perl"}


class HipifyError(RuntimeError):
    pass


@dataclass
class Port:
    name: str
    tool: str
    cuda: str
    hip: str
    traps: list[Finding] = field(default_factory=list)   # the scanner's findings in this file

    @property
    def renames(self) -> list[tuple[str, str]]:
        """(CUDA name, HIP name) pairs the tool changed, in order of first appearance."""
        seen, out = set(), []
        a = re.findall(r"\w+|[^\w\s]", self.cuda)
        b = re.findall(r"\w+|[^\w\s]", self.hip)
        sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
        for op, i1, i2, j1, j2 in sm.get_opcodes():
            if op == "replace":
                pair = (" ".join(a[i1:i2]), " ".join(b[j1:j2]))
                if pair not in seen:
                    seen.add(pair)
                    out.append(pair)
        return out

    @property
    def wrong(self) -> list[Finding]:
        """The error-level traps."""
        return [t for t in self.traps if t.severity == "error"]

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.cuda.splitlines(True), self.hip.splitlines(True),
                                            f"{self.name} (CUDA)", f"{self.name} (HIP, {self.tool})"))

    def side_by_side_html(self) -> str:
        """CUDA on the left, HIP on the right; changed lines highlighted, trap lines marked."""
        trap_lines: dict[int, list[Finding]] = {}
        for t in self.traps:
            trap_lines.setdefault(t.line, []).append(t)
        a, b = self.cuda.splitlines(), self.hip.splitlines()
        sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
        rows = []

        def td(num, text, colour, title=""):
            t = f" title='{html.escape(title)}'" if title else ""
            n = "" if num is None else str(num)
            return (f"<td style='color:#6e7781;text-align:right;vertical-align:top;padding:0 4px 0 0'>{n}</td>"
                    f"<td style='background:{colour};white-space:pre-wrap;overflow-wrap:anywhere;"
                    f"text-align:left;vertical-align:top;font-family:monospace;padding:0 4px'{t}>"
                    f"{html.escape(text)}</td>")

        for op, i1, i2, j1, j2 in sm.get_opcodes():
            for k in range(max(i2 - i1, j2 - j1)):
                ia, jb = i1 + k, j1 + k
                left = a[ia] if ia < i2 else ""
                right = b[jb] if jb < j2 else ""
                trap = trap_lines.get(jb + 1, []) if jb < j2 else []
                lc = "#fff" if op == "equal" else "#ffebe9"
                rc = "#fff" if op == "equal" else "#dafbe1"
                if trap:
                    rc = "#fff8c5"
                rows.append("<tr>" + td(ia + 1 if ia < i2 else None, left, lc)
                            + td(jb + 1 if jb < j2 else None,
                                 right + ("   ⚠ " + ", ".join(t.rule for t in trap) if trap else ""), rc,
                                 " ".join(f"{t.message} Fix: {t.fix}" for t in trap)) + "</tr>")
        # two code columns of equal width that wrap: the view fits the notebook, nothing scrolls sideways
        cols = "<colgroup><col style='width:3.2em'><col><col style='width:3.2em'><col></colgroup>"
        head = (f"<tr><th colspan=2 style='text-align:left'>{html.escape(self.name)} (CUDA)</th>"
                f"<th colspan=2 style='text-align:left'>HIP ({html.escape(self.tool)} hipify, then rocmlab's fixes); "
                f"yellow: a trap</th></tr>")
        return (f"<table class='rocmlab-diff' style='border-collapse:collapse;font-size:12px;table-layout:fixed;"
                f"width:100%'>{cols}{head}{''.join(rows)}</table>")

    def trap_table_html(self) -> str:
        if not self.traps:
            return "<p>No traps found.</p>"
        rows = [[t.line, t.severity, t.rule, t.snippet[:80], t.message, t.fix] for t in self.traps]
        return html_table(["line", "severity", "trap", "code", "why", "fix"], rows,
                          css_class="rocmlab-traps")

    def report(self) -> str:
        lines = [f"{self.name}: {len(self.renames)} renames by {self.tool}, {len(self.traps)} traps "
                 f"({len(self.wrong)} error-level)"]
        lines += [str(t) for t in self.traps] or ["no traps found"]
        return "\n".join(lines)


_HIP_API = re.compile(r"\b(?:hip[A-Z]\w*|hipblas\w+)\s*\(|#\s*include\s*[<\"]hip/|\bhipLaunchKernelGGL\b")


def looks_like(source: str) -> str | None:
    """"cuda" when the source calls CUDA's API and none of HIP's, "hip" for the reverse, else None."""

    clean = strip_comments_and_strings(source)
    cuda = bool(re.search(r"\b(?:cuda[A-Z]\w*|cublas\w+)\s*\(|#\s*include\s*[<\"]cuda", clean))
    hip = bool(_HIP_API.search(clean))
    if cuda and not hip:
        return "cuda"
    if hip and not cuda:
        return "hip"
    return None


def available_tools() -> list[str]:
    """The renaming engines usable here: torch always; perl when hipify-perl is found."""
    return ["torch"] + (["perl"] if hipify_perl_command() else [])


def _tool(tool: str) -> str:
    tool = _TOOL_ALIASES.get(tool, tool)
    if tool not in TOOLS:
        raise ValueError(f"unknown hipify tool {tool!r}: choose one of {', '.join(TOOLS)}")
    return tool


def _translate(sources: dict[str, str], tool: str):
    try:
        return translate(sources, engine=tool)
    except EngineError as exc:
        raise HipifyError(str(exc)) from None


def _scan(hip_texts: dict[str, str]):
    """THE scanner (rocmlab.cuda2hip.scan) over the ported files, as a one-folder project."""
    return scan_project("/rocmlab-hipify", sources=hip_texts, include_dirs=["."])


def _traps_of(rep, tr, name: str) -> list[Finding]:
    """The scanner's findings in one ported file (compiled code) and the translation's fixes."""
    traps = [f for f in rep.findings if f.file == name and f.compiled]
    traps += [f for f in fix_traps(tr.fixes) if f.file == name]
    return sorted(traps, key=lambda t: (t.line, t.column, t.rule))


def hipify_source(cuda_source: str, name: str = "kernel.cu", tool: str = "torch") -> Port:
    """Port one CUDA source string to HIP (a one-file project) and report its traps."""
    tool = _tool(tool)
    if not isinstance(cuda_source, str) or not cuda_source.strip():
        raise ValueError("hipify_source needs CUDA source text (a non-empty string)")
    suffix = Path(name).suffix or ".cu"
    if suffix not in CUDA_SUFFIXES:
        suffix = ".cu"
    rel = Path(name).stem + suffix
    tr = _translate({rel: cuda_source}, tool)
    hip = tr.texts[rel]
    return Port(name, tool, cuda_source, hip, _traps_of(_scan({tr.names[rel]: hip}), tr, tr.names[rel]))


def plain_torch_hipify(cuda_source: str, name: str = "kernel.cu") -> str:
    """PyTorch's hipify alone (the renames, without rocmlab's fix pass): to show which change is whose.
    It keeps CUDA's 32-bit ``0xffffffff`` warp masks; :func:`hipify_source` widens them."""
    rel = Path(name).stem + ".cu"
    return hipify_texts({rel: cuda_source})[rel]


def hipify_file(path, output=None, tool: str = "torch") -> Port:
    """Port a CUDA file; writes the HIP file to ``output`` when given (``.cu`` -> ``.hip``)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such CUDA file: {path}")
    port = hipify_source(path.read_text(encoding="utf-8", errors="replace"), name=path.name, tool=tool)
    if output is not None:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(port.hip)
    return port


def hipify_folder(src_dir, out_dir, tool: str = "torch") -> dict[str, Port]:
    """Port every CUDA file under ``src_dir`` into ``out_dir`` (same layout, hipify's renames)."""
    tool = _tool(tool)
    src_dir, out_dir = Path(src_dir), Path(out_dir)
    if not src_dir.is_dir():
        raise FileNotFoundError(f"no such folder: {src_dir}")
    files = sorted(p for p in src_dir.rglob("*") if p.is_file() and p.suffix in CUDA_SUFFIXES)
    sources = {str(f.relative_to(src_dir)): f.read_text(encoding="utf-8", errors="replace") for f in files}
    if not sources:
        raise FileNotFoundError(f"no CUDA sources ({' '.join(CUDA_SUFFIXES)}) under {src_dir}")
    tr = _translate(sources, tool)
    hip_texts = {tr.names[r]: tr.texts[r] for r in sources}
    rep = _scan(hip_texts)
    ports: dict[str, Port] = {}
    for rel, text in sources.items():
        name = tr.names[rel]
        traps = _traps_of(rep, tr, name)
        ports[rel] = Port(rel, tool, text, tr.texts[rel], traps)
        target = out_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(tr.texts[rel])
    return ports
