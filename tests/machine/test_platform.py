"""Backend detection through the real code, on fake machines with inputs we control."""

from __future__ import annotations

import pytest
from tests.helpers.fake_machine import amd_props, fake_torch, nvidia_props

from rocmlab.machine.detect import Probe, _gfx_from_target_version, detect


def probe(machine, torch=None, env=None, tools=None, run=None):
    tools = tools or {}
    return Probe(root=machine.root, env=env or {"PATH": "/nonexistent"}, torch=torch,
                 which=lambda t: tools.get(t), run=run or (lambda cmd: None))


def test_rocm_from_torch(machine, rng):
    cus = rng.randint(60, 400)
    mem = rng.uniform(64, 256)
    machine.add_kfd_gpu(1, 90402, cus * 4, 64, 1)
    machine.write("opt/rocm/.info/version", "6.4.1-120\n")
    machine.write("sys/module/amdgpu/version", "6.12.12\n")
    torch = fake_torch(hip="6.4.43482", devices=[amd_props(cus=cus, mem_gb=mem), amd_props(cus=cus, mem_gb=mem)])
    plat = detect(probe(machine, torch))
    assert plat.backend == "rocm"
    assert len(plat.devices) == 2
    d = plat.device
    assert (d.compute_units, d.wavefront_size, d.target) == (cus, 64, "gfx942")
    assert d.memory_gib == pytest.approx(mem)
    assert d.spec is not None and d.spec.device == "MI300X"
    assert plat.rocm_version == "6.4.1-120"
    assert plat.driver == "amdgpu 6.12.12"
    assert plat.kfd and plat.render_nodes == ("renderD129",)
    assert "wavefront 64" in plat.summary()


def test_cuda_from_torch(machine, rng):
    sms = rng.randint(20, 200)
    machine.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue\n")
    torch = fake_torch(cuda="13.0", devices=[nvidia_props(sms=sms)])
    plat = detect(probe(machine, torch))
    assert plat.backend == "cuda"
    assert plat.device.target_id == "sm_90" and plat.device.compute_units == sms and plat.device.wavefront_size == 32
    assert plat.device.spec.device == "H200"
    assert plat.driver == "nvidia 580.159.04"
    assert "warp 32" in plat.summary()


def test_cpu_when_nothing(machine):
    plat = detect(probe(machine, fake_torch()))
    assert plat.backend == "cpu"
    assert plat.device.name == "Test CPU 9000" and plat.device.compute_units == 2
    assert plat.device.memory_gib == pytest.approx(16000000 / 2**20)
    assert not plat.is_gpu and plat.torch.build == "CPU-only"


def test_rocm_from_kfd_without_torch(machine, rng):
    """An AMD machine whose torch is missing (or a CUDA wheel) is still recognised as rocm."""
    cus = rng.randint(100, 304)
    mem = rng.randint(64, 192) * 10**9
    machine.add_kfd_cpu_node()
    machine.add_kfd_gpu(1, 90010, cus * 4, 64, mem)       # gfx90a
    plat = detect(probe(machine, torch=None))
    assert plat.backend == "rocm"
    assert plat.torch.version is None
    d = plat.device
    assert d.target_id == "gfx90a" and d.compute_units == cus and d.memory_gib == pytest.approx(mem / 2**30)
    assert d.spec.device == "MI250X"
    assert d.source.startswith("KFD")


def test_cuda_from_nvidia_smi(machine):
    out = "NVIDIA H100 80GB HBM3, 81559, 9.0\n"
    plat = detect(probe(machine, torch=None, tools={"nvidia-smi": "/bin/nvidia-smi"}, run=lambda cmd: out))
    assert plat.backend == "cuda"
    assert plat.device.spec.device == "H100 SXM"
    assert plat.device.memory_gib == pytest.approx(81559 / 1024)


@pytest.mark.parametrize("value,expected", [(90402, "gfx942"), (90010, "gfx90a"), (90400, "gfx940"),
                                            (110000, "gfx1100"), (90008, "gfx908")])
def test_gfx_target_version(value, expected):
    assert _gfx_from_target_version(value) == expected


def test_forced_backend_and_bad_value(machine):
    torch = fake_torch(cuda="13.0", devices=[nvidia_props()])
    plat = detect(probe(machine, torch, env={"ROCMLAB_BACKEND": "cpu"}))
    assert plat.backend == "cpu" and "forced" in plat.reason
    with pytest.raises(ValueError, match="ROCMLAB_BACKEND"):
        detect(probe(machine, torch, env={"ROCMLAB_BACKEND": "tpu"}))


def test_env_and_wsl(machine):
    machine.write("proc/sys/kernel/osrelease", "5.15.153.1-microsoft-standard-WSL2\n")
    env = {"HIP_VISIBLE_DEVICES": "0", "HSA_OVERRIDE_GFX_VERSION": "11.0.0", "UNRELATED": "x"}
    plat = detect(probe(machine, fake_torch(), env=env))
    assert plat.wsl
    assert plat.env == {"HIP_VISIBLE_DEVICES": "0", "HSA_OVERRIDE_GFX_VERSION": "11.0.0"}
    facts = dict(plat.facts())
    assert facts["HIP_VISIBLE_DEVICES"] == "0"


def test_this_machine_detects():
    """The default probe on the machine running the tests gives a consistent answer."""
    plat = detect()
    assert plat.backend in ("rocm", "cuda", "cpu")
    assert plat.device is not None
    assert plat.label.startswith(plat.backend + ": ")
