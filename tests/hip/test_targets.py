"""rocmlab.targets: one record per GPU target, the facts the occupancy calculator counts with, and every consumer
(settings' tables, the calculator, the simulator, triton_amd, the scanner) seeing the same targets."""

from __future__ import annotations

import random
from dataclasses import FrozenInstanceError, replace

import pytest

from rocmlab import settings, targets
from rocmlab import triton_amd as TA
from rocmlab.hip import occupancy, simulate
from rocmlab.machine import hardware


def test_the_cdna_compute_unit_is_what_the_occupancy_rules_count_with():
    """The numbers tests/hip/whole/test_hip_inspect.py's occupancy cases rest on: 512 VGPRs per SIMD lane in
    granules of 8, at most 8 waves, 4 SIMDs, 256 addressable VGPRs and AGPRs, 1024 threads; 64 KiB of LDS per CU,
    160 KiB on gfx950, whose other rules are gfx942's."""
    for t in (targets.GFX942, targets.GFX90A, targets.GFX940, targets.GFX941):
        cu = t.cu
        assert (cu.vgprs_per_simd, cu.vgpr_granule, cu.max_waves_per_simd, cu.simds_per_cu) == (512, 8, 8, 4), t
        assert (cu.addressable_arch_vgprs, cu.max_agprs, cu.max_workgroup, cu.lds_per_cu) == (256, 256, 1024, 65536)
        assert t.wave == 64
    assert targets.GFX950.cu == replace(targets.GFX942.cu, lds_per_cu=160 * 1024)
    assert targets.SM_90.cu is None and targets.SM_90.wave == 32
    with pytest.raises(FrozenInstanceError):
        targets.GFX942.cu.lds_per_cu = 1


@pytest.mark.parametrize("vgprs, agprs, waves", [(64, 0, 8), (65, 0, 7), (128, 0, 4), (129, 0, 3), (256, 0, 2),
                                                 (512, 0, 1), (41, 100, 3), (64, 64, 4)])
def test_the_calculator_counts_with_the_record(vgprs, agprs, waves):
    cu = occupancy.compute_unit(settings.DEFAULT_TARGET)
    total = -(-vgprs // 4) * 4 + agprs if agprs else vgprs
    alloc = -(-total // cu.vgpr_granule) * cu.vgpr_granule
    assert occupancy.waves_from_vgprs(vgprs, agprs) == (min(cu.max_waves_per_simd, cu.vgprs_per_simd // alloc), alloc)
    assert occupancy.waves_from_vgprs(vgprs, agprs)[0] == waves


def test_control_a_changed_record_changes_the_calculator(monkeypatch):
    """No copy of the facts elsewhere: give gfx942's record gfx950's LDS, or half the register file, and the
    calculator follows it (and so does triton_amd's LDS limit)."""
    assert occupancy.waves_from_lds(40960, 256, "gfx942") == 1 and TA.AmdReport(
        "gfx942", {}, 64, 1, 0, 16, 0, 0).lds_limit == 65536
    changed = replace(targets.GFX942, cu=replace(targets.GFX942.cu, lds_per_cu=163840, vgprs_per_simd=256))
    monkeypatch.setitem(targets._BY_NAME, "gfx942", changed)
    assert occupancy.waves_from_lds(40960, 256, "gfx942") == 4
    assert occupancy.waves_from_vgprs(128, 0, "gfx942")[0] == 2
    assert TA.AmdReport("gfx942", {}, 64, 1, 0, 16, 0, 0).lds_limit == 163840


def test_lookups():
    assert targets.get("gfx942") is targets.GFX942 and targets.find("gfx942:xnack-") is None
    assert targets.find(None) is None and targets.find("gfx1100") is None
    with pytest.raises(ValueError, match="unknown target 'gfx1100': rocmlab knows gfx942, gfx950, gfx90a"):
        targets.get("gfx1100")
    assert len({t.name for t in targets.ALL}) == len(targets.ALL)
    assert targets.GFX942.label == "MI300X / MI325X (CDNA3)" and targets.GFX90A.label == "MI200 series (CDNA2)"


def test_the_records_agree_with_the_hardware_dataset():
    """Each device of datasets/hardware.csv: its target has a record whose product names it (or its series), with
    its wavefront size and, on AMD, its LDS per CU."""
    for device, spec in hardware.specs().items():
        t = targets.get(spec.target)
        series = t.product.endswith("series") and device[:3] == t.product[:3]
        assert device.split()[0] in t.product or series, (device, t.product)
        assert spec["wavefront_size"] == t.wave, device
        if t.is_amd:
            assert spec["lds_per_cu_kib"] * 1024 == t.cu.lds_per_cu, device


def test_every_consumer_sees_the_same_targets():
    amd = tuple(t.name for t in targets.AMD)
    assert amd[0] == settings.DEFAULT_TARGET and targets.get(settings.DEFAULT_NVIDIA_TARGET).vendor == "NVIDIA"
    # settings' tables
    assert settings.AMD_TARGETS == amd and settings.TARGETS == (*amd, settings.DEFAULT_NVIDIA_TARGET)
    assert list(settings.TARGET_NAMES) == list(settings.FP8_FORMATS) == list(settings.TARGETS)
    assert list(settings.WAVEFRONT_SIZE) == list(amd)
    assert all(settings.TARGET_NAMES[n] == targets.get(n).label and settings.FP8_FORMATS[n] == targets.get(n).fp8
               for n in settings.TARGETS)
    # the simulator, the occupancy calculator (which also takes the untaught CDNA3 IDs)
    assert simulate.TARGETS == amd
    assert occupancy.known() == tuple(t.name for t in targets.ALL if t.is_amd)
    assert set(amd) <= set(occupancy.known())
    # triton_amd: every AMD record is accepted (it gets to the options check), any other target is refused
    for name in occupancy.known():
        with pytest.raises(TA.TritonAmdError, match="unknown option"):
            TA.compile_variants(test_lookups, {}, None, name, [{"warps": 4}])
        assert TA.AmdReport(name, {}, 64, 1, 0, 16, 0, 0).lds_limit == targets.get(name).cu.lds_per_cu
    for other in (settings.DEFAULT_NVIDIA_TARGET, "gfx1100", f"{random.choice(amd)}:xnack+"):
        with pytest.raises(TA.TritonAmdError, match="not an AMD target"):
            TA.compile_variants(test_lookups, {}, None, other)
