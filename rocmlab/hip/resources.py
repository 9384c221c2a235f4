"""Parsers over compiler output: per-kernel resources (registers, LDS, scratch, spills, occupancy) and ISA
listings, from AMDGCN assembly, build remarks, ptxas logs and SASS. Nothing here compiles: the inputs come
from :mod:`rocmlab.hip.compile` (through :mod:`rocmlab.hip.build` or :mod:`rocmlab.hip.inspector`)."""

from __future__ import annotations

import re
import shutil
from dataclasses import asdict, dataclass

import yaml

from rocmlab import sandbox, settings


@dataclass(frozen=True)
class KernelResources:
    name: str                      # demangled
    symbol: str                    # mangled
    target: str
    vgprs: int | None              # AMD: architectural VGPRs per lane; NVIDIA: registers per thread
    sgprs: int | None              # AMD scalar registers per wavefront (incl. VCC etc.)
    agprs: int | None              # AMD accumulation registers (MFMA) per lane
    lds_bytes: int | None          # LDS (AMD) / static shared memory (NVIDIA) per workgroup
    scratch_bytes: int | None      # private memory per lane (AMD) / stack frame per thread (NVIDIA)
    vgpr_spills: int | None        # AMD: spilled VGPRs; NVIDIA: spill store bytes
    sgpr_spills: int | None        # AMD: spilled SGPRs; NVIDIA: spill load bytes
    wavefront_size: int | None
    occupancy: int | None          # the compiler's waves per SIMD (AMD); None on NVIDIA (ptxas has none)
    max_workgroup_size: int | None = None
    total_vgprs: int | None = None  # AMD: unified VGPR file use (arch, aligned, + AGPRs)
    barriers: int | None = None    # NVIDIA named barriers
    source: str = ""               # where the figures come from

    @property
    def is_amd(self) -> bool:
        return self.target.startswith("gfx")

    def rows(self) -> list[tuple[str, str]]:
        def v(x, unit=""):
            return "n/a" if x is None else f"{x}{unit}"

        if self.is_amd:
            return [("VGPRs (arch)", v(self.vgprs)), ("AGPRs", v(self.agprs)), ("SGPRs", v(self.sgprs)),
                    ("LDS per workgroup", v(self.lds_bytes, " B")), ("scratch per lane", v(self.scratch_bytes, " B")),
                    ("spills (VGPR / SGPR)", f"{v(self.vgpr_spills)} / {v(self.sgpr_spills)}"),
                    ("wavefront size", v(self.wavefront_size)),
                    ("occupancy (compiler)", v(self.occupancy, " waves/SIMD")),
                    ("max workgroup size", v(self.max_workgroup_size))]
        return [("registers per thread", v(self.vgprs)), ("barriers", v(self.barriers)),
                ("shared memory per block", v(self.lds_bytes, " B")), ("stack frame", v(self.scratch_bytes, " B")),
                ("spill stores / loads", f"{v(self.vgpr_spills, ' B')} / {v(self.sgpr_spills, ' B')}"),
                ("warp size", v(self.wavefront_size)), ("occupancy", "not reported by ptxas")]


@dataclass(frozen=True)
class IsaLine:
    text: str
    category: str | None           # shuffle | global | lds | wait | barrier | matrix | None


@dataclass
class KernelIsa:
    name: str
    symbol: str
    lines: list[IsaLine]

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for ln in self.lines:
            if ln.category:
                out[ln.category] = out.get(ln.category, 0) + 1
        return out

    def mnemonics(self, category: str | None = None) -> dict[str, int]:
        """Instruction name -> count (e.g. ``global_load_dwordx4``), optionally for one category."""
        out: dict[str, int] = {}
        for ln in self.lines:
            if category is None or ln.category == category:
                m = re.match(r"\s*(?:/\*\w+\*/\s*)?(@!?U?P\w+\s+)?([A-Za-z_][\w.]*)", ln.text)
                if m and (category or ln.category):
                    out[m.group(2)] = out.get(m.group(2), 0) + 1
        return out


# --- highlighting ---------------------------------------------------------------------------

