"""GPU faults: provoke a real one on the GPU at hand, recognise what the runtime printed, and say what to do.

On ROCm an out-of-bounds access that leaves the process's GPU mappings ends the *whole process*: the
HSA runtime prints ``Memory access fault by GPU node-N (Agent handle: ...) on address 0x...``
with a reason (``Page not present or supervisor privilege``, ``Write access to a read-only page``)
and aborts (SIGABRT, "Aborted (core dumped)"): no error code comes back to the program. On NVIDIA the
same bug is ``an illegal memory access was encountered`` (``cudaErrorIllegalAddress``), returned by the
next synchronising call, after which the context is unusable. Either way the fault is reported at a
later API call than the kernel that caused it, unless launches are serialised.

:func:`provoke` builds :data:`OOB_SOURCE` (a kernel writing far past its buffer) with
:func:`rocmlab.hip.build.compile` and runs it through :func:`rocmlab.hip.build.run` (the sandbox:
its own process, limits), so the caller survives; :func:`classify` reads the output. Without a GPU no
program is linked (nothing could run it), so the same source runs on rocmlab's CPU simulator, which stops
the kernel at the bad access and names the thread, block and kernel (labelled as the simulator's).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from rocmlab import settings
from rocmlab.hip import build
from rocmlab.machine.detect import current

#: A kernel that writes 1 GiB past the end of a 256-int buffer: far outside any mapping, so it faults
#: on every GPU (a few elements past the end would usually land in the same page and go unnoticed:
#: that is what a sanitizer is for).
OOB_SOURCE = r"""
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void write_past_the_end(int* p, size_t n, size_t offset) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i + offset] = (int)i;     // the bug: offset should be 0
}

int main() {
    const size_t n = 256;
    int* d = nullptr;
    if (hipMalloc(&d, n * sizeof(int)) != hipSuccess) { printf("hipMalloc failed\n"); return 2; }
    printf("launching a kernel that writes 1 GiB past its 1 KiB buffer\n");
    fflush(stdout);
    hipLaunchKernelGGL(write_past_the_end, dim3(1), dim3(256), 0, 0, d, n, (size_t)1 << 28);
    hipError_t launch = hipGetLastError();
    hipError_t sync = hipDeviceSynchronize();
    printf("launch: %s; synchronize: %s\n", hipGetErrorString(launch), hipGetErrorString(sync));
    return sync == hipSuccess ? 0 : 1;
}
"""


@dataclass(frozen=True)
class Pattern:
    regex: str
    runtime: str
    meaning: str


#: What the runtimes print for a bad memory access, and what it means.
PATTERNS: tuple[Pattern, ...] = (
    Pattern(r"Memory access fault by GPU node-(\d+)", "ROCm (HSA runtime)",
            "a kernel touched an address the GPU has no mapping for; the runtime aborts the process. "
            "node-N is the KFD topology node of the GPU (rocm-smi / amd-smi list it), the address is the "
            "one the kernel touched"),
    Pattern(r"HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION|HSA_STATUS_ERROR_EXCEPTION", "ROCm (HSA runtime)",
            "a queue error from a faulting kernel (often beside the memory access fault line)"),
    Pattern(r"hipErrorIllegalAddress|an illegal memory access was encountered|cudaErrorIllegalAddress",
            "CUDA / HIP", "a kernel read or wrote outside its allocations; reported by the next synchronising "
            "call, after which the context is unusable"),
    Pattern(r"\[cpu: wave64 simulator\] error: .*(?:out of bounds|no hipMalloc buffer|past the end)",
            "rocmlab's CPU simulator (wavefronts of 64)",
            "the simulator checked every access of the kernel and stopped it at the first one outside its "
            "buffers, naming the thread, block and kernel; on an MI300X the same bug is a 'Memory access fault "
            "by GPU node-N' that aborts the whole process"),
)

#: The knobs for finding the kernel that faulted, and what each does.
DEBUG_ENV: dict[str, str] = {
    "AMD_LOG_LEVEL": "HIP runtime log to stderr: 1 errors, 2 warnings, 3 info, 4 debug (every API call and "
                     "kernel launch, with its arguments), 5 extra debug (HIP docs, 'Logging HIP activity')",
    "AMD_SERIALIZE_KERNEL": "1: wait for the GPU before each launch, 2: after each launch, 3: both; a fault is "
                            "then reported at the launch that caused it",
    "AMD_SERIALIZE_COPY": "the same for copies (1, 2 or 3)",
    "HIP_LAUNCH_BLOCKING": "1: every kernel launch is synchronous (the HIP spelling of CUDA_LAUNCH_BLOCKING=1)",
    "CUDA_LAUNCH_BLOCKING": "NVIDIA: 1 makes launches synchronous, so the error names the right kernel",
}

#: The debuggers and checkers, per platform.
TOOLS: dict[str, str] = {
    "rocgdb": "ROCm's gdb: `rocgdb --args ./prog`, `run`; it stops at the faulting wave and shows the source "
              "line, `info threads` lists waves, `x/4i $pc` the ISA (build with -g; -O0 for readable variables)",
    "AddressSanitizer (ROCm)": "hipcc -fsanitize=address -shared-libsan -g with xnack+ (e.g. "
                               "--offload-arch=gfx942:xnack+, HSA_XNACK=1): catches small overruns that do not "
                               "fault, like compute-sanitizer's memcheck",
    "compute-sanitizer (NVIDIA)": "compute-sanitizer --tool memcheck ./prog names the kernel, thread and address of "
                                  "every out-of-bounds access, even one that does not fault; also racecheck, "
                                  "initcheck, synccheck. No ROCm tool does all four",
}


@dataclass
class Diagnosis:
    recognised: bool
    runtime: str = ""
    meaning: str = ""
    line: str = ""                 # the line of output that matched
    gpu_node: int | None = None    # ROCm: the node-N of the fault line

    def summary(self) -> str:
        if not self.recognised:
            return "no GPU memory fault in this output"
        node = f" (GPU node {self.gpu_node})" if self.gpu_node is not None else ""
        return f"{self.runtime}{node}: {self.meaning}\n  matched: {self.line.strip()}"


def classify(output: str) -> Diagnosis:
    """Find the first known fault message in a program's stdout + stderr."""
    for p in PATTERNS:
        for line in output.splitlines():
            m = re.search(p.regex, line)
            if m:
                node = int(m.group(1)) if m.groups() and m.group(1) and m.group(1).isdigit() else None
                return Diagnosis(True, p.runtime, p.meaning, line, node)
    return Diagnosis(False)


