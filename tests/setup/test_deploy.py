"""The workshop deployment files in binder/: YAML lint, schemas, the workshop policy (one amd.com/gpu per learner,
the grade exchange), the hub's Python config snippets, the per-learner GPU assigner of the shared-node recipe,
and the ROCm image's torch-preserving install. Each check has a failing case."""

from __future__ import annotations

import copy
import json
import multiprocessing
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
import yaml
from yamllint import linter
from yamllint.config import YamlLintConfig

from rocmlab.workshop import references

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
HUB = BINDER / "jupyterhub"
TLJH = BINDER / "tljh"
YAML_FILES = sorted(p for p in BINDER.rglob("*") if p.suffix in (".yaml", ".yml"))

LINT = YamlLintConfig("""
extends: default
rules:
  line-length: {max: 120}
  document-start: disable
  comments: {min-spaces-from-content: 1}
  braces: {max-spaces-inside: 1}
  brackets: {max-spaces-inside: 1}
  truthy: {level: error, check-keys: true}
""")


def load(path):
    return yaml.safe_load(Path(path).read_text())


def lint(text: str) -> list[str]:
    return [f"{p.line}:{p.column} {p.rule}: {p.desc}" for p in linter.run(text, LINT) if p.level == "error"]


# ----------------------------------------------------------------------------- lint

def test_there_are_deployment_yaml_files():
    names = {p.relative_to(BINDER).as_posix() for p in YAML_FILES}
    assert {"jupyterhub/values.yaml", "jupyterhub/exchange-pvc.yaml", "tljh/config.yaml"} <= names, names


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: p.relative_to(BINDER).as_posix())
def test_yaml_lints_clean(path):
    assert lint(path.read_text()) == [], path


def test_lint_catches_duplicate_keys_and_bad_truthy_values():
    found = lint("singleuser:\n  cpu:\n    limit: 2\n  cpu:\n    limit: 4\ncull:\n  enabled: yes\n")
    assert any("key-duplicates" in f for f in found) and any("truthy" in f for f in found), found


# ----------------------------------------------------------------------------- schemas

VALUES_SCHEMA = load(HUB / "values.schema.rocmlab.yaml")
TLJH_SCHEMA = load(TLJH / "config.schema.yaml")


def schema_errors(doc, schema) -> list[str]:
    v = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in v.iter_errors(doc)]


def test_the_schemas_are_valid_draft7():
    jsonschema.Draft7Validator.check_schema(VALUES_SCHEMA)
    jsonschema.Draft7Validator.check_schema(TLJH_SCHEMA)


def test_values_yaml_matches_the_chart_schema():
    assert schema_errors(load(HUB / "values.yaml"), VALUES_SCHEMA) == []


@pytest.mark.parametrize("mutate, where", [
    (lambda v: v["singleuser"].update(extraResources=v["singleuser"].pop("extraResource")), "extraResources"),  # typo
    (lambda v: v["singleuser"].update(fsGroup=100), "fsGroup"),          # the chart calls it fsGid
    (lambda v: v["singleuser"]["cpu"].update(limit="24"), "singleuser.cpu.limit"),
    (lambda v: v["singleuser"]["storage"].update(type="nfs"), "singleuser.storage.type"),
    (lambda v: v["singleuser"]["storage"]["extraVolumeMounts"][0].pop("mountPath"), "extraVolumeMounts.0"),
    (lambda v: v["singleuser"]["image"].update(tag=""), "singleuser.image.tag"),
])
def test_values_schema_rejects_mistakes(mutate, where):
    values = load(HUB / "values.yaml")
    mutate(values)
    errors = schema_errors(values, VALUES_SCHEMA)
    assert errors and any(where in e for e in errors), errors


def test_tljh_config_matches_its_schema_and_rejects_mistakes():
    cfg = load(TLJH / "config.yaml")
    assert schema_errors(cfg, TLJH_SCHEMA) == []
    bad = copy.deepcopy(cfg)
    bad["limits"]["cpu"] = "24"
    bad["users"]["alowed"] = ["x"]
    errors = schema_errors(bad, TLJH_SCHEMA)
    assert any("limits.cpu" in e for e in errors) and any("alowed" in e for e in errors), errors


# ----------------------------------------------------------------------------- the workshop policy (Kubernetes)

