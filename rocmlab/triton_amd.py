"""Compile Triton kernels for AMD targets without a GPU, and read the AMDGCN they become.

Triton's pip wheel carries its AMD backend (and the linker it needs), so ``triton.compile`` can build a
kernel for ``GPUTarget("hip", "gfx942", 64)`` (MI300X) or ``gfx950`` (MI355X) on any machine.
:func:`compile_amd` does that with the AMD-specific options and returns an :class:`AmdReport`:

- ``num_warps``: on AMD a Triton "warp" is a **wavefront of 64** lanes: 4 warps = 256 threads;
- ``waves_per_eu``: the occupancy the compiler is asked to reach (waves per SIMD); it caps VGPRs;
- ``matrix_instr_nonkdim``: 16 or 32, which MFMA shape ``tl.dot`` uses (``v_mfma_*_16x16x*`` or ``_32x32x*``);
- ``kpack``: how many K elements one LDS read packs for the MFMA operands (gfx942; deprecated on gfx950);
- vector load widths: ``global_load_dwordx4`` is a 16-byte load per lane (``buffer_load_*`` the same,
  through a buffer descriptor).

Works in a process running Triton's CPU interpreter too (the kernel is wrapped as a compilable
JITFunction directly). Never imports IPython or plotting libraries.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import sys
import tempfile
import textwrap
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocmlab import sandbox, settings, targets
from rocmlab.hip import occupancy as occ

#: The AMD options compile_amd passes on, with what they mean.
OPTIONS = {
    "num_warps": "wavefronts per workgroup (64 lanes each on CDNA)",
    "waves_per_eu": "occupancy target in waves per SIMD (0: the compiler chooses); limits VGPRs per wave",
    "num_stages": "software-pipelining depth of tl.range / K loops",
    "matrix_instr_nonkdim": "MFMA tile for tl.dot: 16 (16x16xK) or 32 (32x32xK); 0 lets Triton choose",
    "kpack": "K elements packed per LDS read of a dot operand (1 or 2; gfx942 only, deprecated on gfx950)",
}


class TritonAmdError(RuntimeError):
    """The kernel could not be compiled for the AMD target: the message says why and what to change."""


@dataclass
class AmdReport:
    target: str
    options: dict
    wavefront_size: int | None
    vgprs: int | None
    agprs: int | None
    sgprs: int | None
    lds_bytes: int | None
    scratch_bytes: int | None
    instructions: Counter = field(default_factory=Counter)
    asm: str = ""
    vgpr_spills: int | None = None      # registers spilled to scratch memory (slow): 0 is what you want
    sgpr_spills: int | None = None
    total_vgprs: int | None = None      # the unified register file's use: arch VGPRs (aligned) + AGPRs
    compiler_occupancy: int | None = None   # the compiler's own "; Occupancy:" (waves per SIMD)

    @property
    def threads_per_workgroup(self) -> int | None:
        w = self.wavefront_size
        return w * self.options.get("num_warps", 4) if w else None

    def count(self, pattern: str) -> int:
        """How many instructions whose mnemonic matches ``pattern`` (a regular expression)."""
        rx = re.compile(pattern)
        return sum(n for name, n in self.instructions.items() if rx.fullmatch(name))

    def loads(self) -> dict[str, int]:
        """Global/buffer load instructions by bytes per lane ("16B"; "16B to LDS" for gfx950's
        global_load_lds_*, which write straight into LDS)."""
        return _by_width(self.instructions, r"(global|buffer)_load_(lds_)?(dword\w*|b\d+|ubyte|ushort|short_d16\w*)")

    def stores(self) -> dict[str, int]:
        return _by_width(self.instructions, r"(global|buffer)_store_()(dword\w*|b\d+|byte|short)")

    def mfma(self) -> dict[str, int]:
        return {k: v for k, v in sorted(self.instructions.items()) if k.startswith("v_mfma")}

    def lds_ops(self) -> dict[str, int]:
        return {k: v for k, v in sorted(self.instructions.items()) if k.startswith(("ds_read", "ds_write", "ds_load", "ds_store"))}

    @property
    def lds_limit(self) -> int | None:
        """The LDS one workgroup may use on this target: 64 KiB on gfx942 (MI300X), 160 KiB on gfx950 (MI355X)."""
        t = targets.find(self.target)
        return t.cu.lds_per_cu if t is not None and t.cu is not None else None

    @property
    def fits_lds(self) -> bool | None:
        """False when the kernel asks for more LDS than a CU has: it compiles, but cannot launch."""
        if self.lds_limit is None or self.lds_bytes is None:
            return None
        return self.lds_bytes <= self.lds_limit

    def occupancy(self):
        """Waves per SIMD from the registers and LDS, by rocmlab's calculator (None where it lacks the target)."""

        if self.target not in occ.known() or self.vgprs is None:
            return None
        return occ.occupancy(vgprs=self.vgprs, agprs=self.agprs or 0, sgprs=self.sgprs or 16,
                             lds_bytes=self.lds_bytes or 0, workgroup_size=self.threads_per_workgroup or 256,
                             target=self.target)

    def row(self) -> dict:
        o = self.occupancy()
        return {"target": self.target, **{k: v for k, v in self.options.items()},
                "wave": self.wavefront_size, "threads/WG": self.threads_per_workgroup, "VGPRs": self.vgprs,
                "AGPRs": self.agprs, "spills": self.vgpr_spills, "LDS B": self.lds_bytes,
                "waves/SIMD": getattr(o, "waves_per_simd", None), "compiler's waves/SIMD": self.compiler_occupancy,
                "loads": ", ".join(f"{n}x {w}" for w, n in self.loads().items()) or "-",
                "MFMA": ", ".join(f"{n}x {k}" for k, n in self.mfma().items()) or "-"}


