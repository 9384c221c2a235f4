"""Doctor checks on fake machines: each check has a passing and a failing (or warning) case."""

from __future__ import annotations

import json
import os

import pytest
from tests.helpers.fake_machine import amd_props, fake_torch, nvidia_props

from rocmlab import doctor
from rocmlab.cli import main
from rocmlab.machine.detect import Probe, detect


def probe(machine, torch=None, env=None, tools=None, run=None):
    tools = tools or {}
    return Probe(root=machine.root, env=env or {"PATH": "/nonexistent", "HOME": str(machine.root)},
                 torch=torch, which=lambda t: tools.get(t), run=run or (lambda cmd: None))


def rocm_machine(machine, rocm="6.4.1", hip="6.4.43482"):
    machine.add_kfd_gpu(1, 90402, 1216, 64, 192 * 10**9)
    machine.write("opt/rocm/.info/version", rocm + "\n")
    p = probe(machine, fake_torch(hip=hip, devices=[amd_props()]))
    return p, detect(p)


def by_name(checks, name):
    (c,) = [c for c in checks if c.name == name]
    return c


def test_status_is_validated():
    with pytest.raises(ValueError):
        doctor.Check("x", "good", "")


def test_cuda_wheel_on_amd_machine_fails(machine):
    machine.add_kfd_gpu(1, 90402, 1216, 64, 192 * 10**9)
    p = probe(machine, fake_torch(cuda="12.8"))          # a CUDA wheel sees no GPU here
    plat = detect(p)
    assert plat.backend == "rocm"
    c = doctor.check_torch_build(plat, p)
    assert c.status == "fail" and "rocm" in c.fix.lower()


def test_rocm_build_ok(machine):
    p, plat = rocm_machine(machine)
    assert doctor.check_torch_build(plat, p).status == "ok"


def test_version_mismatch_warns(machine):
    p, plat = rocm_machine(machine, rocm="6.2.0", hip="6.4.43482")
    c = doctor.check_version_match(plat, p)
    assert c.status == "warn" and "6.2" in c.message and "rocm6.2" in c.fix


def test_version_match_ok(machine):
    p, plat = rocm_machine(machine, rocm="6.4.1", hip="6.4.43482")
    assert doctor.check_version_match(plat, p).status == "ok"


def test_missing_device_nodes_fail(machine):
    p = probe(machine, fake_torch(hip="6.4", devices=[amd_props()]))
    plat = detect(p)                                     # torch sees a GPU, but no /dev/kfd in this container
    c = doctor.check_device_nodes(plat, p)
    assert c.status == "fail" and "--device /dev/kfd" in c.fix


def test_device_nodes_ok(machine):
    p, plat = rocm_machine(machine)
    if os.geteuid() != 0:
        os.chmod(machine.root / "dev/kfd", 0o666)
    assert doctor.check_device_nodes(plat, p).status == "ok"


def test_device_nodes_not_accessible(machine):
    if os.geteuid() == 0:
        pytest.skip("root can open any file: access failures cannot be staged as root")
    p, plat = rocm_machine(machine)
    os.chmod(machine.root / "dev/kfd", 0)
    c = doctor.check_device_nodes(plat, p)
    assert c.status == "fail" and "video" in c.fix


def test_groups(machine, monkeypatch):
    p, plat = rocm_machine(machine)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert doctor.check_groups(plat, p, groups={"users"}).status == "warn"
    assert doctor.check_groups(plat, p, groups={"video", "render"}).status == "ok"


def test_hsa_override_on_mi300x_warns(machine):
    p, plat = rocm_machine(machine)
    p.env = {**p.env, "HSA_OVERRIDE_GFX_VERSION": "11.0.0"}
    c = doctor.check_hsa_override(plat, p)
    assert c.status == "warn" and "RDNA" in c.message and "unset" in c.fix
    p.env.pop("HSA_OVERRIDE_GFX_VERSION")
    assert doctor.check_hsa_override(plat, p).status == "ok"


