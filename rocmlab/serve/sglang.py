"""SGLang recipes, including prefill-decode (PD) disaggregation (article §3.3).

Prefill (reading the prompt, compute-bound) and decode (one token per step, memory-bound)
compete when one engine runs both: a long prefill stalls every running decode, which shows
as TPOT spikes. PD disaggregation runs them on separate workers:

- a **prefill worker** (``--disaggregation-mode prefill``) computes the prompt's KV cache;
- a **decode worker** (``--disaggregation-mode decode``) receives that KV cache and generates;
- the KV cache moves between them over a **transfer backend**
  (``--disaggregation-transfer-backend``: ``mooncake`` or ``nixl`` over RDMA; ``mori`` is
  AMD's; the workers' NICs are named by ``--disaggregation-ib-device``);
- a **router** (``python -m sglang_router.launch_router --pd-disaggregation``) is the one
  OpenAI-compatible endpoint: it sends each request to a prefill and a decode worker (the
  prefill worker's bootstrap port pairs them).

What to measure: the same sweep as for one engine, against the router. Disaggregation should
flatten TPOT (no prefill interrupts decode) at the cost of TTFT (the KV transfer) and of
GPUs (two pools to size). Compare p99 TPOT and TTFT at equal total GPUs.

These recipes need GPUs (and RDMA NICs across nodes); on a CPU the lab shows them only.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from rocmlab.serve.deployment import ServerSpec, preset_env

TRANSFER_BACKENDS = ("mooncake", "nixl", "mori")


@dataclass(frozen=True)
class PDRecipe:
    model: str
    prefill_gpus: str = "0"          # HIP_VISIBLE_DEVICES of the prefill worker
    decode_gpus: str = "1"
    prefill_tp: int = 1
    decode_tp: int = 1
    prefill_port: int = 30000
    decode_port: int = 30001
    bootstrap_port: int = 8998
    router_port: int = 8000
    host: str = "127.0.0.1"
    transfer_backend: str = "mooncake"
    ib_device: str | None = None     # e.g. "mlx5_0" (Mooncake); None: let the backend choose

    def __post_init__(self):
        if self.transfer_backend not in TRANSFER_BACKENDS:
            raise ValueError(f"transfer backend must be one of {TRANSFER_BACKENDS}, got {self.transfer_backend!r}")

    def _worker(self, mode: str) -> tuple[dict, list[str]]:
        prefill = mode == "prefill"
        spec = ServerSpec(model=self.model, engine="sglang", host=self.host,
                          port=self.prefill_port if prefill else self.decode_port,
                          tp=self.prefill_tp if prefill else self.decode_tp, python="python3")
        args = spec.engine_args() + ["--disaggregation-mode", mode,
                                     "--disaggregation-transfer-backend", self.transfer_backend]
        if prefill:
            args += ["--disaggregation-bootstrap-port", str(self.bootstrap_port)]
        if self.ib_device:
            args += ["--disaggregation-ib-device", self.ib_device]
        env = dict(preset_env("sglang-mi300x"), HIP_VISIBLE_DEVICES=self.prefill_gpus if prefill else self.decode_gpus)
        return env, ["python3", "-m", "sglang.launch_server", *args]

    def prefill(self):
        return self._worker("prefill")

    def decode(self):
        return self._worker("decode")

    def router(self) -> list[str]:
        return ["python3", "-m", "sglang_router.launch_router", "--pd-disaggregation",
                "--prefill", f"http://{self.host}:{self.prefill_port}", str(self.bootstrap_port),
                "--decode", f"http://{self.host}:{self.decode_port}",
                "--host", self.host, "--port", str(self.router_port)]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.router_port}"

    def script(self) -> str:
        """The three launches as a shell script (run inside the SGLang ROCm image)."""
        lines = ["# prefill worker, decode worker, router (start in this order; each in the background)"]
        for role in ("prefill", "decode"):
            env, cmd = self._worker(role)
            envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
            lines.append(f"{envs} \\\n  {shlex.join(cmd)} > {role}.log 2>&1 &")
        lines.append(f"{shlex.join(self.router())} > router.log 2>&1 &")
        lines.append(f"# then benchmark the router at {self.url} with rocmlab.serve.bench (same sweep as one engine)")
        return "\n".join(lines)


def single_engine(model: str, port: int = 30000, tp: int = 1) -> ServerSpec:
    """The baseline to compare against: one SGLang engine doing both phases."""
    return ServerSpec(model=model, engine="sglang", port=port, tp=tp, env=preset_env("sglang-mi300x"), python="python3")
