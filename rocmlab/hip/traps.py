"""The trap report: what hipify leaves in a port that is wrong or slow on an AMD GPU.

hipify renames API calls (``cudaMalloc`` -> ``hipMalloc``); it does not change meaning. An
MI300X runs wavefronts of 64 lanes where an NVIDIA GPU runs warps of 32, so code that is
correct on NVIDIA can be silently wrong after a perfect rename. Each :class:`Trap` names the
line, what is wrong, why, and the fix. :func:`find_traps` works on CUDA or HIP source text.

Rules are regular expressions over the source with comments and string literals blanked
out (line and column numbers are kept), so they are fast and explainable, not a compiler:
a trap is a place to look, and ``severity`` says how sure the rule is:

- ``wrong``: gives wrong results (or does not compile) on a 64-lane wavefront or on ROCm;
- ``slow``: correct but tuned for NVIDIA hardware;
- ``check``: often fine, sometimes not: read the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEVERITIES = ("wrong", "slow", "check")
# Rule kinds, so the grader can ask for "warp-size assumptions" or "CUDA left over".
KINDS = ("warp", "cuda-left", "library", "asm", "texture", "device-prop", "lds")


@dataclass(frozen=True)
class Trap:
    line: int          # 1-based
    column: int        # 1-based
    rule: str
    kind: str
    severity: str
    snippet: str       # the source line, stripped
    why: str
    fix: str

    def __str__(self) -> str:
        return f"line {self.line}:{self.column} [{self.severity}] {self.rule}: {self.why} Fix: {self.fix}"


def strip_comments_and_strings(src: str) -> str:
    """``src`` with comments and string/char literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in src[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + (c if j - i >= 2 else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str
    severity: str
    pattern: re.Pattern
    why: str
    fix: str


def _r(name, kind, severity, pattern, why, fix, flags=0) -> Rule:
    return Rule(name, kind, severity, re.compile(pattern, flags), why, fix)


FULL_MASK_32 = r"(?:0x[fF]{8}(?![0-9a-fA-F])[uU]?|~0[uU]?\b|0xFFFFFFFFu?)"

RULES: tuple[Rule, ...] = (
    _r("shfl-sync-32-bit-mask", "warp", "wrong",
       r"\b__(?:shfl|shfl_up|shfl_down|shfl_xor|ballot|any|all)_sync\s*\(\s*" + FULL_MASK_32,
       "a 32-bit lane mask covers lanes 0-31 only; an MI300X wavefront has 64 lanes, so lanes 32-63 "
       "are left out (and ROCm 6.2+ rejects masks that are not 64-bit).",
       "drop the mask (HIP's __shfl_down(v, offset) / __ballot(pred) act on the whole wavefront) "
       "or pass a 64-bit mask such as 0xffffffffffffffffull."),
    _r("full-mask-literal", "warp", "check", r"(?<![\w.])0x[fF]{8}(?![0-9a-fA-F])[uU]?",
       "0xffffffff is 'all lanes' only for 32-lane warps.",
       "for lane masks use a 64-bit type and ~0ull, or derive the mask from warpSize."),
    _r("lane-offset-16-or-32", "warp", "wrong",
       r"\bfor\s*\([^;]*=\s*(?:16|32)\s*;[^;]*;[^)]*(?:/=\s*2|>>=\s*1)",
       "the shuffle loop starts at a hard-coded 16 or 32, so on a 64-lane wavefront it reduces only "
       "half of the lanes.",
       "start at warpSize / 2: for (int offset = warpSize / 2; offset > 0; offset /= 2)."),
    _r("hard-coded-warp-size", "warp", "wrong",
       r"#\s*define\s+\w*(?:WARP|WAVE)\w*\s+32\b|\b(?:const(?:expr)?\s+)?(?:int|unsigned|size_t)\s+\w*(?:warp|wave)\w*\s*=\s*32\b",
       "a warp size of 32 is hard-coded; MI300X (CDNA) wavefronts have 64 lanes.",
       "use warpSize (device code) or hipDeviceProp_t::warpSize (host code); size shared arrays for "
       "the largest case (blockDim.x / 32 slots covers both)."),
    _r("lane-arithmetic-32", "warp", "wrong",
       r"(?:threadIdx\.x|blockDim\.x|\btid\b|\bidx\b|\blane\w*|\bi\b)\s*(?:%\s*32|&\s*31|/\s*32|>>\s*5)\b",
       "lane and warp indices computed with 32 (x % 32, x & 31, x / 32, x >> 5) are wrong on a "
       "64-lane wavefront.",
       "use warpSize: lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize."),
    _r("activemask-32", "warp", "wrong",
       r"\b(?:unsigned(?:\s+int)?|int|uint32_t)\s+\w+\s*=\s*__activemask\s*\(",
       "__activemask() returns a 64-bit mask on AMD; storing it in 32 bits drops lanes 32-63.",
       "store it in unsigned long long (uint64_t) and count it with __popcll."),
    _r("ballot-in-32-bits", "warp", "wrong",
       r"\b(?:unsigned(?:\s+int)?|int|uint32_t)\s+\w+\s*=\s*__ballot(?:_sync)?\s*\(",
       "__ballot returns a 64-bit mask on a 64-lane wavefront; storing it in 32 bits drops lanes 32-63.",
       "use unsigned long long mask = __ballot(pred); then __popcll(mask) and __ffsll(mask)."),
    _r("popc-on-mask", "warp", "check", r"\b__popc\s*\(\s*\w*(?:mask|ballot|vote)\w*",
       "__popc counts 32 bits; a wavefront mask has 64.", "use __popcll on the 64-bit mask."),
    _r("cg-tile-32", "warp", "wrong",
       r"\b(?:tiled_partition|thread_block_tile)\s*<\s*32\s*>",
       "a cooperative-groups tile of 32 is a full warp on NVIDIA but half a wavefront on MI300X: "
       "code that treats it as the whole warp (ballots, shared slots per warp) breaks.",
       "use tiles of warpSize where you mean a wavefront, or make the code correct for any tile size."),
    _r("syncwarp", "warp", "check", r"\b__syncwarp\s*\(",
       "__syncwarp with a 32-bit mask assumes warps of 32.",
       "on AMD a wavefront runs in lock-step; use __syncthreads() where threads of different "
       "wavefronts share data."),
    _r("inline-ptx", "asm", "wrong", r"\basm\s*(?:volatile\s*)?\(",
       "inline PTX assembly does not exist on AMD GPUs; hipify leaves it as is and the build fails.",
       "replace it with a HIP intrinsic (__shfl*, __ballot, atomics, __builtin_amdgcn_*) or plain C++."),
    _r("texture-reference", "texture", "wrong",
       r"\btexture\s*<|\b(?:cuda|hip)(?:Bind|Unbind)Texture\w*\s*\(|\btex[123]D(?:fetch)?\s*\(\s*\w+\s*,",
       "texture references were removed (CUDA 12, ROCm 6); old code using them does not port.",
       "use texture objects (hipTextureObject_t, hipCreateTextureObject) or plain global loads (__ldg)."),
    _r("cublas-left", "library", "wrong", r"\bcublas\w*",
       "a cuBLAS name is left: on ROCm the BLAS is hipBLAS (over rocBLAS).",
       "include <hipblas/hipblas.h>, rename cublasX to hipblasX (CUBLAS_OP_N -> HIPBLAS_OP_N), "
       "link -lhipblas. Both are column-major, like cuBLAS."),
    _r("rocblas-direct", "library", "check", r"\brocblas_\w+",
       "hipify (PyTorch's mode) maps some cuBLAS calls to rocBLAS directly; rocBLAS has a different "
       "handle and enum API.",
       "prefer hipBLAS (hipblasSgemm), which keeps cuBLAS's signatures."),
    _r("cudnn-to-miopen", "library", "wrong", r"\b(?:cudnn|miopen)\w*",
       "cuDNN calls become MIOpen calls, but MIOpen is not a rename: descriptors, algorithm search "
       "and workspace calls differ.",
       "port each cuDNN call to its MIOpen equivalent by hand (or call the operation from PyTorch)."),
    _r("cuda-api-left", "cuda-left", "wrong",
       r"\bcuda[A-Z]\w*|\bcu[A-Z][a-z]\w*\s*\(|\bCU(?:BLAS|DNN|FFT|RAND|SPARSE)_[A-Z_]+\b|#\s*include\s*[<\"]cuda\w*(?:\.h)?[>\"]",
       "a CUDA name is left that hipify did not rename (or the code was not hipified).",
       "use the HIP equivalent (cudaX -> hipX), or include <hip/hip_runtime.h>."),
    _r("compute-capability", "device-prop", "wrong",
       r"\.\s*(?:major|minor)\s*(?:>=|<=|==|!=|<|>|\*)",
       "compute-capability checks (prop.major >= 7) mean nothing on AMD: MI300X reports its own "
       "numbers (9.4 for gfx942).",
       "test the architecture name instead: strncmp(prop.gcnArchName, \"gfx942\", 6) == 0."),
    _r("device-prop-field", "device-prop", "check",
       r"\.\s*(?:sharedMemPerMultiprocessor|maxSharedMemoryPerMultiProcessor|regsPerMultiprocessor|"
       r"l2CacheSize|persistingL2CacheMaxSize|sharedMemPerBlockOptin|warpSize)\b",
       "this hipDeviceProp_t field has different values (or meaning) on AMD: 64 KiB LDS per CU, "
       "wavefront 64, L2 per XCD plus a 256 MB Infinity Cache on MI300X.",
       "read it at run time and do not carry NVIDIA's numbers over."),
    _r("shared-padding-32-banks", "lds", "check",
       r"__shared__[^;]*\[\s*\w+\s*\]\s*\[\s*\w+\s*\+\s*1\s*\]",
       "padding a shared tile by one word assumes 32 banks of 4 bytes. CDNA's LDS also has 32 banks, "
       "but a 64-lane wavefront is served in two halves and 8/16-byte accesses change the pattern.",
       "keep the padding for 4-byte accesses, and measure (rocprofv3's SQ_LDS_BANK_CONFLICT) "
       "when you change the access width."),
)


def find_traps(source: str, kinds: tuple[str, ...] | None = None) -> list[Trap]:
    """All traps in ``source`` (CUDA or HIP), sorted by line. ``kinds`` filters by rule kind."""
    clean = strip_comments_and_strings(source)
    raw_lines = source.splitlines()
    line_starts = [0]
    for m in re.finditer("\n", clean):
        line_starts.append(m.end())
    traps: list[Trap] = []
    seen: set[tuple[int, str]] = set()
    # 'full-mask-literal' is implied where the shuffle rule already fired on the same line.
    for rule in RULES:
        if kinds and rule.kind not in kinds:
            continue
        for m in rule.pattern.finditer(clean):
            pos = m.start()
            line = _bisect(line_starts, pos)
            key = (line, rule.name)
            if key in seen:
                continue
            if rule.name == "full-mask-literal" and (line, "shfl-sync-32-bit-mask") in seen:
                continue
            if rule.name == "cudnn-to-miopen" and m.group(0).startswith("miopen"):
                continue
            seen.add(key)
            col = pos - line_starts[line - 1] + 1
            snippet = raw_lines[line - 1].strip() if line - 1 < len(raw_lines) else ""
            traps.append(Trap(line, col, rule.name, rule.kind, rule.severity, snippet, rule.why, rule.fix))
    traps.sort(key=lambda t: (t.line, t.column))
    return traps


def _bisect(starts: list[int], pos: int) -> int:
    lo, hi = 0, len(starts)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if starts[mid] <= pos:
            lo = mid
        else:
            hi = mid
    return lo + 1


def trap_rows(traps: list[Trap]) -> list[list]:
    return [[t.line, t.severity, t.rule, t.snippet[:80], t.why, t.fix] for t in traps]


def format_traps(traps: list[Trap]) -> str:
    if not traps:
        return "no traps found"
    return "\n".join(str(t) for t in traps)
