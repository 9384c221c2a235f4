"""What Lab 05's task asks (:mod:`.task`): a scenario, the options, an option's zone and its time in the cost model,
and the four scenarios of a grade. Shared by the task (which a learner reads) and the grader's measurements
(:mod:`.reference`, withheld from learners in a workshop); it holds no measurement of an option's error."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from rocmlab.comm import costmodel as CM
from rocmlab.comm import torch_codec as C

KINDS = ("normal", "heavy-tailed", "outliers")
SYSTEMS = ("MI300X", "H200")
#: message size ranges (bytes) of the four scenarios, smallest first
SIZE_RANGES = ((16 << 10, 512 << 10), (1 << 20, 16 << 20), (32 << 20, 256 << 20), (256 << 20, 1 << 30))
BUDGET_RANGE = (0.004, 0.3)
#: An option's zone, per kind of data: this far below its smallest and above its largest error on the grader's
#: samples. From 2000 samples per kind: normal data stays within 0.96x-1.04x of its median (8 % covers a learner's
#: sample however the grader's four fall); heavy-tailed and outliers data move 0.54x-1.69x (50 %: in 120 000
#: simulated scenarios no right choice fell outside; 30 % let one through).
MARGINS = {"normal": 0.08, "heavy-tailed": 0.50, "outliers": 0.50}
FAST_TOL = 0.01      # "fastest": within 1 % of the best time
SAMPLE = 1 << 15     # values per error measurement
SAMPLES = 4          # independent fresh samples per kind on which the grader measures every option's error


@dataclass(frozen=True)
class Scenario:
    """What ``choose`` receives. ``message_bytes``: a float16 all-reduce message; ``budget``: the largest
    relative L2 error of one encode/decode you may accept; ``kind``: the data (as
    ``torch_codec.activations(kind, ...)`` draws it); ``system``, ``world``: the link (``costmodel.latency``)."""
    message_bytes: int
    budget: float
    kind: str
    system: str
    world: int

    def label(self) -> str:
        return (f"{_size(self.message_bytes)}, {self.kind}, budget {self.budget:.3g}, "
                f"{self.world} x {self.system}")


def options() -> list[tuple[str, int]]:
    """Every (codec, block size) pair: fp once (it has no blocks), each quantized codec at each block."""
    return [("fp", 32)] + [(c, b) for c in C.QUANTIZED for b in C.BLOCK_SIZES]


def _size(n: int) -> str:
    return f"{n / 2**20:.3g} MB" if n >= 2**20 else f"{n / 2**10:.3g} KB"


def zone(errs: tuple[float, ...], kind: str) -> tuple[float, float]:
    """The errors a learner's own sample of ``kind`` can show for one option: :data:`MARGINS` beyond the smallest
    and the largest of the grader's samples."""
    m = MARGINS[kind]
    return min(errs) * (1 - m), max(errs) * (1 + m)


def time_us(choice: tuple[str, int], s: Scenario) -> float:
    name, block = choice
    return CM.latency(C.get_codec(name, block), s.message_bytes, s.system, s.world)["total_s"] * 1e6


@dataclass(frozen=True)
class Judged:
    """How the grade sees one answer: ``verdict`` is "over" (over the budget on any sample), "slower" (an option
    within the budget on any sample is faster by more than :data:`FAST_TOL`) or "right"; ``near``: the answer's zone
    straddles the budget; ``fastest``, ``fastest_us``: the fastest option within the budget on any sample."""
    verdict: str
    near: bool
    mine_us: float
    fastest: tuple[str, int]
    fastest_us: float


def _log_uniform(g: torch.Generator, lo: float, hi: float) -> float:
    return math.exp(math.log(lo) + float(torch.rand(1, generator=g)) * (math.log(hi) - math.log(lo)))


def _readable(b: float, way: str) -> float:
    """``b`` to 4 significant digits (what the learner reads), rounded toward its role's side: "down" for the tight
    budget, "up" for the loose one, "near" otherwise."""
    unit = 10.0 ** (math.floor(math.log10(b)) - 3)
    return round({"down": math.floor, "up": math.ceil, "near": round}[way](b / unit) * unit, 12)


def draw(seed: int, q4_zones=None) -> list[Scenario]:
    """The four scenarios of a grade with ``seed``. ``q4_zones(kinds)``: per kind drawn, the Q4 options' zones on the
    grader's samples, which give two budgets their roles (:func:`.reference.draw`); without it every budget is drawn freely
    from :data:`BUDGET_RANGE` (the same messages, kinds and links)."""
    g = torch.Generator().manual_seed(seed)
    kinds = [KINDS[int(torch.randint(0, len(KINDS), (1,), generator=g))] for _ in SIZE_RANGES]
    zones = q4_zones(kinds) if q4_zones is not None else None
    tight = int(torch.randint(0, len(SIZE_RANGES) - 1, (1,), generator=g))
    out = []
    for i, (lo, hi) in enumerate(SIZE_RANGES):
        nbytes = int(_log_uniform(g, lo, hi)) // C.QR_ATOM_BYTES * C.QR_ATOM_BYTES
        if zones is None:
            b = _log_uniform(g, *BUDGET_RANGE)
        elif i == tight:
            b = _log_uniform(g, BUDGET_RANGE[0], min(z[0] for z in zones[kinds[i]]))
        elif i == len(SIZE_RANGES) - 1:
            top = max(z[1] for z in zones[kinds[i]])
            b = _log_uniform(g, top, max(BUDGET_RANGE[1], top * 1.5))
        else:
            b = _log_uniform(g, *BUDGET_RANGE)
        system = SYSTEMS[int(torch.randint(0, 2, (1,), generator=g))]
        world = int((2, 4, 8)[int(torch.randint(0, 3, (1,), generator=g))])
        if i == len(SIZE_RANGES) - 1:
            system = "MI300X"      # a quantized codec wins there at every world size (the loose role)
        way = "near" if zones is None else "down" if i == tight else "up" if i == len(SIZE_RANGES) - 1 else "near"
        out.append(Scenario(nbytes, _readable(b, way), kinds[i], system, world))
    return out
