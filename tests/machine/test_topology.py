"""rocmlab.machine.topology against the published figures (hardware.csv / sources.csv) and its own invariants;
the Lab 08 widget builds and reacts."""

from __future__ import annotations

import os
import random

import pytest

from rocmlab.machine import hardware
from rocmlab.machine import topology as T


def test_package_matches_the_published_figures():
    p = T.package("MI300X")
    assert (p.xcds, p.cus_per_xcd, p.cus, p.l2_per_xcd_mb, p.infinity_cache_mb, p.hbm_gb) == (8, 38, 304, 4, 256, 192)
    src = hardware.sources()
    assert "38 CUs" in src["amd-cdna3-whitepaper"]["note"] and "4 per XCD" in src["rocm-gpu-specs"]["note"]
    q = T.package("MI355X")
    assert (q.xcds, q.cus_per_xcd, q.lds_per_cu_kib) == (8, 32, 160)
    with pytest.raises(ValueError, match="not a multi-XCD AMD package"):
        T.package("H200")


def test_round_robin_dispatch_and_the_remap_is_a_bijection_giving_contiguous_ranges():
    assert [T.xcd_of(i) for i in range(10)] == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]
    for n in (8, 1000, random.Random(os.urandom(4)).randint(9, 5000)):
        tiles = [T.xcd_remap(p, n) for p in range(n)]
        assert sorted(tiles) == list(range(n)), n
        for x in range(8):   # each XCD's tiles are one contiguous range
            mine = sorted(t for p, t in enumerate(tiles) if T.xcd_of(p) == x)
            assert mine == list(range(mine[0], mine[0] + len(mine))) if mine else True
    assert [T.xcd_remap(p, 16) for p in range(4)] == [0, 2, 4, 6]   # XCD k starts at 2k


def test_grouped_tile_order_is_a_permutation():
    gm, gn = 13, 7
    seen = {T.grouped_tile(t, gm, gn, 4) for t in range(gm * gn)}
    assert seen == {(r, c) for r in range(gm) for c in range(gn)}


def test_remap_restores_grouped_locality_under_round_robin():
    rows = {r["mapping"]: r for r in T.compare_mappings(4096, 32768, 4096, 256, 256)}
    assert rows["grouped"]["vs row-major"] > 1.5                 # grouping alone is wrecked by round-robin
    assert rows["xcd-remap+grouped"]["vs row-major"] < 0.8       # the remap gives each XCD a compact block
    assert rows["xcd-remap+grouped"]["busiest XCD panels (A, B)"] == (8, 5)
    one = T.gemm_l2_traffic(4096, 4096, 4096, pkg=T.Package("one-XCD", 1, 304, 32, 256, 192, 5.3, 64))
    assert one.duplication == 1.0                                 # a single L2 never fetches a panel twice


def test_partitions_and_seats():
    cpx = T.partitioning("CPX", "NPS4")
    assert (cpx.logical_gpus, cpx.cus_each, cpx.l2_each_mb, cpx.memory_each_gb, cpx.numa_pools) == (8, 38, 4, 24, 4)
    assert T.package().hbm_gb / cpx.numa_pools == 48              # AMD: NPS4 = four 48 GB memory partitions
    assert T.partitioning("SPX", "NPS1").cus_each == 304
    assert T.seats(8, "CPX", "NPS4") == 64 and T.seats(8, "SPX", "NPS1") == 8
    with pytest.raises(ValueError, match="NPS4 needs CPX"):
        T.partitioning("SPX", "NPS4")
    cmds = T.amd_smi_commands("CPX", "NPS4")
    assert cmds[0].startswith("sudo amd-smi set --memory-partition NPS4") and "--compute-partition CPX" in cmds[1]
    ill = T.amd_smi_list_illustration("CPX", "NPS4", 2)
    assert "not output captured" in ill and ill.count("GPU:") == 16


def test_widget_builds_and_the_dropdown_updates_the_figure():
    pytest.importorskip("ipywidgets")
    from rocmlab.course.labs.lab08_mi300x_package import package_widget as PW

    grid = PW.tile_xcd_grid(4, 4, "row-major", programs=8)
    assert grid[0] == [0, 1, 2, 3] and grid[2] == [None] * 4
    w = PW.package_widget()
    fig = w.children[2]
    before = fig.data[1].marker.color
    w.children[1].children[1].value = "xcd-remap+grouped"
    assert fig.data[1].marker.color != before and fig.data[1].marker.color[-1] == "#d62728"


def test_cache_levels_and_local_partition_reading():
    assert T.cache_level(1 << 20).startswith("L2") and T.cache_level(100 << 20).startswith("Infinity")
    assert T.cache_level(300 << 20) == "HBM"
    info, why = T.local_partition()
    assert (info is None) == bool(why)