_WIDTH = {"dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16, "ubyte": 1, "byte": 1, "ushort": 2,
          "short": 2, "b32": 4, "b64": 8, "b96": 12, "b128": 16}


def _by_width(instructions: Counter, pattern: str) -> dict[str, int]:
    rx = re.compile(pattern)
    out: Counter = Counter()
    for name, n in instructions.items():
        m = rx.fullmatch(name)
        if m:
            w = _WIDTH.get(m.group(3).split("_")[0])
            label = (f"{w}B" if w else m.group(3)) + (" to LDS" if m.group(2) else "")
            out[label] += n
    return dict(sorted(out.items()))


def parse_amdgcn(asm: str) -> dict:
    """Registers, LDS and an instruction histogram from Triton's ``amdgcn`` text.

    ``vgprs`` are the *architectural* VGPRs (the listing's ``; NumVgprs:``), ``agprs`` the AGPRs, and
    ``total_vgprs`` their sum in the unified register file: the code object's ``.vgpr_count`` is that total on
    gfx90a and later, so it is never read as the VGPR count. ``compiler_occupancy`` is the listing's own
    ``; Occupancy:`` (waves per SIMD), shown beside the calculator's."""
    def meta(key):
        m = re.search(rf"\.{key}:\s+(\d+)", asm)
        return int(m.group(1)) if m else None

    def listing(key):
        m = re.search(rf"^\s*;\s*{key}:\s+(\d+)\s*$", asm, re.M)
        return int(m.group(1)) if m else None

    ins: Counter = Counter()
    for line in asm.splitlines():
        s = line.strip()
        if not s or s.startswith((";", ".", "//")) or s.endswith(":"):
            continue
        name = s.split()[0]
        if re.fullmatch(r"[sv]_\w+|global_\w+|buffer_\w+|ds_\w+|flat_\w+|scratch_\w+", name):
            ins[name] += 1
    agprs = listing("NumAgprs")
    agprs = meta("agpr_count") if agprs is None else agprs
    total = listing("TotalNumVgprs")
    total = meta("vgpr_count") if total is None else total
    vgprs = listing("NumVgprs")
    if vgprs is None and total is not None:      # no listing: the total less the AGPRs (an upper bound)
        vgprs = total - (agprs or 0)
    return dict(wavefront_size=meta("wavefront_size"), vgprs=vgprs, agprs=agprs, total_vgprs=total,
                compiler_occupancy=listing("Occupancy"), sgprs=meta("sgpr_count"), lds_bytes=meta("group_segment_fixed_size"),
                scratch_bytes=meta("private_segment_fixed_size"), vgpr_spills=meta("vgpr_spill_count"),
                sgpr_spills=meta("sgpr_spill_count"), instructions=ins)


def interpreting() -> bool:
    """True in a process running Triton's CPU interpreter (TRITON_INTERPRET=1), which patches triton.language
    for the whole process: compilation then happens in a child process without it."""

    return os.environ.get("TRITON_INTERPRET", "") == "1"


def _source_of(fn) -> tuple[str, str]:
    base = getattr(fn, "fn", fn)
    try:
        src = textwrap.dedent(inspect.getsource(base))
    except (OSError, TypeError) as exc:
        raise TritonAmdError(f"cannot read the source of {getattr(base, '__name__', fn)!r}: define the kernel in a "
                             "file or a notebook cell (Triton needs its source)") from exc
    return src, base.__name__


def compile_amd(fn, signature: dict, constexprs: dict | None = None, target: str | None = None, *,
                num_warps: int = 4, waves_per_eu: int = 0, num_stages: int = 2, matrix_instr_nonkdim: int = 0,
                kpack: int = 1, divisible: tuple[str, ...] = ()) -> AmdReport:
    """Compile ``fn`` for an AMD ``target`` (default: ``settings.DEFAULT_TARGET``, MI300X) and read the AMDGCN.

    ``signature``: argument name -> Triton type (``"*fp32"``, ``"i32"``, ...) for the runtime arguments;
    ``constexprs``: name -> value for the ``tl.constexpr`` ones; ``divisible``: pointer/int arguments to
    mark 16-divisible (what Triton's launcher infers from aligned tensors and sizes: it enables wide,
    unmasked-looking vector loads). The kernel must not call other ``@triton.jit`` functions."""
    opts = dict(num_warps=num_warps, waves_per_eu=waves_per_eu, num_stages=num_stages,
                matrix_instr_nonkdim=matrix_instr_nonkdim, kpack=kpack)
    return compile_variants(fn, signature, constexprs, target, [opts], divisible=divisible)[0]


