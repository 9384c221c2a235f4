"""Grid/block indexing: which thread (block, thread, wavefront, lane) handles which element.

``thread_map`` is the formula a 1-D kernel uses, ``i = blockIdx.x * blockDim.x + threadIdx.x``,
evaluated in Python for a given launch; the widget draws it. No sliders here on purpose: the
lab's only slider widget is the occupancy explorer.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

PALETTE = ("#dbeafe", "#dcfce7", "#fef9c3", "#fce7f3", "#ede9fe", "#ffedd5", "#e0f2fe", "#f1f5f9")


@dataclass(frozen=True)
class Launch:
    n: int
    block: int
    grid: int
    wave: int

    @property
    def threads(self) -> int:
        return self.grid * self.block

    @property
    def idle_threads(self) -> int:
        """Threads past the end of the data (the ``if (i < n)`` guard keeps them out)."""
        return max(0, self.threads - self.n)

    @property
    def uncovered(self) -> int:
        """Elements no thread touches (a grid rounded down instead of up)."""
        return max(0, self.n - self.threads)

    @property
    def waves_per_block(self) -> int:
        return -(-self.block // self.wave)


def launch(n: int, block: int, wave: int = 64, round_up: bool = True) -> Launch:
    if n < 1 or block < 1 or block > 1024:
        raise ValueError("n must be >= 1 and the block size 1..1024 threads")
    if wave not in (32, 64):
        raise ValueError("wave must be 64 (MI300X wavefront) or 32 (NVIDIA warp)")
    grid = -(-n // block) if round_up else n // block
    return Launch(n, block, grid, wave)


def thread_map(ln: Launch) -> list[dict]:
    """One row per thread: its block, thread, global index, wavefront, lane and element (or None)."""
    rows = []
    for b in range(ln.grid):
        for t in range(ln.block):
            i = b * ln.block + t
            rows.append({"block": b, "thread": t, "index": i, "wave": t // ln.wave, "lane": t % ln.wave,
                         "element": i if i < ln.n else None})
    return rows


def map_html(ln: Launch, max_cells: int = 512) -> str:
    rows = thread_map(ln)
    cells = []
    for r in rows[:max_cells]:
        colour = PALETTE[r["block"] % len(PALETTE)]
        border = "2px solid #333" if r["lane"] == 0 else "1px solid #ccc"
        label = "idle" if r["element"] is None else f"x[{r['element']}]"
        title = f"block {r['block']}, thread {r['thread']}, wave {r['wave']}, lane {r['lane']}"
        style = f"background:{colour if r['element'] is not None else '#f3f4f6'};border-left:{border}"
        cells.append(f"<div title='{title}' style='{style};padding:1px 3px;font-size:10px;min-width:44px'>"
                     f"b{r['block']}.t{r['thread']}<br>{label}</div>")
    for e in range(ln.threads, min(ln.n, ln.threads + max(0, max_cells - len(rows)))):
        cells.append(f"<div style='background:#fecaca;padding:1px 3px;font-size:10px;min-width:44px'>"
                     f"no thread<br>x[{e}]</div>")
    more = f"<div>… {len(rows) - max_cells} more threads not drawn</div>" if len(rows) > max_cells else ""
    head = (f"<b>{ln.grid} blocks × {ln.block} threads = {ln.threads} threads</b> for {ln.n} elements; "
            f"{ln.waves_per_block} {'wavefronts' if ln.wave == 64 else 'warps'} of {ln.wave} per block; "
            f"{ln.idle_threads} idle threads; "
            + (f"<span style='color:#cf222e'><b>{ln.uncovered} elements with no thread</b></span>"
               if ln.uncovered else "every element covered")
            + ". A thick left border marks lane 0 of a wavefront.")
    return (f"<div>{html.escape('i = blockIdx.x * blockDim.x + threadIdx.x')}</div><div>{head}</div>"
            f"<div style='display:flex;flex-wrap:wrap;gap:1px;margin-top:4px'>{''.join(cells)}</div>{more}")


def indexing_widget(n: int = 200, block: int = 64, wave: int = 64):
    import ipywidgets as w

    n_box = w.BoundedIntText(value=n, min=1, max=4096, description="elements n")
    b_box = w.Dropdown(options=[32, 64, 128, 256], value=block, description="blockDim.x")
    wv = w.Dropdown(options=[("64 (MI300X wavefront)", 64), ("32 (NVIDIA warp)", 32)], value=wave,
                    description="wave size")
    rnd = w.Dropdown(options=[("(n + block - 1) / block", True), ("n / block (a bug)", False)], value=True,
                     description="gridDim.x")
    out = w.HTML()

    def redraw(_=None):
        out.value = map_html(launch(n_box.value, b_box.value, wv.value, rnd.value))

    for c in (n_box, b_box, wv, rnd):
        c.observe(redraw, names="value")
    redraw()
    return w.VBox([w.HBox([n_box, b_box]), w.HBox([wv, rnd]), out])