AMD_CATEGORIES = (
    ("shuffle", re.compile(r"^\s*(?:ds_bpermute\w*|ds_permute\w*|ds_swizzle\w*|v_readlane\w*|v_writelane\w*|"
                           r"v_readfirstlane\w*|v_permlane\w*)\b|_dpp\b|\b(?:row_shr|row_shl|row_ror|row_bcast|"
                           r"wave_shr|wave_ror|quad_perm|row_newbcast)\b")),
    ("matrix", re.compile(r"^\s*(?:v_mfma\w*|v_smfmac\w*)\b")),
    ("global", re.compile(r"^\s*(?:global|buffer|flat)_(?:load|store|atomic)\w*\b")),
    ("lds", re.compile(r"^\s*ds_\w+\b")),
    ("wait", re.compile(r"^\s*s_waitcnt\w*\b")),
    ("barrier", re.compile(r"^\s*s_barrier\b")),
)
NV_CATEGORIES = (
    ("shuffle", re.compile(r"\bSHFL\.|\bshfl\.sync|\bvote\.|\bVOTE\.")),
    ("matrix", re.compile(r"\b(?:HMMA|IMMA|HGMMA|QGMMA|WGMMA|DMMA)\b|\b(?:mma|wgmma)\.")),
    ("global", re.compile(r"\b(?:LDG|STG|RED|ATOMG)\b|\b(?:ld|st|atom|red)\.global")),
    ("lds", re.compile(r"\b(?:LDS|STS|ATOMS|LDSM)\b|\b(?:ld|st|atom)\.shared")),
    ("wait", re.compile(r"\bDEPBAR\b|\bcp\.async\.wait")),
    ("barrier", re.compile(r"\bBAR\b|\bbar\.sync|\bbarrier\.")),
)
CATEGORY_HELP = {
    "shuffle": "cross-lane data movement: ds_bpermute / DPP on AMD (what __shfl* becomes), SHFL on NVIDIA",
    "global": "global memory loads/stores: the suffix is the width (dword = 4 B, dwordx4 = 16 B per lane)",
    "lds": "LDS (shared memory) reads and writes",
    "wait": "s_waitcnt: the wavefront waits for outstanding memory operations (vmcnt, lgkmcnt)",
    "barrier": "workgroup barrier (__syncthreads)",
    "matrix": "matrix core instructions (v_mfma on CDNA, HMMA/WGMMA on NVIDIA)",
}


def classify(line: str, amd: bool = True) -> str | None:
    for cat, rx in (AMD_CATEGORIES if amd else NV_CATEGORIES):
        if rx.search(line):
            return cat
    return None


# --- parsing -----------------------------------------------------------------------------------

def demangle(names: list[str]) -> dict[str, str]:
    names = [n for n in names if n]
    tool = shutil.which("llvm-cxxfilt-19") or shutil.which("c++filt") or shutil.which("llvm-cxxfilt")
    if not tool or not names:
        return {n: n for n in names}
    try:   # through the sandbox's limited runner (time, memory, output capped): the names come from learner code
        done = sandbox.run_limited([tool], timeout_s=settings.DEMANGLE_TIME_LIMIT_S, stdin_data="\n".join(names).encode())
    except OSError:
        return {n: n for n in names}
    res = done.stdout.splitlines()
    if done.ok and len(res) == len(names):
        return dict(zip(names, res, strict=True))
    return {n: n for n in names}


_INFO = re.compile(r"^; (NumSgprs|NumVgprs|NumAgprs|TotalNumVgprs|ScratchSize|LDSByteSize|Occupancy): (\d+)",
                   re.MULTILINE)


def parse_amdgcn(asm: str, target: str) -> tuple[list[KernelResources], list[KernelIsa]]:
    """Resources and per-kernel listings from clang's AMDGCN assembly (``-S``)."""
    meta = {}
    m = re.search(r"\.amdgpu_metadata\n(.*?)\n\s*\.end_amdgpu_metadata", asm, re.DOTALL)
    if m:
        doc = yaml.safe_load(m.group(1)) or {}
        meta = {k[".name"]: k for k in doc.get("amdhsa.kernels", [])}
    funcs: list[tuple[str, list[str]]] = []
    infos: dict[str, dict[str, int]] = {}
    current, body, last = None, [], None
    for line in asm.splitlines():
        lab = re.match(r"^([\w.$]+):\s*(?:;.*)?$", line)
        if current is None and lab and not lab.group(1).startswith("."):
            current, body = lab.group(1), []
            continue
        if current is not None:
            if re.match(r"^\.Lfunc_end\d+:", line):
                funcs.append((current, body))
                last, current = current, None
                continue
            if line.strip().startswith(".") and not re.match(r"^\.LBB", line):
                continue
            if line.strip() and not line.strip().startswith(";"):
                body.append(line.rstrip())
            elif re.match(r"^\.LBB|^; %bb", line):
                body.append(line.rstrip())
            continue
        im = _INFO.match(line)
        if im and last:
            infos.setdefault(last, {})[im.group(1)] = int(im.group(2))
    kernels_syms = [f for f, _ in funcs if f in meta] or [f for f, _ in funcs if f in infos]
    names = demangle(kernels_syms)
    res, isa = [], []
    for sym, lines in funcs:
        if sym not in kernels_syms:
            continue
        info, md = infos.get(sym, {}), meta.get(sym, {})
        res.append(KernelResources(
            name=names.get(sym, sym), symbol=sym, target=target,
            vgprs=info.get("NumVgprs"), sgprs=info.get("NumSgprs", md.get(".sgpr_count")),
            agprs=info.get("NumAgprs", md.get(".agpr_count")),
            lds_bytes=info.get("LDSByteSize", md.get(".group_segment_fixed_size")),
            scratch_bytes=info.get("ScratchSize", md.get(".private_segment_fixed_size")),
            vgpr_spills=md.get(".vgpr_spill_count"), sgpr_spills=md.get(".sgpr_spill_count"),
            wavefront_size=md.get(".wavefront_size"), occupancy=info.get("Occupancy"),
            max_workgroup_size=md.get(".max_flat_workgroup_size"),
            total_vgprs=info.get("TotalNumVgprs", md.get(".vgpr_count")),
            source="clang -S: '; Kernel info' and amdhsa.kernels metadata"))
        isa.append(KernelIsa(names.get(sym, sym), sym, [IsaLine(ln, classify(ln, True)) for ln in lines]))
    return res, isa