def compile_variants(fn, signature: dict, constexprs: dict | None = None, target: str | None = None,
                     variants=({},), divisible: tuple[str, ...] = ()) -> list[AmdReport]:
    """:func:`compile_amd` once per dict of options in ``variants`` (one child process for all of them
    when this process runs Triton's interpreter)."""
    target = target or settings.DEFAULT_TARGET
    record = targets.find(target)
    if record is None or not record.is_amd:
        raise TritonAmdError(f"target {target!r} is not an AMD target rocmlab knows: use one of "
                             f"{', '.join(settings.AMD_TARGETS)}")
    base = dict(num_warps=4, waves_per_eu=0, num_stages=2, matrix_instr_nonkdim=0, kpack=1)
    unknown = {k for v in variants for k in v} - set(base)
    if unknown:
        raise TritonAmdError(f"unknown option(s) {sorted(unknown)}: use {', '.join(base)}")
    variants = [dict(base, **v) for v in variants]
    src, name = _source_of(fn)
    job = dict(source=src, name=name, signature=signature, constexprs=dict(constexprs or {}), target=target,
               wave=record.wave, variants=variants, divisible=list(divisible))
    if not interpreting():
        return _compile_job(job)
    return _compile_in_child(job)


def _compile_in_child(job: dict) -> list[AmdReport]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = sandbox.run_limited([sys.executable, "-m", "rocmlab.triton_amd"], stdin_data=json.dumps(job).encode(),
                               timeout_s=settings.COMPILE_TIME_LIMIT_S, memory_bytes=settings.COMPILE_MEMORY_BYTES,
                               output_bytes=64 << 20, env=env)
    lines = (done.stdout or "").strip().splitlines()
    if not done.ok or not lines:
        raise TritonAmdError(f"compiling {job['name']} for {job['target']} failed in its child process: "
                             f"{done.explain()}\n{(done.stderr or '')[-1500:]}")
    out = json.loads(lines[-1])
    if "error" in out:
        raise TritonAmdError(out["error"])
    return [AmdReport(**dict(r, instructions=Counter(r["instructions"]))) for r in out["reports"]]


def _compile_job(job: dict) -> list[AmdReport]:
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from triton.runtime.jit import JITFunction
    except ImportError as exc:   # pragma: no cover - Triton is a course dependency
        raise TritonAmdError("Triton is not installed: pip install triton") from exc
    with tempfile.TemporaryDirectory() as tmp:
        # the kernel's source as a module of its own: Triton reads a kernel's source from its file
        path = Path(tmp) / "rocmlab_triton_kernel.py"
        path.write_text("import triton\nimport triton.language as tl\n\n" + job["source"])
        spec = importlib.util.spec_from_file_location("rocmlab_triton_kernel", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        obj = getattr(mod, job["name"])
        jf = obj if isinstance(obj, JITFunction) else JITFunction(getattr(obj, "fn", obj))
        names = jf.arg_names
        signature, constexprs = job["signature"], job["constexprs"]
        missing = [n for n in names if n not in signature and n not in constexprs]
        if missing:
            raise TritonAmdError(f"no type or value for argument(s) {missing}: give each runtime argument a type in "
                                 "signature (e.g. '*fp32', 'i32') and each tl.constexpr a value in constexprs")
        sig = {n: ("constexpr" if n in constexprs else signature[n]) for n in names}
        attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in job["divisible"]}
        reports = []
        for opts in job["variants"]:
            try:
                ck = triton.compile(ASTSource(fn=jf, signature=sig, constexprs=constexprs, attrs=attrs),
                                    target=GPUTarget("hip", job["target"], job["wave"]), options=opts)
            except Exception as exc:   # noqa: BLE001 - Triton raises many kinds; report them as one
                msg = str(exc).strip().splitlines()
                raise TritonAmdError(f"Triton could not compile {job['name']} for {job['target']} with {opts}: "
                                     f"{type(exc).__name__}: {msg[-1] if msg else ''}") from exc
            asm = ck.asm["amdgcn"]
            facts = parse_amdgcn(asm)
            # Triton's LDS is dynamic shared memory: its size is in the kernel's metadata, not the code object's
            facts["lds_bytes"] = max(facts["lds_bytes"] or 0, int(getattr(ck.metadata, "shared", 0) or 0))
            reports.append(AmdReport(target=job["target"], options=opts, asm=asm, **facts))
    return reports


def _main() -> None:   # the child process of _compile_in_child
    job = json.loads(sys.stdin.read())
    try:
        reports = _compile_job(job)
        print(json.dumps({"reports": [dict(asdict(r), instructions=dict(r.instructions)) for r in reports]}))
    except TritonAmdError as exc:
        print(json.dumps({"error": str(exc)}))


if __name__ == "__main__":
    _main()
