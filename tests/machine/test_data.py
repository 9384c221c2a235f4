"""datasets/: every figure has a source; lookups find the right rows."""

from __future__ import annotations

import csv

import pytest

from rocmlab.machine import hardware, stack
from rocmlab.paths import datasets_dir


def test_every_figure_has_a_known_source():
    keys = set(hardware.sources())
    with open(datasets_dir() / "hardware.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["device"] for r in rows} == {"MI300X", "MI325X", "MI355X", "MI250X", "H100 SXM", "H200"}
    for r in rows:
        for f in hardware.FIGURES:
            assert r[f + "_source"] in keys, f"{r['device']}.{f} has source {r[f + '_source']!r}"


@pytest.mark.parametrize("name,target,mem,expected", [
    ("AMD Instinct MI300X", None, None, "MI300X"),
    ("", "gfx942:sramecc+:xnack-", 206.0, "MI300X"),
    ("", "gfx942", 270.0, "MI325X"),
    ("AMD Instinct MI250X/MI250", None, None, "MI250X"),
    ("NVIDIA H100 80GB HBM3", None, None, "H100 SXM"),
    ("NVIDIA H200", "sm_90", None, "H200"),
    ("AMD Instinct MI355X", None, None, "MI355X"),
    ("", "gfx950", None, "MI355X"),
])
def test_lookup(name, target, mem, expected):
    assert hardware.lookup(name, target, mem).device == expected


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


def test_mi300x_l2_is_eight_separate_4_mb_caches():
    s = hardware.specs()
    mi = s["MI300X"]
    assert mi["l2_count"] == 8 and mi.l2_per_instance_mb() == 4.0 and mi["compute_dies"] == 8
    assert mi["compute_units"] / mi["compute_dies"] == 38
    assert s["H200"]["l2_count"] == 1 and s["H200"].l2_per_instance_mb() == 50
    assert "4 per XCD" in hardware.sources()[mi.sources["l2_count"]]["note"]


def test_mi355x_row_has_a_source_per_figure_and_cdna4_figures():
    m = hardware.specs()["MI355X"]
    assert m.target == "gfx950" and m["lds_per_cu_kib"] == 160 and m["compute_units"] == 256
    assert m["compute_units"] / m["compute_dies"] == 32 and m["wavefront_size"] == 64
    assert m["tf32_dense_tflops"] is None           # no TF32 matrix figure published for CDNA 4
    assert all(m.sources[f] in hardware.sources() for f in hardware.FIGURES)


def test_occupancy_calculator_agrees_on_lds_where_it_knows_the_target():
    from rocmlab.hip import occupancy
    s = hardware.specs()
    for device in ("MI300X", "MI355X"):
        target = s[device].target
        if target not in occupancy.known():
            continue   # the calculator does not know this target (yet)
        assert occupancy.compute_unit(target).lds_per_cu == s[device]["lds_per_cu_kib"] * 1024, target


def test_every_claim_and_published_figure_names_a_source_or_says_unsourced():
    keys = set(hardware.sources())
    for name in ("article_claims.csv", "comm_published.csv"):
        with open(datasets_dir() / name, newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert rows
        for r in rows:
            src = r["source"]
            assert src in keys or src == "unsourced" or src.startswith("computed:"), (name, r)
    with open(datasets_dir() / "comm_published.csv", newline="") as fh:
        pub = {(r["gpus"], r["impl"]): float(r["latency_us"]) for r in csv.DictReader(fh)}
    assert pub[("2", "RCCL")] == 1464.3 and pub[("8", "QuickReduce Q4")] == 272.68   # the README's tables


def test_rocm5_is_not_called_the_first_pytorch_training_support():
    with open(datasets_dir() / "rocm_versions.csv", newline="") as fh:
        rows = {r["version"]: r for r in csv.DictReader(fh)}
    assert "first PyTorch training support" not in rows["5.x"]["key_features"].replace("'first PyTorch training "
                                                                                      "support' in ROCm 5 is wrong", "")
    assert "4.0" in rows["5.x"]["key_features"] and "pytorch-rocm40-wheels" in rows["5.x"]["source"]


def test_fp8_formats_per_target():
    from rocmlab import settings
    assert settings.FP8_FORMATS["gfx942"] == "e4m3fnuz" and settings.FP8_FORMATS["gfx950"] == "e4m3fn"
    assert set(settings.FP8_FORMATS) == set(settings.TARGETS)