_REMARK = re.compile(r"remark:\s+(Function Name|TotalSGPRs|SGPRs|VGPRs|AGPRs|ScratchSize \[bytes/lane\]|Occupancy \[waves/SIMD\]|"
                     r"SGPRs Spill|VGPRs Spill|LDS Size \[bytes/block\]): (\S+)")


def resources_from_log(log: str, kind: str, target: str) -> list[KernelResources]:
    """Per-kernel figures from a build log: clang's ``-Rpass-analysis=kernel-resource-usage``
    remarks, or ``ptxas -v`` lines. (Wavefront size is not in the remarks: it is the target's,
    64 on gfx9/CDNA; :func:`inspect` reads it from the code object instead.)"""
    if kind == "nvcc" or target.startswith("sm_"):
        return parse_ptxas(log, target)
    rows: list[dict] = []
    for m in _REMARK.finditer(log):
        key, val = m.group(1), m.group(2)
        key = "SGPRs" if key == "TotalSGPRs" else key     # clang-22 says TotalSGPRs
        if key == "Function Name":
            rows.append({"symbol": val})
        elif rows:
            rows[-1][key] = int(val) if val.isdigit() else None
    # both the host and device passes may repeat kernels: keep the first of each
    seen, uniq = set(), []
    for r in rows:
        if r["symbol"] not in seen:
            seen.add(r["symbol"])
            uniq.append(r)
    names = demangle([r["symbol"] for r in uniq])
    wave = 64 if target.startswith("gfx9") else None
    return [KernelResources(names.get(r["symbol"], r["symbol"]), r["symbol"], target, r.get("VGPRs"), r.get("SGPRs"),
                            r.get("AGPRs"), r.get("LDS Size [bytes/block]"), r.get("ScratchSize [bytes/lane]"),
                            r.get("VGPRs Spill"), r.get("SGPRs Spill"), wave, r.get("Occupancy [waves/SIMD]"),
                            source="clang -Rpass-analysis=kernel-resource-usage")
            for r in uniq]


def parse_ptxas(log: str, target: str) -> list[KernelResources]:
    out, cur = [], None
    syms = re.findall(r"Compiling entry function '([^']+)'", log)
    names = demangle(syms)
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for '(\w+)'", line)
        if m:
            cur = {"symbol": m.group(1), "target": m.group(2)}
            out.append(cur)
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            cur.update(stack=int(m.group(1)), st=int(m.group(2)), ld=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["regs"] = int(m.group(1))
            b = re.search(r"used (\d+) barriers", line)
            s = re.search(r"(\d+) bytes smem", line)
            cur["bar"] = int(b.group(1)) if b else 0
            cur["smem"] = int(s.group(1)) if s else 0
    return [KernelResources(names.get(c["symbol"], c["symbol"]), c["symbol"], c.get("target", target), c.get("regs"),
                            None, None, c.get("smem"), c.get("stack"), c.get("st"), c.get("ld"), 32, None,
                            barriers=c.get("bar"), source="nvcc -Xptxas -v")
            for c in out]


def parse_sass(text: str) -> list[KernelIsa]:
    """Per-function listings from ``cuobjdump -sass`` (or PTX ``.entry`` bodies)."""
    out: list[KernelIsa] = []
    chunks = re.split(r"^\s*Function : (\S+)\s*$", text, flags=re.MULTILINE)
    if len(chunks) > 1:
        syms = chunks[1::2]
        names = demangle(syms)
        for sym, body in zip(syms, chunks[2::2], strict=True):
            lines = []
            for ln in body.splitlines():
                m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;?\s*/\*\s*0x[0-9a-f]+\s*\*/\s*$", ln)
                if m:
                    lines.append(IsaLine(m.group(1), classify(m.group(1), False)))
            out.append(KernelIsa(names.get(sym, sym), sym, lines))
        return out
    # PTX
    for m in re.finditer(r"\.entry\s+(\w+)\s*\((.*?)\n\}", text, re.DOTALL):
        sym = m.group(1)
        body = m.group(2).split("{", 1)[-1]
        lines = [IsaLine(ln.strip(), classify(ln, False)) for ln in body.splitlines()
                 if ln.strip() and not ln.strip().startswith(("//", ".reg", ".loc", ".file"))]
        out.append(KernelIsa(sym, sym, lines))
    names = demangle([k.symbol for k in out])
    for k in out:
        k.name = names.get(k.symbol, k.symbol)
    return out


# --- the inspector ---------------------------------------------------------------------------------


def to_dataframe(kernels: list[KernelResources]):
    import pandas as pd

    return pd.DataFrame([asdict(k) for k in kernels])
