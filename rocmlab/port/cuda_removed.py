"""CUDA APIs that CUDA itself removed: a CUDA original that uses them does not build with a current nvcc.

The port of such a program still builds for HIP (hipify maps ``cudaThreadSynchronize`` to ``hipDeviceSynchronize``,
HIP keeps ``hipDeviceProp_t::clockRate``, the port turns 1D texture references into plain loads), so the port's
report says which CUDA the *original* needs, and ``port --run`` says it when the original does not build with the
nvcc here (nothing to compare with then). Each entry was checked against CUDA 13.0's headers, where the name is
gone (tests/port/test_port_run_reasons.py checks it again where nvcc's headers are).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocmlab.cuda2hip.scan import strip_comments_and_strings


@dataclass(frozen=True)
class Removed:
    api: str            # what the original uses
    removed_in: str     # the CUDA version without it
    needs: str          # what the original needs to build


_INT_DEVICE = re.compile(r"^\s*(?:\d+|\w*[dD]ev\w*|\w*[iI]d|cudaCpuDeviceId|-1)\s*$")
#: (pattern over comment- and string-free code, what it is, the CUDA version that removed it, what the original needs)
REMOVED = (
    (re.compile(r"\bcudaThread(?:Synchronize|Exit|SetLimit|GetLimit)\b"), "cudaThread* (the pre-4.0 names of "
     "cudaDevice*)", "CUDA 13.0", "CUDA 12.x or earlier"),
    (re.compile(r"\.\s*(?:deviceOverlap|clockRate|memoryClockRate|kernelExecTimeoutEnabled|computeMode|"
                r"maxTexture1DLinear|cooperativeMultiDeviceLaunch)\b"),
     "cudaDeviceProp fields (deviceOverlap, clockRate, memoryClockRate, ...)", "CUDA 13.0", "CUDA 12.x or earlier"),
    (re.compile(r"\btexture\s*<|\bsurface\s*<|\bcuda(?:Bind|Unbind)Texture\w*\b|\bcudaBindSurfaceToArray\b"),
     "texture and surface references", "CUDA 12.0", "CUDA 11.8 or earlier"),
)
_PREFETCH = re.compile(r"\bcudaMem(?:PrefetchAsync|Advise)\s*\(")


def _args(code: str, open_at: int) -> list[str] | None:
    depth, start, out = 0, open_at + 1, []
    for k in range(open_at, len(code)):
        ch = code[k]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                out.append(code[start:k])
                return out
        elif ch == "," and depth == 1:
            out.append(code[start:k])
            start = k + 1
    return None


def removed_apis(texts) -> list[tuple[str, int, Removed]]:
    """(file, line, what) for each removed CUDA API the texts ({file: CUDA text}) use, first use per API and file."""
    out: list[tuple[str, int, Removed]] = []
    for rel, text in sorted(texts.items()):
        code = strip_comments_and_strings(text)
        for pat, api, gone, needs in REMOVED:
            m = pat.search(code)
            if m:
                out.append((rel, code.count("\n", 0, m.start()) + 1, Removed(api, gone, needs)))
        for m in _PREFETCH.finditer(code):
            args = _args(code, m.end() - 1)
            at = 2 if "Prefetch" in m.group() else 3          # the device argument: an int before CUDA 13
            if args and len(args) > at and _INT_DEVICE.match(args[at]):
                out.append((rel, code.count("\n", 0, m.start()) + 1,
                            Removed(f"{m.group()[:-1].strip()} with an int device ({args[at].strip()})", "CUDA 13.0",
                                    "CUDA 12.x or earlier (CUDA 13 takes a cudaMemLocation)")))
                break
    return out


def needs_text(found) -> str:
    """One sentence: what CUDA the original needs, and why ('' when nothing removed is used)."""
    if not found:
        return ""
    oldest = "CUDA 11.8 or earlier" if any(r.removed_in == "CUDA 12.0" for _, _, r in found) else \
        "CUDA 12.x or earlier"
    uses = "; ".join(dict.fromkeys(f"{r.api} at {f}:{n} (removed in {r.removed_in})" for f, n, r in found))
    return f"the CUDA original needs {oldest}: it uses {uses}"