def policy_problems(values: dict, pvc_docs: list[dict]) -> list[str]:
    """What a GPU workshop on Zero to JupyterHub needs, beyond the chart's schema."""
    out = []
    su = values.get("singleuser", {})
    limits = su.get("extraResource", {}).get("limits", {})
    gpu = limits.get("amd.com/gpu")
    if str(gpu) != "1":
        out.append(f"singleuser.extraResource.limits['amd.com/gpu'] must be 1 (one GPU per learner), not {gpu!r}")
    if [k for k in limits if k.endswith("/gpu") and k != "amd.com/gpu"]:
        out.append("a non-AMD GPU resource is requested")
    if not str(su.get("image", {}).get("tag", "")).startswith("rocm"):
        out.append("singleuser.image must be the ROCm image (binder/Dockerfile.rocm, tag rocm*)")
    claims = {d["metadata"]["name"] for d in pvc_docs if d and d.get("kind") == "PersistentVolumeClaim"}
    for d in pvc_docs:
        if d and d.get("kind") == "PersistentVolumeClaim" and "ReadWriteMany" not in d["spec"]["accessModes"]:
            out.append(f"PVC {d['metadata']['name']} must be ReadWriteMany (every learner pod mounts it)")
    storage = su.get("storage", {})
    vols = {v["name"]: v for v in storage.get("extraVolumes", [])}
    mounts = storage.get("extraVolumeMounts", [])
    for m in mounts:
        claim = vols.get(m["name"], {}).get("persistentVolumeClaim", {}).get("claimName")
        if claim not in claims:
            out.append(f"volume mount {m['mountPath']} uses claim {claim!r}, not a PVC in exchange-pvc.yaml")
        if "{username}" not in m.get("subPath", ""):
            out.append(f"{m['mountPath']}: a learner must mount only their own folder (subPath with {{username}})")
        elif m["mountPath"] != f"{EXCHANGE_MOUNT}/{m['subPath']}":
            out.append(f"{m['mountPath']}: mount subPath {m['subPath']} at {EXCHANGE_MOUNT}/{m['subPath']}, where "
                       "rocmlab.workshop.exchange looks for it under ROCMLAB_EXCHANGE")
    fb = [m for m in mounts if "feedback" in m["mountPath"]]
    if not fb or not all(m.get("readOnly") for m in fb):
        out.append("the feedback folder must be mounted read-only")
    env = su.get("extraEnv", {})
    if not any(m["mountPath"].startswith(env.get("ROCMLAB_EXCHANGE", "/nonexistent")) for m in mounts):
        out.append("ROCMLAB_EXCHANGE does not point at the exchange mounts")
    jobs = [d for d in pvc_docs if d and d.get("kind") == "Job"]
    allowed = values.get("hub", {}).get("config", {}).get("Authenticator", {}).get("allowed_users", [])
    for j in jobs:
        c = j["spec"]["template"]["spec"]["containers"][0]
        learners = next(e["value"].split() for e in c["env"] if e["name"] == "LEARNERS")
        if sorted(learners) != sorted(allowed):
            out.append(f"exchange-init Job's LEARNERS {learners} differ from allowed_users {allowed}")
    if not values.get("cull", {}).get("enabled"):
        out.append("cull idle servers, or GPUs stay held by learners who left")
    if str(env.get(references.ENV, "")).lower() != "off":
        out.append(f"singleuser.extraEnv must set {references.ENV}: 'off' (learners' servers load no reference answers)")
    gids = values.get("hub", {}).get("config", {}).get("KubeSpawner", {}).get("supplemental_gids", [])
    if references.GRADER_GID in gids:
        out.append(f"learners' pods get group {references.GRADER_GID}, which reads the locked reference answers")
    return out


EXCHANGE_MOUNT = "/srv/rocmlab/exchange"


def _pvc_docs():
    return list(yaml.safe_load_all((HUB / "exchange-pvc.yaml").read_text()))


def test_values_follow_the_workshop_policy():
    assert policy_problems(load(HUB / "values.yaml"), _pvc_docs()) == []


