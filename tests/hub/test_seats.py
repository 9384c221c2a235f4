"""GPU seats from partition modes (rocmlab.workshop.seats): parsed from recorded real ``amd-smi`` outputs (from
AMD's documentation, sources in each file under tests/hub/amd_smi/), planned from Lab 08's model of the package,
and refused with a clear message where a mode does not exist or there are more learners than seats.

Recorded outputs: SPX/NPS1 (ROCm/amdsmi's CLI README), CPX/NPS4 (AMD's MI300X partitioning quick-start guide,
63 of 64 GPUs listed, and amdsmi's changelog), SPX with NPS4 (the guide's recorded refusal). No recorded CPX/NPS1
output was found in AMD's documentation: that mode is checked from the facts only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocmlab.workshop import seats

HERE = Path(__file__).parent / "amd_smi"
ROOT = Path(__file__).resolve().parents[2]


def recorded(name: str) -> str:
    return (HERE / name).read_text()


def test_spx_nps1_recorded_output_gives_one_seat_per_gpu():
    parts = seats.parse_amd_smi_partition(recorded("spx_nps1_static.txt"))
    assert parts.modes == {("SPX", "NPS1")} and parts.listed == 4
    p = seats.plan_from_node(parts, logical_gpus=4)
    assert (p.gpus, p.seats, p.cus, p.memory_gb, p.memory_pools) == (4, 4, 304, 192.0, 1)
    assert p.basis.startswith("read from this node: amd-smi SPX/NPS1, 4 logical GPUs")


def test_cpx_nps4_recorded_output_gives_64_seats_of_38_cus_and_24_gb():
    parts = seats.parse_amd_smi_partition(recorded("cpx_nps4_static_partition.txt"))
    assert parts.modes == {("CPX", "NPS4")} and parts.listed == 63          # as printed in AMD's guide
    assert [pid for _, _, _, pid in parts.entries[:10]] == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]
    p = seats.plan_from_node(parts, logical_gpus=64)                       # the KFD topology counts 64
    assert (p.gpus, p.per_gpu, p.seats, p.cus, p.memory_gb, p.l2_mb, p.memory_pools) == (8, 8, 64, 38, 24.0, 4.0, 4)
    assert "amd-smi listed 63" in p.basis
    with pytest.raises(seats.PlanError, match=r"63 logical GPUs is not a multiple of 8 \(CPX\): a GPU is missing"):
        seats.plan_from_node(parts, logical_gpus=63)
    one = seats.parse_amd_smi_partition(recorded("cpx_nps4_changelog.txt"))
    assert one.entries == ((0, "CPX", "NPS4", 0),)


def test_spx_with_nps4_is_refused_as_amd_smi_refuses_it():
    assert "AMDSMI_STATUS_SETTING_UNAVAILABLE" in recorded("spx_nps4_refused.txt")
    assert seats.parse_amd_smi_partition(recorded("spx_nps4_refused.txt")).entries == ()
    with pytest.raises(seats.PlanError, match="SPX/NPS4 is not a documented MI300X combination: NPS4 needs CPX"):
        seats.plan(8, "SPX", "NPS4")


def test_every_documented_mode_of_an_8_gpu_mi300x_node():
    got = {(p.compute, p.memory): (p.seats, p.cus, p.memory_gb) for p in
           (seats.plan(8, c, m) for c, m in [("SPX", "NPS1"), ("DPX", "NPS1"), ("QPX", "NPS1"), ("CPX", "NPS1"),
                                             ("CPX", "NPS4")])}
    assert got == {("SPX", "NPS1"): (8, 304, 192.0), ("DPX", "NPS1"): (16, 152, 96.0),
                   ("QPX", "NPS1"): (32, 76, 48.0), ("CPX", "NPS1"): (64, 38, 24.0), ("CPX", "NPS4"): (64, 38, 24.0)}
    assert all(p.basis.startswith("plan: computed from the facts") for p in [seats.plan(8, "CPX", "NPS1")])


def test_switch_commands_follow_amds_order():
    to_cpx = seats.switch_commands("CPX", "NPS4")
    assert to_cpx[0] == "sudo amd-smi set --gpu all --compute-partition CPX"      # NPS4 needs CPX first
    assert to_cpx[1].startswith("sudo amd-smi set --memory-partition NPS4")
    back = seats.switch_commands("SPX", "NPS1")
    assert back[0].startswith("sudo amd-smi set --memory-partition NPS1")          # SPX is refused under NPS4
    assert back[1] == "sudo amd-smi set --gpu all --compute-partition SPX"


def test_mixed_modes_are_refused():
    text = recorded("spx_nps1_static.txt").replace("COMPUTE_PARTITION: SPX", "COMPUTE_PARTITION: CPX", 1)
    with pytest.raises(seats.PlanError, match="mixed or unknown partition modes"):
        seats.plan_from_node(seats.parse_amd_smi_partition(text), logical_gpus=11)


def test_more_learners_than_seats_is_a_clear_error():
    seats.check_learners(30, 64)                                        # the control: CPX seats 30
    with pytest.raises(seats.NoFreeGpu, match=r"30 learners but only 8 GPU seats in SPX/NPS1: .*CPX"):
        seats.check_learners(30, 8, " in SPX/NPS1")


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "rocmlab.cli", "seats", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=120)


def test_cli_plan_json_and_errors(tmp_path):
    r = _cli("plan", "--gpus", "8", "--compute", "CPX", "--memory", "NPS4", "--json")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["seats"] == 64 and plan["per_seat"]["cus"] == 38 and plan["per_seat"]["memory_gb"] == 24.0
    assert plan["basis"].startswith("plan:") and any("amd-smi set" in c for c in plan["commands"])
    assert any("quick-start-guide" in s for s in plan["sources"])
    r = _cli("plan", "--gpus", "8", "--compute", "SPX", "--memory", "NPS1", "--learners", "30")
    assert r.returncode == 2 and "30 learners but only 8 GPU seats" in r.stderr and "Traceback" not in r.stderr
    r = _cli("plan", "--gpus", "8", "--compute", "XPX", "--memory", "NPS1")
    assert r.returncode == 2 and "modes are" in r.stderr
    r = _cli("plan", env={"PATH": str(tmp_path)})                          # no amd-smi: say so, suggest a plan
    assert r.returncode == 2 and "amd-smi is not on PATH" in r.stderr and "--compute CPX" in r.stderr


def test_cli_reads_the_node_with_amd_smi(tmp_path):
    """A stand-in amd-smi that prints the recorded CPX/NPS4 output; the KFD count says 64 logical GPUs."""
    fake = tmp_path / "amd-smi"
    fake.write_text(f"#!/bin/sh\ncat {HERE / 'cpx_nps4_static_partition.txt'}\n")
    fake.chmod(0o755)
    r = _cli("plan", "--json", env={"PATH": f"{tmp_path}:{os.environ['PATH']}", "ROCMLAB_WORKSHOP_GPUS": "64"})
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert (plan["seats"], plan["compute"], plan["memory"], plan["gpus"]) == (64, "CPX", "NPS4", 8)
    assert plan["basis"].startswith("read from this node")


def test_release_validates_state_and_creates_or_locks_nothing_else(tmp_path):
    """`seats release --state` with a system file, a missing folder, a folder, a link or a bad file: a clear
    message and exit 2, and nothing beside it created or locked; the control: a real state file works and
    leaves no lock file behind."""
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "rocmlab.cli", "seats", *args], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT), ROCMLAB_WORKSHOP_GPUS="4"), timeout=60)

    sysfile = tmp_path / "passwd"
    sysfile.write_text("root:x:0:0:root:/root:/bin/bash\n")
    missing = tmp_path / f"nonexistent-{os.getpid()}" / "state.json"
    link = tmp_path / "link.json"
    link.symlink_to(sysfile)
    bad = tmp_path / "bad.json"
    bad.write_text('{"alice": "seat one"}')
    before = sorted(p.name for p in tmp_path.iterdir())
    for state, words in ((sysfile, "not a seat state file"), (missing, "does not exist"), (tmp_path, "is a folder"),
                         (link, "is a link"), (bad, "not a seat state file")):
        for cmd in (["release", "alice"], ["list"]):
            r = cli(*cmd, "--state", str(state))
            assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, (state, r.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not missing.parent.exists()
    assert sysfile.read_text() == "root:x:0:0:root:/root:/bin/bash\n"
    good = tmp_path / "seats.json"
    seats.GpuAssigner(good, 4).assign("alice")
    assert json.loads(good.read_text()) == {"alice": 0}
    r = cli("release", "alice", "--state", str(good))
    assert r.returncode == 0 and "released alice" in r.stdout, r.stderr
    assert json.loads(good.read_text()) == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "seats.json"])    # no .lock beside it


def test_seat_device_paths_follow_the_kfd_topology_and_become_device_rules(tmp_path):
    """Seat N is the N-th KFD node with SIMDs (HIP's order); its server gets /dev/kfd and that node's render minor.
    The control: a CPU node (no SIMDs) is no seat; a path that is not a device node is refused."""
    nodes = tmp_path / "nodes"
    for i, (simds, minor) in enumerate([(0, 0), (304, 131), (304, 128)]):
        (nodes / str(i)).mkdir(parents=True)
        (nodes / str(i) / "properties").write_text(f"cpu_cores_count 0\nsimd_count {simds}\n"
                                                   f"drm_render_minor {minor}\n")
    got = seats.seat_device_paths(8, kfd_nodes=str(nodes), dev="/dev")
    assert got == [["/dev/kfd", "/dev/dri/renderD131"], ["/dev/kfd", "/dev/dri/renderD128"]]
    assert seats.seat_device_paths(1, kfd_nodes=str(nodes)) == got[:1]
    assert seats.seat_device_paths(8, kfd_nodes=str(tmp_path / "none")) == []
    with pytest.raises(seats.NoFreeGpu, match="is not a device node"):
        seats.device_rules([str(nodes / "0" / "properties")])
    with pytest.raises(seats.NoFreeGpu, match="is missing"):
        seats.device_rules([str(tmp_path / "renderD999")])
    assert seats.device_rules(["/dev/null"]) == ["c 1:3 rw"]