def test_rockm_typo_is_corrected(machine):
    p, plat = rocm_machine(machine)
    c = doctor.check_rocm_api(plat, p)
    assert c.status == "ok" and "rockm does not exist" in c.message and "torch.version.hip" in c.fix


def test_visible_devices_hiding_everything_fails(machine):
    p, plat = rocm_machine(machine)
    p.env = {**p.env, "HIP_VISIBLE_DEVICES": ""}
    assert doctor.check_visible_devices(plat, p).status == "fail"
    p.env["HIP_VISIBLE_DEVICES"] = "0"
    assert doctor.check_visible_devices(plat, p).status == "ok"


def test_wsl_warns(machine):
    machine.write("proc/sys/kernel/osrelease", "5.15.1-microsoft-standard-WSL2\n")
    p = probe(machine, fake_torch())
    assert doctor.check_wsl(detect(p), p).status == "warn"
    machine.write("proc/sys/kernel/osrelease", "6.1.0-amd64\n")
    assert doctor.check_wsl(detect(p), p).status == "ok"


def test_ldd_cuda_runtime_on_amd_fails(machine, tmp_path):
    lib = tmp_path / "torch" / "lib"
    lib.mkdir(parents=True)
    (lib / "libtorch_cuda.so").write_text("")
    torch = fake_torch(hip="6.4", devices=[amd_props()])
    torch.__file__ = str(tmp_path / "torch" / "__init__.py")
    p = probe(machine, torch, tools={"ldd": "/usr/bin/ldd"}, run=lambda cmd: "libcudart.so.12 => /x\n")
    c = doctor.check_ldd(detect(p), p)
    assert c.status == "fail" and "ROCm build" in c.fix
    (lib / "libtorch_cuda.so").unlink()
    (lib / "libtorch_hip.so").write_text("")
    p.run = lambda cmd: "libamdhip64.so.6 => /opt/rocm/lib/libamdhip64.so.6\n"
    assert doctor.check_ldd(detect(p), p).status == "ok"


def test_offline_toolchain_missing_warns(machine):
    p = probe(machine, fake_torch())
    p.env["ROCMLAB_ROCM_ROOT"] = str(machine.root / "no-root")
    c = doctor.check_offline_toolchain(detect(p), p)
    assert c.status == "warn" and "20-rocm-root.sh" in c.fix and "ROCm 7.2.4" in c.name


def test_offline_toolchain_found_names_rocm_7_2_4(machine):
    root = machine.root / "rocm-7.2.4"
    machine.write("rocm-7.2.4/usr/bin/hipcc")
    p = probe(machine, fake_torch(), tools={"bwrap": "/usr/bin/bwrap"})
    p.env["ROCMLAB_ROCM_ROOT"] = str(root)
    c = doctor.check_offline_toolchain(detect(p), p)
    assert c.status == "warn" and "no offline ROCm 7.2.4 root" in c.message     # no stamp: incomplete
    machine.write("rocm-7.2.4/.rocmlab-ready", "rocm 7.2.4\nhip 7.2.53211\n")
    c = doctor.check_offline_toolchain(detect(p), p)
    assert c.status == "ok" and c.message.startswith("ROCm 7.2.4") and "gfx950" in c.message
    p.which = lambda t: None                       # no bubblewrap, no PRoot: only root (chroot) can enter it
    from rocmlab import sandbox
    c = doctor.check_offline_toolchain(detect(p), p)
    if os.geteuid() == 0 and sandbox.fallback_entry(None)[0] == sandbox.CHROOT:
        assert c.status == "ok"
    from rocmlab.sandbox import uid_drop
    real = uid_drop.as_root
    try:
        uid_drop.as_root = lambda: False           # an ordinary user without bubblewrap and PRoot: cannot
        c = doctor.check_offline_toolchain(detect(p), p)
        assert c.status == "warn" and "bubblewrap" in c.message and "apt-get install proot" in c.fix
        p.which = lambda t: "/usr/bin/proot" if t == "proot" else None      # with PRoot: it can
        assert doctor.check_offline_toolchain(detect(p), p).status == "ok"
    finally:
        uid_drop.as_root = real