@pytest.mark.parametrize("mutate, expect", [
    (lambda v, d: v["singleuser"]["extraResource"]["limits"].update({"amd.com/gpu": 2}), "must be 1"),
    (lambda v, d: v["singleuser"]["extraResource"].update(limits={"nvidia.com/gpu": 1}), "must be 1"),
    (lambda v, d: v["singleuser"]["storage"]["extraVolumeMounts"][0].update(subPath="inbound"), "own folder"),
    (lambda v, d: v["singleuser"]["storage"]["extraVolumeMounts"][1].pop("readOnly"), "read-only"),
    (lambda v, d: v["singleuser"]["storage"]["extraVolumeMounts"][1].update(mountPath="/srv/rocmlab/exchange/feedback"),
     "where rocmlab.workshop.exchange looks"),
    (lambda v, d: d[0]["spec"].update(accessModes=["ReadWriteOnce"]), "ReadWriteMany"),
    (lambda v, d: v["hub"]["config"]["Authenticator"]["allowed_users"].append("learner09"), "LEARNERS"),
    (lambda v, d: v["singleuser"]["image"].update(tag="latest"), "ROCm image"),
    (lambda v, d: v["singleuser"]["extraEnv"].pop("ROCMLAB_REFERENCES"), "load no reference answers"),
    (lambda v, d: v["hub"]["config"]["KubeSpawner"]["supplemental_gids"].append(2000), "reads the locked reference"),
])
def test_policy_catches_a_broken_workshop(mutate, expect):
    values, docs = load(HUB / "values.yaml"), _pvc_docs()
    mutate(values, docs)
    problems = policy_problems(values, docs)
    assert any(expect in p for p in problems), problems


def test_hub_extra_config_gives_the_grading_profile_to_admins_only():
    from traitlets.config import Config

    values = load(HUB / "values.yaml")
    c = Config()
    for name, code in values["hub"]["extraConfig"].items():
        exec(compile(code, f"hub.extraConfig.{name}", "exec"), {"c": c})
    profiles = c.KubeSpawner.profile_list

    def spawner(admin):
        return SimpleNamespace(user=SimpleNamespace(name="u", admin=admin))

    learner, admin = profiles(spawner(False)), profiles(spawner(True))
    assert len(learner) == 1 and "kubespawner_override" not in learner[0]
    assert len(admin) == 2
    override = admin[1]["kubespawner_override"]
    assert override["extra_resource_limits"] == {}                       # grading holds no GPU
    mounts = {m["mountPath"] for m in override["volume_mounts"]}
    assert {"/home/jovyan", "/srv/rocmlab/exchange"} == mounts           # the home stays mounted
    # bubblewrap in the grading pod needs namespaces: the container's seccomp default refuses them
    assert override["extra_container_config"]["securityContext"]["seccompProfile"] == {"type": "Unconfined"}
    assert "seccompProfile" not in str(learner[0])                        # learners keep the default
    # the grading pod alone reads the locked references (group GRADER_GID) and loads them (the setting not off);
    # its environment keeps every other variable the learners' servers have
    assert references.GRADER_GID in override["supplemental_gids"]
    assert set(values["hub"]["config"]["KubeSpawner"]["supplemental_gids"]) < set(override["supplemental_gids"])
    env = override["environment"]
    assert env[references.ENV] != "off" and references.ENV in values["singleuser"]["extraEnv"]
    assert {k: v for k, v in env.items() if k != references.ENV} == {
        k: v for k, v in values["singleuser"]["extraEnv"].items() if k != references.ENV}


# ----------------------------------------------------------------------------- shared node: one GPU per learner

from rocmlab.workshop import seats as gpus  # noqa: E402  (the seat assigner the TLJH config loads)


def test_eight_learners_get_eight_distinct_gpus_and_keep_them(tmp_path):
    a = gpus.GpuAssigner(tmp_path / "state.json", 8)
    users = [f"learner{i:02d}" for i in range(1, 9)]
    import random
    random.shuffle(users)
    got = {u: a.assign(u) for u in users}
    assert sorted(got.values()) == list(range(8))
    again = gpus.GpuAssigner(tmp_path / "state.json", 8)            # a restarted hub reads the same file
    assert {u: again.assign(u) for u in reversed(users)} == got


