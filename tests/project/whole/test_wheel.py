"""The wheel carries the whole course, into the environment a learner already has. The session's one wheel
(tests/helpers/wheel_env.py) is built from a copy of the repository's tracked files plus the leftovers of a used
checkout (a learner's my-work/ and notebook checkpoints, which must not ship), and installed into a fresh venv that,
like a ROCm PyTorch image, already holds a torch (this environment's, shown to it by a ``.pth`` file) and
JupyterLab; the wheel brings its own dependencies with the ``triton`` extra the set-up page names and must leave
the image's torch as it was. From there, in a temporary home, ``rocmlab doctor`` answers and ``rocmlab labs DEST``
copies the labs, the same notebooks as the checkout's. Every lab runs from the wheel at the CI sizes
(ROCMLAB_QUICK=1): the session's one run of each lab (tests/helpers/views.py ``executed``) is made in the wheel's
venv and kernel, so the labs run once for this test, the notebook test (with nbval's checked outputs) and the
browser's view test. Every lab must pass."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.helpers import wheel_env
from tests.helpers.views import SESSION, executed

ROOT = Path(__file__).resolve().parents[3]
#: the course's files a lab reads, which must be in the wheel
MUST_SHIP = ("rocmlab/course/labs/lab02_porting_cuda_to_hip/samples/reduce_intrinsics/src/ballot_count.cu",
             "rocmlab/_setup/20-rocm-root.sh", "rocmlab/_setup/lib.sh", "rocmlab/_labs/00-setup.ipynb",
             "rocmlab/_labs/exercises/01-vector-add.ipynb", "rocmlab/exercises/common/exercise_io.h")


@pytest.mark.timeout(5400)
def test_the_wheel_from_tracked_files_installs_into_jupyterlab_and_runs_every_lab(tmp_path):
    if not wheel_env.can_build():
        pytest.skip("not a git checkout that git reads here (git ls-files): the wheel is built from the tracked files")
    wheel, venv = wheel_env.session_wheel(SESSION)
    names = zipfile.ZipFile(wheel).namelist()
    shipped_leftovers = [n for n in names if "my-work" in n or ".ipynb_checkpoints" in n]
    assert not shipped_leftovers, shipped_leftovers
    assert not [m for m in MUST_SHIP if m not in names], [m for m in MUST_SHIP if m not in names]
    assert not [n for n in names if n.startswith("tests/")]

    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "ROCMLAB_HOME": str(home / ".cache" / "rocmlab"), "TMPDIR": str(tmp_path), "ROCMLAB_QUICK": "1"}
    from rocmlab import paths
    if (paths.rocm_root() / ".rocmlab-ready").is_file():     # the offline compiler this machine already has
        env["ROCMLAB_ROCM_ROOT"] = str(paths.rocm_root())
    run = wheel_env.run
    where = run([venv / "bin" / "python", "-c", "import rocmlab; print(rocmlab.__file__)"], cwd=home, env=env)
    assert where.stdout.strip().startswith(str(venv)), where.stdout      # the installed wheel, not the checkout
    assert run([venv / "bin" / "rocmlab", "doctor", "--json"], cwd=home, env=env).stdout.strip().startswith("{")
    assert (venv / "bin" / "jupyter-lab").is_file()                      # the learner's JupyterLab is still there

    labs = home / "labs"
    run([venv / "bin" / "rocmlab", "labs", labs], cwd=home, env=env)
    copied = {str(p.relative_to(labs)) for p in labs.rglob("*") if p.is_file()}
    assert not [n for n in copied if n.split("/")[-1] in ("conftest.py", "nbval_sanitize.cfg") or "my-work" in n]
    books = sorted(p.name for p in labs.glob("*.ipynb"))
    assert books == sorted(p.name for p in (ROOT / "labs").glob("*.ipynb")), books
    assert len(books) >= 12, books
    differ = [b for b in books if (labs / b).read_bytes() != (ROOT / "labs" / b).read_bytes()]
    assert not differ, f"the wheel's labs are not the checkout's: {differ}"
    assert not (labs / "my-work").exists() and not (home / ".cache" / "rocmlab" / "progress.json").exists()

    # every lab, run once this session in the wheel's venv and kernel (shared with the notebook and view tests)
    failed, kernels = {}, {}
    for book in books:
        try:
            out = executed(ROOT / "labs" / book)
        except Exception as exc:                 # noqa: BLE001 - every lab's outcome, then one assertion
            failed[book] = str(exc)[-1500:]
            continue
        kernels[book] = json.loads(out.with_name(out.name + ".kernel").read_text() or "[null]")[0]
    print(json.dumps({"failed": sorted(failed), "kernels": kernels}, indent=1))
    assert not failed, "from the wheel (with the triton extra) every lab should pass:\n" + "\n\n".join(
        f"{k}: {v}" for k, v in failed.items())
    outside = {b: k for b, k in kernels.items() if not str(k).startswith(str(venv))}
    assert not outside, f"labs whose kernel was not the wheel venv's Python: {outside}"


def test_the_kernel_record_is_the_python_that_ran_the_notebook(tmp_path):
    """What the wheel test reads to know a lab ran in the wheel's venv (``NOTEBOOK.kernel``, written by
    wheel_env.execute_in_venv) names the Python the kernel really ran: here a one-cell notebook, run with this
    environment's venv, prints its ``sys.executable``, and the record names the same venv (the control of the wheel
    test's check: a lab run outside the wheel's venv is recorded as such)."""
    import sys

    import nbformat

    venv = Path(sys.prefix)
    if not (venv / "bin" / "python").is_file():
        pytest.skip("this Python is not a venv's")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("quick = None", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("import sys; print(sys.executable)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src = tmp_path / "one.ipynb"
    nbformat.write(nb, str(src))
    (tmp_path / "out").mkdir()
    out = wheel_env.execute_in_venv(venv, src, tmp_path / "out" / "one.ipynb")
    printed = nbformat.read(str(out), as_version=4).cells[-1].outputs[0]["text"].strip()
    recorded = json.loads(out.with_name(out.name + ".kernel").read_text())[0]
    assert printed.startswith(str(venv)) and recorded.startswith(str(venv)), (printed, recorded)
    assert Path(printed).parent == Path(recorded).parent, (printed, recorded)