def test_gpu_toolchain_on_cuda(machine):
    p = probe(machine, fake_torch(cuda="13.0", devices=[nvidia_props()]))
    assert doctor.check_gpu_toolchain(detect(p), p).status == "warn"
    p.which = lambda t: "/usr/local/cuda/bin/nvcc" if t == "nvcc" else None
    assert doctor.check_gpu_toolchain(detect(p), p).status == "ok"


def test_crashing_check_is_reported_not_raised(machine, monkeypatch):
    def boom(plat, probe):
        raise RuntimeError("kaput")
    monkeypatch.setattr(doctor, "CHECKS", (doctor.check_backend, boom))
    checks = doctor.run_checks(probe(machine, fake_torch()))
    assert [c.status for c in checks] == ["ok", "fail"] and "kaput" in checks[1].message
    assert doctor.exit_code(checks) == 1


def test_cli_json_and_exit_code(capsys):
    rc = main(["doctor", "--json"])
    data = json.loads(capsys.readouterr().out)
    statuses = {c["status"] for c in data["checks"]}
    assert rc == (1 if "fail" in statuses else 0)
    assert data["backend"] in ("rocm", "cuda", "cpu")
    rc = main(["doctor"])
    out = capsys.readouterr().out
    assert "rocmlab doctor" in out and "ok" in out


def test_isolation_check_names_bubblewrap_or_the_fallback(machine, monkeypatch):
    from rocmlab import sandbox
    machine = probe(machine)
    plat = detect(machine)
    here = doctor.check_isolation(plat, machine)
    if sandbox.isolation().namespaces:
        assert here.status == "ok" and here.message.startswith("bubblewrap:")
    monkeypatch.setenv("ROCMLAB_SANDBOX", "no-bwrap")        # as if user namespaces were missing
    weak = doctor.check_isolation(plat, machine)
    assert weak.status == "warn" and "WEAKER" in weak.message and "no-bwrap" in weak.message and weak.fix
    assert "isolation" in [c.name for c in doctor.run_checks(machine, plat)]


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's user is another uid only as root")
def test_fallback_check_warns_when_the_sandbox_user_cannot_read_the_course(machine, monkeypatch):
    import shutil
    import tempfile

    from rocmlab import sandbox
    monkeypatch.setenv("ROCMLAB_SANDBOX", "no-bwrap")
    p = probe(machine)
    top = tempfile.mkdtemp(prefix="rocmlab-doctor-")
    try:
        os.chmod(top, 0o755)
        os.makedirs(os.path.join(top, "cache"))
        os.makedirs(os.path.join(top, "rocmlab"))
        monkeypatch.setenv("ROCMLAB_HOME", os.path.join(top, "cache"))
        monkeypatch.setattr(doctor, "__file__", os.path.join(top, "rocmlab", "doctor.py"))
        c = doctor.check_sandbox_fallback(detect(p), p)
        assert c.status == "ok" and "reads the course" in c.message          # the control: folders others pass
        os.chmod(top, 0o700)                                                 # as root's home is
        c = doctor.check_sandbox_fallback(detect(p), p)
        assert c.status == "warn" and f"{top} is closed to other users" in c.message
        assert "the course" in c.message and "the cache" in c.message and "ROCMLAB_HOME" in c.fix
    finally:
        shutil.rmtree(top, ignore_errors=True)
    monkeypatch.setenv("ROCMLAB_SANDBOX", "auto")
    if sandbox.isolation().namespaces:
        assert doctor.check_sandbox_fallback(detect(p), p).status == "skip"


def test_doctor_env_json_is_json(capsys, monkeypatch):
    monkeypatch.setenv("ROCMLAB_SANDBOX", "no-bwrap")
    assert main(["doctor", "--json", "--env"]) == 0
    data = json.loads(capsys.readouterr().out)
    got = {v["name"]: v["value"] for v in data["variables"]}
    assert got["ROCMLAB_SANDBOX"] == "no-bwrap" and "ROCMLAB_HOME" in got
    assert main(["doctor", "--env"]) == 0
    assert capsys.readouterr().out.startswith("| variable")         # the control: without --json, the table
