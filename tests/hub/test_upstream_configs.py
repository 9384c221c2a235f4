"""binder/tljh and binder/jupyterhub checked against each project's OWN code, schema and defaults (not our
copies of them): give a checkout of each and run

    git clone https://github.com/jupyterhub/the-littlest-jupyterhub /tmp/tljh
    git clone https://github.com/jupyterhub/zero-to-jupyterhub-k8s /tmp/z2jh
    TLJH_SOURCE=/tmp/tljh Z2JH_SOURCE=/tmp/z2jh python -m pytest tests/hub/test_upstream_configs.py

TLJH: config.yaml is validated with TLJH's config_schema.py and merged into a JupyterHub config by TLJH's own
``tljh.configurer.apply_config`` (its defaults included), then our jupyterhub_config.d/rocmlab.py runs on
that config, as TLJH's jupyterhub_config.py loads it. Z2JH: values.yaml, merged over the chart's own
values.yaml (as helm merges them), is validated with the chart's values.schema.yaml. Neither hub nor
cluster is started here (docs/teach/validated.md says what was run and what was only validated). Skipped, with the
reason, when the checkouts are not given.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TLJH = os.environ.get("TLJH_SOURCE")
Z2JH = os.environ.get("Z2JH_SOURCE")


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@pytest.fixture
def tljh(monkeypatch):
    if not TLJH or not (Path(TLJH) / "tljh" / "configurer.py").exists():
        pytest.skip("TLJH_SOURCE is not a the-littlest-jupyterhub checkout (see the module's docstring)")
    monkeypatch.syspath_prepend(TLJH)
    # tljh.yaml needs ruamel.yaml, used only to read config files: apply_config gets our dict directly
    monkeypatch.setitem(sys.modules, "tljh.yaml", types.SimpleNamespace(yaml=None))
    for mod in ("tljh", "tljh.configurer", "tljh.config_schema"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    return importlib.import_module("tljh.configurer"), importlib.import_module("tljh.config_schema")


def _tljh_config(configurer, gpus: int, monkeypatch, tmp_path):
    from traitlets.config import Config

    cfg = yaml.safe_load((ROOT / "binder" / "tljh" / "config.yaml").read_text())
    c = Config()
    configurer.apply_config(cfg, c)
    monkeypatch.setenv("ROCMLAB_WORKSHOP_GPUS", str(gpus))
    monkeypatch.setenv("ROCMLAB_GPU_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("ROCMLAB_EXCHANGE", str(tmp_path / "exchange"))
    src = ROOT / "binder" / "tljh" / "jupyterhub_config.d" / "rocmlab.py"
    exec(compile(src.read_text(), str(src), "exec"), {"c": c, "__file__": str(src)})
    return cfg, c


def test_tljh_config_passes_tljhs_schema_and_configurer(tljh, monkeypatch, tmp_path):
    import jsonschema

    configurer, schema = tljh
    cfg = yaml.safe_load((ROOT / "binder" / "tljh" / "config.yaml").read_text())
    jsonschema.validate(cfg, schema.config_schema)
    bad = _merge(cfg, {"limits": {"memroy": "32G"}})                   # the control: a misspelt key fails
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema.config_schema)
    cfg, c = _tljh_config(configurer, 64, monkeypatch, tmp_path)       # 8 MI300X in CPX: 64 seats
    assert c.Spawner.mem_limit == "32G" and c.Spawner.cpu_limit == 6
    assert c.SystemdSpawner.username_template == "jupyter-{USERNAME}"    # each learner a Unix user
    assert c.Authenticator.allowed_users == set(cfg["users"]["allowed"]) and len(cfg["users"]["allowed"]) == 30
    assert c.Authenticator.admin_users == {"instructor"}
    cull = [s for s in c.JupyterHub.services if s["name"] == "cull-idle"]
    assert cull and "--timeout=3600" in cull[0]["command"]
    assert c.JupyterHub.active_server_limit == 65 and c.SystemdSpawner.isolate_tmp is True


def test_tljh_hub_refuses_more_learners_than_seats(tljh, monkeypatch, tmp_path):
    from rocmlab.workshop.seats import NoFreeGpu

    configurer, _ = tljh
    with pytest.raises(NoFreeGpu, match=r"30 learners but only 8 GPU seats \(logical GPUs on this node\)"):
        _tljh_config(configurer, 8, monkeypatch, tmp_path)                # the same node in SPX


def test_z2jh_values_pass_the_charts_own_schema_over_its_defaults():
    if not Z2JH or not (Path(Z2JH) / "jupyterhub" / "values.schema.yaml").exists():
        pytest.skip("Z2JH_SOURCE is not a zero-to-jupyterhub-k8s checkout (see the module's docstring)")
    import jsonschema

    chart = Path(Z2JH) / "jupyterhub"
    schema = yaml.safe_load((chart / "values.schema.yaml").read_text())
    defaults = yaml.safe_load((chart / "values.yaml").read_text())
    ours = yaml.safe_load((ROOT / "binder" / "jupyterhub" / "values.yaml").read_text())
    merged = _merge(defaults, ours)
    jsonschema.Draft7Validator(schema).validate(merged)
    bad = _merge(merged, {"singleuser": {"extraResources": {"limits": {"amd.com/gpu": 1}}}})   # misspelt
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema).validate(bad)
    su = merged["singleuser"]
    assert su["extraResource"]["limits"] == {"amd.com/gpu": 1} and su["allowPrivilegeEscalation"] is False
    assert merged["cull"]["enabled"] and merged["cull"]["timeout"] == 3600
    assert len(merged["hub"]["config"]["Authenticator"]["allowed_users"]) == 30
