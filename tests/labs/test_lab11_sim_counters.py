"""Lab 11 on a CPU: the simulator's counts tell the slow kernel from the fixed one, for both causes it can count
(uncoalesced access: cache lines per memory instruction; LDS bank conflicts), on fresh random small inputs."""

from __future__ import annotations

import random

import pytest

from rocmlab.course.labs.lab11_counters_and_faults import lab as lab11
from rocmlab.course.labs.lab11_counters_and_faults import counters as lab11_counters
from rocmlab.hip import simulate

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")


def test_lds_bank_conflicts_slow_against_fixed():
    size = {"rows": random.choice([256, 320]), "cols": random.choice([48, 64])}
    p = lab11_counters.simulated_pair("lab11-lds-banks", seed=random.getrandbits(32), size=size)
    slow, fixed = p["slow"], p["fixed"]
    assert slow["SQ_INSTS_LDS"] == fixed["SQ_INSTS_LDS"] > 0, p           # the same LDS work, padded or not
    assert slow["SQ_LDS_BANK_CONFLICT"] > 0 and fixed["SQ_LDS_BANK_CONFLICT"] == 0, p
    rows = lab11_counters.table_rows("lab11-lds-banks", p)
    assert rows[1][0] == "SQ_LDS_BANK_CONFLICT" and "rocprofv3 --pmc SQ_LDS_BANK_CONFLICT" in rows[1][3]
    assert "counted by the wave64 simulator" in lab11_counters.HEADER[1]


def test_uncoalesced_access_slow_against_fixed():
    size = {"rows": random.choice([64, 96]), "cols": random.choice([256, 320])}
    p = lab11_counters.simulated_pair("lab11-coalesce", seed=random.getrandbits(32), size=size)
    _, slow = lab11_counters.figure("lab11-coalesce", p["slow"])
    _, fixed = lab11_counters.figure("lab11-coalesce", p["fixed"])
    assert slow > 2 * fixed > 0, p      # the fix touches far fewer 128-byte lines per instruction


def test_occupancy_slow_against_fixed_is_the_compilers_for_the_launch():
    p = lab11_counters.simulated_pair("lab11-occupancy", seed=random.getrandbits(32),
                                      size={"n": random.choice([2051, 4099])})
    slow, fixed = p["slow"], p["fixed"]
    assert slow["workgroup_size"] == fixed["workgroup_size"] == 256, p
    assert slow["lds_bytes_per_workgroup"] == 49152 and fixed["lds_bytes_per_workgroup"] == 1048, p
    assert slow["waves_per_simd"] == 1 and slow["occupancy_limited_by"] == "LDS", p
    assert fixed["waves_per_simd"] == 8, p
    # the offline compiler's listing for the same two programs: its LDS, and the calculator at the launch of 256
    listing = lab11.offline_rows("lab11-occupancy")
    assert [r[3] for r in listing] == [49152, 1048]
    assert [int(r[5].split()[0]) for r in listing] == [1, 8]
    rows = lab11_counters.table_rows("lab11-occupancy", p)
    assert rows[-1][1:3] == ["1", "8"], rows
