"""A workshop hub started from a course under /tmp (run by tests/hub/test_clone_in_tmp.py, as root, in a mount
namespace where the course and the offline ROCm root are bound under /tmp): prints one JSON object.

    python hub_in_clone.py bound|control WORK ROCM_ROOT USER_PREFIX

``bound``: two learners spawn; each server says where it imports the course from and compiles a ``%%hip`` cell.
``control``: the same hub without binding back what the servers read (``bind_server_reads=False``): one spawn,
which fails; the error Hub.spawn raises, the learner's page and the hub's log are printed.
"""

from __future__ import annotations

import json
import sys

import rocmlab
from rocmlab.workshop.hub import HubError, jupyterhub

LEARNERS = ["learner01", "learner02"]
CELL = ("#include <hip/hip_runtime.h>\n__global__ void scale(float* x, float a, int n) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= a;\n}\n"
        "int main() { return 0; }\n")


def main(how: str, work: str, rocm: str, prefix: str) -> dict:
    out: dict = {"course": rocmlab.__file__, "python": sys.executable}
    with jupyterhub(work, LEARNERS, n_gpus=2, user_prefix=prefix, cull_idle_s=None, rocm_root=rocm,
                    gpu_devices=None, bind_server_reads=how == "bound") as hub:
        out["log_start"] = hub.log_text()[-3000:]
        if how == "bound":
            out["reads"] = hub.server_reads
            for name in LEARNERS:
                hub.spawn(name, timeout_s=300)
            for name in LEARNERS:
                out[name] = hub.execute(name, "import rocmlab, sys\nprint('COURSE', rocmlab.__file__)\n"
                                              "print('PYTHON', sys.executable)", 180)
                out[name] += hub.execute(name, "%load_ext rocmlab\nget_ipython().run_cell_magic('hip', "
                                               f"'--no-run', {CELL!r})", 300)
        else:
            try:
                hub.spawn(LEARNERS[0], timeout_s=180)
                out["error"] = None
            except HubError as exc:
                out["error"] = str(exc)
            out["page"] = hub.page(LEARNERS[0], f"/hub/spawn-pending/{LEARNERS[0]}")
            out["log"] = hub.log_text()[-8000:]
    return out


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(*sys.argv[1:5])))
