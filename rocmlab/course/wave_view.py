"""One wave instruction's memory accesses, lane by lane, as the wave64 simulator traced them: which lane touched
which address, and for LDS which of gfx942's 32 banks (4 bytes each), for global memory which 128-byte line. The
picture GPU-Puzzles and Triton-Viz give for their models, for a HIP kernel with MI300X's wavefront of 64.
Traced by the simulator (wavefront 0 of block (0,0,0)), never measured hardware."""

from __future__ import annotations

from collections import Counter

from rocmlab.html_table import html_table

BANKS, BANK_BYTES, LINE_BYTES = 32, 4, 128


def trace_program(source: str, args=(), *, flags=(), timeout_s: float = 60.0) -> list[dict]:
    """Build ``source`` for the simulator, run it with tracing on, and return its traced wave instructions
    (:func:`rocmlab.hip.simulate.trace`)."""
    from rocmlab.hip import build, simulate
    from rocmlab.profile.counters import CounterError

    res = build.compile(source, toolchain=simulate.KIND, flags=flags)
    if not res.ok:
        raise CounterError("the program does not build for the simulator: " + "; ".join(
            str(d) for d in (res.errors or res.diagnostics)[:3]))
    done = build.run(res, args, timeout_s=timeout_s, env={"HIPSIM_COUNTERS": "1", "HIPSIM_TRACE": "1"})
    return simulate.trace(done.stderr)


def instruction(traced: list[dict], line: int, nth: int = 0) -> dict:
    """The ``nth`` traced wave instruction at source ``line``."""
    at = [t for t in traced if t["line"] == line]
    if len(at) <= nth:
        lines = sorted({t["line"] for t in traced})
        raise KeyError(f"no wave instruction {nth} at line {line} was traced (traced lines: {lines})")
    return at[nth]


def rows(inst: dict) -> list[list]:
    """lane | address | bank (LDS) or 128-byte line (global) | how many lanes of its half-wave share that bank/line
    at other addresses (the conflict degree)."""
    lds = inst["space"] == "lds"
    unit = (lambda a: (a // BANK_BYTES) % BANKS) if lds else (lambda a: a // LINE_BYTES)
    out = []
    for half in (0, 1):
        lanes = {ln: a for ln, a in inst["lanes"].items() if ln // 32 == half}
        words = Counter(unit(a) for a in {a // BANK_BYTES * BANK_BYTES for a in lanes.values()})
        for ln, a in sorted(lanes.items()):
            out.append([ln, a, unit(a), words[unit(a)]])
    return out


def summary(inst: dict) -> str:
    lds = inst["space"] == "lds"
    r = rows(inst)
    if lds:
        worst = max((x[3] for x in r), default=0)
        return (f"line {inst['line']}: LDS {inst['rw']} of {inst['size']} bytes by {len(r)} lanes: the busiest bank "
                f"serves {worst} different words per half-wave ({worst - 1} extra cycles each)")
    return (f"line {inst['line']}: global {inst['rw']} of {inst['size']} bytes by {len(r)} lanes: "
            f"{len({x[2] for x in r})} different 128-byte lines")


def html(inst: dict) -> str:
    """The table for a notebook (``display(HTML(...))``), headed by its summary."""
    lds = inst["space"] == "lds"
    head = ["lane", "LDS byte offset" if lds else "address", "bank" if lds else "128 B line",
            "words on this bank (half-wave)" if lds else "lanes' words on this line"]
    return (f"<p>{summary(inst)} [traced by the wave64 simulator]</p>" + html_table(head, rows(inst)))