@dataclass
class FaultRun:
    backend: str
    ran: bool
    why_not: str = ""              # when it did not run: the reason
    returncode: int | None = None
    signal: str | None = None
    output: str = ""
    diagnosis: Diagnosis = field(default_factory=lambda: Diagnosis(False))
    env: dict = field(default_factory=dict)

    @property
    def faulted(self) -> bool:
        return self.ran and (self.diagnosis.recognised or self.returncode not in (0, None))

    def summary(self) -> str:
        if not self.ran:
            return f"[{self.backend}] the faulting kernel was not run: {self.why_not}"
        how = f"signal {self.signal}" if self.signal else f"exit code {self.returncode}"
        return f"[{self.backend}] the program ended with {how}; {self.diagnosis.summary()}"


def provoke(plat=None, serialize: bool = True, log_level: int = 1, simulate: bool | None = None) -> FaultRun:
    """Build and run :data:`OOB_SOURCE` on the GPU at hand, isolated, and read what happened.

    ``serialize`` sets AMD_SERIALIZE_KERNEL=3 and HIP_LAUNCH_BLOCKING=1 (CUDA_LAUNCH_BLOCKING=1 on NVIDIA);
    ``log_level`` is AMD_LOG_LEVEL. ``simulate`` (default: where there is no GPU) runs the kernel on the
    CPU simulator; ``simulate=False`` on a CPU runs nothing, and the result says why."""

    plat = plat or current()
    env = {"AMD_LOG_LEVEL": str(log_level)}
    if serialize:
        env.update(AMD_SERIALIZE_KERNEL="3", HIP_LAUNCH_BLOCKING="1", CUDA_LAUNCH_BLOCKING="1")
    res = build.compile(OOB_SOURCE, lang="hip")
    if not res.ok:
        return FaultRun(plat.label, False, why_not="it did not compile here:\n" + res.summary(include_run=False),
                        env=env)
    simulate = (plat.backend == "cpu") if simulate is None else simulate
    if not simulate and plat.backend == "cpu":
        return FaultRun(plat.label, False, env=env, why_not=(
            f"this machine has no GPU, so no program was linked (the kernel was compiled for {res.target} "
            "offline) and nothing can fault; run it on the CPU simulator (simulate=True) or on a GPU"))
    try:
        done = build.run(res, timeout_s=settings.RUN_TIME_LIMIT_S, env=dict(os.environ, **env), simulate=simulate)
    except build.CannotRun as exc:
        return FaultRun(plat.label, False, why_not=str(exc), env=env)
    out = (done.stdout or "") + "\n" + (done.stderr or "")
    backend = f"{plat.label}; the kernel ran on the CPU simulator" if simulate else plat.label
    return FaultRun(backend, True, returncode=done.returncode, signal=done.signal, output=out,
                    diagnosis=classify(out), env=env)