def test_a_ninth_learner_gets_a_clear_error_until_a_gpu_is_released(tmp_path):
    a = gpus.GpuAssigner(tmp_path / "state.json", 8)
    for i in range(8):
        a.assign(f"u{i}")
    with pytest.raises(gpus.NoFreeGpu, match=r"all 8 GPUs on this node are assigned \(0: u0, 1: u1"):
        a.assign("late")
    assert a.release("u3") and not a.release("nobody")
    assert a.assign("late") == 3


def test_no_gpu_is_a_clear_error(tmp_path):
    with pytest.raises(gpus.NoFreeGpu, match="no AMD GPU found"):
        gpus.GpuAssigner(tmp_path / "s.json", 0)


def _assign_in_process(args):
    path, user = args
    return user, gpus.GpuAssigner(path, 8).assign(user)


def test_concurrent_spawns_never_share_a_gpu(tmp_path):
    users = [f"p{i}" for i in range(8)]
    with multiprocessing.get_context("fork").Pool(4) as pool:
        got = dict(pool.map(_assign_in_process, [(str(tmp_path / "s.json"), u) for u in users]))
    assert sorted(got.values()) == list(range(8)), got


def test_count_gpus_reads_the_kfd_topology(machine):
    machine.write("sys/class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 64\nsimd_count 0\n")
    for node in range(1, 9):
        machine.add_kfd_gpu(node, 90402, simds=1216, wave=64, mem_bytes=192 << 30)
    nodes = str(machine.root / "sys/class/kfd/kfd/topology/nodes")
    assert gpus.count_gpus(nodes, env={}) == 8
    assert gpus.count_gpus(nodes, env={"ROCMLAB_WORKSHOP_GPUS": "4"}) == 4
    assert gpus.count_gpus(str(machine.root / "nowhere"), env={}) == 0
    with pytest.raises(ValueError, match="positive"):
        gpus.count_gpus(nodes, env={"ROCMLAB_WORKSHOP_GPUS": "0"})


def _fake_spawner(name):
    logs = []
    return SimpleNamespace(user=SimpleNamespace(name=name), environment={"KEEP": "1"},
                           log=SimpleNamespace(info=lambda *a: logs.append(a[0] % a[1:]))), logs


def test_pre_spawn_hook_sets_hip_visible_devices_and_the_hand_in_folder(tmp_path):
    a = gpus.GpuAssigner(tmp_path / "s.json", 8)
    a.assign("someone-else")
    chowned = []
    hook = gpus.make_pre_spawn_hook(a, exchange=tmp_path / "exchange", chown=lambda p, u, g: chowned.append(p))
    sp, logs = _fake_spawner("root")                # a user that exists here: its uid is looked up
    hook(sp)
    assert sp.environment["HIP_VISIBLE_DEVICES"] == "1" and sp.environment["KEEP"] == "1"
    inbound = tmp_path / "exchange" / "inbound" / "root"
    feedback = tmp_path / "exchange" / "outbound" / "feedback" / "root"
    assert inbound.is_dir() and (inbound.stat().st_mode & 0o777) == 0o700 and chowned == [inbound, feedback]
    assert (feedback.stat().st_mode & 0o777) == 0o750 and sp.environment["ROCMLAB_EXCHANGE"] == str(tmp_path / "exchange")
    assert "root gets GPU 1" in logs[0]
    sp2, _ = _fake_spawner("no-such-unix-user-x")
    hook(sp2)
    assert sp2.environment["HIP_VISIBLE_DEVICES"] == "2" and len(chowned) == 2   # nobody to chown to
    admin, logs = _fake_spawner("instructor")
    admin.user.admin = True
    hook(admin)                                      # the instructor takes no seat, and gets the exchange
    assert "HIP_VISIBLE_DEVICES" not in admin.environment and "instructor" not in a.assignments()
    assert admin.environment["ROCMLAB_EXCHANGE"] == str(tmp_path / "exchange") and "no GPU seat" in logs[0]


