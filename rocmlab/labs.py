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
    Lab("01-hip-programming-model.ipynb", "The HIP programming model", "§2.1, §2.2",
        "everything: HIP cells build with hipcc and run on the GPU",
        "HIP cells run through the HIP->CUDA path with nvcc (warps of 32); gfx942 facts from offline builds",
        "HIP compiles and links offline for gfx942; registers, LDS, occupancy and ISA shown; GPU programs not run"),
)


def table_rows() -> list[list[str]]:
    return [[lab.file, lab.title, lab.article, lab.rocm, lab.cuda, lab.cpu] for lab in LABS]
