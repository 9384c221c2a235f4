"""Fake machines for platform detection: a stand-in torch module, GPU properties, and a filesystem root with the
/dev, /sys and /proc files detection reads (the ``machine`` fixture of tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace


def fake_torch(hip=None, cuda=None, devices=(), version="2.99.0"):
    """A stand-in for the torch module with the attributes platform detection reads."""
    props = list(devices)
    return SimpleNamespace(
        __version__=version,
        __file__="/nonexistent/torch/__init__.py",
        version=SimpleNamespace(hip=hip, cuda=cuda),
        backends=SimpleNamespace(),
        cuda=SimpleNamespace(is_available=lambda: bool(props), device_count=lambda: len(props),
                             get_device_properties=lambda i: props[i]),
    )


def amd_props(name="AMD Instinct MI300X", target_id="gfx942:sramecc+:xnack-", cus=304, mem_gb=192.0, warp=64):
    return SimpleNamespace(name=name, gcnArchName=target_id, multi_processor_count=cus,
                           total_memory=int(mem_gb * 2**30), warp_size=warp, major=9, minor=4)


def nvidia_props(name="NVIDIA H200", major=9, minor=0, sms=132, mem_gb=141.0):
    return SimpleNamespace(name=name, multi_processor_count=sms, total_memory=int(mem_gb * 2**30),
                           warp_size=32, major=major, minor=minor)


class FakeMachine:
    """A filesystem root under tmp_path with the files detection reads."""

    def __init__(self, root: Path):
        self.root = root
        self.write("proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU 9000\nprocessor\t: 1\n")
        self.write("proc/meminfo", "MemTotal:       16000000 kB\n")
        self.write("proc/sys/kernel/osrelease", "6.1.0-test-amd64\n")

    def write(self, rel: str, text: str = "") -> Path:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    def add_kfd_gpu(self, node: int, target_version: int, simds: int, wave: int, mem_bytes: int, name="gpu"):
        self.write("dev/kfd")
        self.write(f"dev/dri/renderD{128 + node}")
        base = f"sys/class/kfd/kfd/topology/nodes/{node}"
        self.write(f"{base}/properties",
                   f"cpu_cores_count 0\nsimd_count {simds}\nsimd_per_cu 4\nwave_front_size {wave}\n"
                   f"gfx_target_version {target_version}\n")
        self.write(f"{base}/name", name + "\n")
        self.write(f"{base}/mem_banks/0/properties", f"heap_type 1\nsize_in_bytes {mem_bytes}\n")

    def add_kfd_cpu_node(self):
        self.write("sys/class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n")
        self.write("sys/class/kfd/kfd/topology/nodes/0/name", "\n")