def test_tljh_config_d_wires_the_hook(tmp_path, monkeypatch):
    from traitlets.config import Config

    monkeypatch.setenv("ROCMLAB_WORKSHOP_GPUS", "8")
    monkeypatch.setenv("ROCMLAB_GPU_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("ROCMLAB_EXCHANGE", str(tmp_path / "exchange"))
    conf = tmp_path / "config"
    (conf / "jupyterhub_config.d").mkdir(parents=True)
    src = conf / "jupyterhub_config.d" / "rocmlab.py"
    src.write_text((TLJH / "jupyterhub_config.d" / "rocmlab.py").read_text())
    c = Config()
    monkeypatch.setattr(sys, "path", list(sys.path))
    exec(compile(src.read_text(), str(src), "exec"), {"c": c, "__file__": str(src)})
    assert c.JupyterHub.active_server_limit == 9          # 8 learners' GPUs and the instructor
    assert c.SystemdSpawner.unit_extra_properties["SupplementaryGroups"] == "video render"
    sp, _ = _fake_spawner("no-such-unix-user-y")
    c.Spawner.pre_spawn_hook(sp)
    assert sp.environment["HIP_VISIBLE_DEVICES"] == "0"
    assert json.loads((tmp_path / "state.json").read_text()) == {"no-such-unix-user-y": 0}


def test_tljh_recipe_has_no_more_learners_than_gpus_and_valid_scripts():
    cfg = load(TLJH / "config.yaml")
    assert 1 <= len(cfg["users"]["allowed"]) <= gpus.plan(8, "CPX", "NPS4").seats      # one seat each, CPX
    assert not set(cfg["users"]["admin"]) & set(cfg["users"]["allowed"])
    install = TLJH / "install.sh"
    assert os.access(install, os.X_OK)
    subprocess.run(["bash", "-n", str(install)], check=True)
    r = subprocess.run([sys.executable, "-m", "rocmlab.cli", "seats", "list", "--state", "/nonexistent/s.json"],
                       capture_output=True, text=True, env=dict(os.environ, ROCMLAB_WORKSHOP_GPUS="8"))
    assert r.returncode == 2 and "does not exist" in r.stderr and not Path("/nonexistent").exists(), r.stderr


# ----------------------------------------------------------------------------- the ROCm image

def dockerfile_problems(text: str) -> list[str]:
    """The ROCm image must keep the base image's ROCm torch: every pip install runs under the torch pin."""
    out = []
    logical = re.sub(r"\\\n", " ", text)
    pips = re.findall(r"pip install[^&\n]*", logical)
    if not pips:
        out.append("no pip install")
    for p in pips:
        if "-c /tmp/keep-torch.txt" not in p:
            out.append(f"pip install without the torch constraint: {p.strip()[:80]}")
    if "torch.__version__" not in logical or "> /tmp/keep-torch.txt" not in logical:
        out.append("the constraint file is not written from the installed torch")
    if "assert torch.version.hip, 'torch was replaced'" not in logical:
        out.append("no check after install that torch is still the ROCm build")
    if "jupyterhub==" not in logical:
        out.append("jupyterhub-singleuser is missing (the JupyterHub image needs it)")
    if "useradd -m -u 1000" not in logical:
        out.append("no jovyan user with uid 1000 (Zero to JupyterHub runs the pod as uid 1000)")
    lock = re.search(rf'if \[ "\$REFERENCES" = withheld \]; then rocmlab references lock '
                     rf'--group {references.GRADER_GID}; fi', logical)
    chmods = [m.start() for m in re.finditer(r"chmod -R a\+rX", logical)]
    if not lock or any(c > lock.start() for c in chmods):
        out.append(f"no `REFERENCES=withheld` step locking the references to group {references.GRADER_GID} after "
                   "the last chmod (a chmod after it opens them again)")
    return out


def test_rocm_dockerfile_keeps_torch_and_serves_jupyterhub():
    assert dockerfile_problems((BINDER / "Dockerfile.rocm").read_text()) == []


def test_dockerfile_check_fails_when_the_reference_lock_is_missing_or_undone():
    text = (BINDER / "Dockerfile.rocm").read_text()
    assert any("locking the references" in p for p in dockerfile_problems(text.replace("lock --group", "list --group")))
    assert any("locking the references" in p for p in dockerfile_problems(text + "RUN chmod -R a+rX /opt/rocmlab\n"))


def test_dockerfile_check_fails_on_an_unconstrained_pip_install():
    text = (BINDER / "Dockerfile.rocm").read_text() + '\nRUN python3 -m pip install "vllm"\n'
    assert any("without the torch constraint" in p for p in dockerfile_problems(text))
    assert any("still the ROCm build" in p for p in dockerfile_problems("FROM x\nRUN pip install -c /tmp/keep-torch.txt y\n"))
