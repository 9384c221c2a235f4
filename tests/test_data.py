"""datasets/: every figure has a source; lookups find the right rows."""

from __future__ import annotations

import csv

import pytest

from rocmlab import hardware, stack
from rocmlab.paths import datasets_dir


def test_every_figure_has_a_known_source():
    keys = set(hardware.sources())
    with open(datasets_dir() / "hardware.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["device"] for r in rows} == {"MI300X", "MI325X", "MI250X", "H100 SXM", "H200"}
    for r in rows:
        for f in hardware.FIGURES:
            assert r[f + "_source"] in keys, f"{r['device']}.{f} has source {r[f + '_source']!r}"


@pytest.mark.parametrize("name,arch,mem,expected", [
    ("AMD Instinct MI300X", None, None, "MI300X"),
    ("", "gfx942:sramecc+:xnack-", 206.0, "MI300X"),
    ("", "gfx942", 270.0, "MI325X"),
    ("AMD Instinct MI250X/MI250", None, None, "MI250X"),
    ("NVIDIA H100 80GB HBM3", None, None, "H100 SXM"),
    ("NVIDIA H200", "sm_90", None, "H200"),
])
def test_lookup(name, arch, mem, expected):
    assert hardware.lookup(name, arch, mem).device == expected


def test_lookup_unknown():
    assert hardware.lookup("Radeon RX 7900 XTX", "gfx1100", 24) is None


def test_wavefront_sizes_from_the_table():
    s = hardware.specs()
    assert s["MI300X"]["wavefront_size"] == 64 and s["H200"]["wavefront_size"] == 32
    assert "CDNA 3" in s["MI300X"].source("wavefront_size")


def test_article_claims_name_h200_rows():
    with open(datasets_dir() / "article_claims.csv", newline="") as fh:
        claims = list(csv.DictReader(fh))
    h200 = [c for c in claims if c["compared_to"] == "H200"]
    assert len(h200) == 2 and all("H200" in c["our_note"] for c in h200)


@pytest.mark.parametrize("row,installed,hit", [("6.0", "6.0.2", True), ("6.1-6.2", "6.2.4", True),
                                               ("6.1-6.2", "6.4.1", False), ("5.x", "5.7.1", True),
                                               ("7.0", "7.0.1", True), ("7.0", "6.4", False)])
def test_version_rows(row, installed, hit):
    assert stack._row_matches(row, installed) is hit
