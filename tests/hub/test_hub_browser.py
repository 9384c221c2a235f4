"""A workshop through the hub in a real Chromium (the tests/browser harness): a learner logs in, runs Lab 00,
opens the exercise, edits the starter, hands in; the instructor grades from a kernel of their own server; the
learner opens their feedback in JupyterLab. The learner's server runs as their own Unix user (mode="users"). Screenshots: test-artifacts/hub/."""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from tests.helpers.labharness import Notebook, chromium

from rocmlab.grader.spec import load
from rocmlab.workshop.hub import jupyterhub

ROOT = Path(__file__).resolve().parents[2]
LEARNER = "learner01"
ARTIFACTS = Path(os.environ.get("ROCMLAB_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "hub"
pytestmark = pytest.mark.browser


class _LearnerLab:
    """What labharness.Notebook needs of a server: URLs, here the learner's server behind the hub's proxy
    (the browser holds the learner's login cookie, so no token is in the URL)."""

    def __init__(self, hub, user):
        self.hub, self.user = hub, user

    def url(self, path: str) -> str:
        return f"{self.hub.base}/user/{self.user}/{path.lstrip('/')}"


def _notebook(*sources: str) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nbformat.writes(nb)


def _shot(page, name: str, locator=None) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    (locator or page).screenshot(path=str(path))
    return path


@pytest.fixture(scope="module")
def hub(needs_proxy, no_leftovers):
    if os.geteuid() != 0:
        pytest.skip("the workshop hub runs as root (each learner is a Unix user of their own)")
    base = Path(tempfile.mkdtemp(prefix="rocmlab-hub-browser-"))
    os.chmod(base, 0o711)
    with jupyterhub(base, [LEARNER, "learner02"], n_gpus=2, user_prefix=f"rl{secrets.token_hex(2)}-") as h:
        h.put_file(LEARNER, "00-setup.ipynb", (ROOT / "labs" / "00-setup.ipynb").read_bytes())
        h.put_file(LEARNER, "vector_add.hip", load("vector-add").starter)        # the exercise, as handed out
        h.put_file(LEARNER, "handin.ipynb", _notebook("from rocmlab.workshop import exchange\n\n"
                                                      "path = exchange.handin('vector-add', 'vector_add.hip')\n"
                                                      "print('handed in', path.name)"))
        h.put_file(LEARNER, "feedback.ipynb", _notebook("from rocmlab.workshop import exchange\n\n"
                                                        "exchange.feedback('vector-add')"))
        yield h
        no_leftovers |= h.remember_pids()


@pytest.fixture(scope="module")
def browser(no_leftovers, tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("hub-chromium")) as ctx:
        yield ctx


def test_learner_hands_in_instructor_grades_learner_reads_feedback(hub, browser):
    t0 = time.monotonic()
    # the instructor logs in meanwhile (their server starts while the learner works)
    instructor = ThreadPoolExecutor(1)
    instructor_ready = instructor.submit(hub.spawn, "instructor")
    page = browser.new_page()
    page.goto(f"{hub.base}/hub/login", wait_until="domcontentloaded")
    page.fill("#username_input", LEARNER)
    page.fill("#password_input", hub.password)
    page.click("#login_submit")
    page.wait_for_url(re.compile(rf"/user/{LEARNER}/lab"), timeout=180_000)   # spawned by the hub
    page.wait_for_selector(".jp-LabShell", timeout=120_000)
    _shot(page, "01-learner-lab")
    env = hub.server_env(LEARNER)
    assert env["HIP_VISIBLE_DEVICES"] == "0" and env["JUPYTERHUB_USER"] == LEARNER
    assert hub.server_process(LEARNER).username() == hub.system_user(LEARNER)      # their own Unix user
    lab = _LearnerLab(hub, LEARNER)

    nb = Notebook.open(browser, lab, "00-setup.ipynb")
    cells = nb.run_all(timeout_s=240)
    assert all(re.fullmatch(r"\[\d+\]:", c["prompt"]) for c in cells if c["code"])
    _shot(nb.page, "02-lab00-run-all")
    nb.close()

    # a first hand-in of the untouched starter (from the learner's kernel), which the grader must NOT take
    first = hub.execute(LEARNER, "from rocmlab.workshop import exchange\n"
                                 "print(exchange.handin('vector-add', 'vector_add.hip').name)").strip()

    # open the exercise in JupyterLab's editor, replace the CUDA starter with a HIP port, save
    ed = browser.new_page()
    ed.goto(lab.url("lab/tree/vector_add.hip?reset"), wait_until="domcontentloaded")
    editor = ed.locator(".jp-FileEditor .cm-content")
    editor.wait_for(timeout=90_000)
    ed.wait_for_function("() => document.querySelector('.jp-FileEditor .cm-content').textContent.includes('cuda')")
    editor.click()
    ed.keyboard.press("Control+a")
    port = load("vector-add").solution
    ed.keyboard.insert_text(port)
    ed.keyboard.press("Control+s")
    saved = hub.home(LEARNER) / "vector_add.hip"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and saved.read_text().strip() != port.strip():
        time.sleep(0.25)
    assert saved.read_text().strip() == port.strip(), "the edited exercise was not saved as typed"
    _shot(ed, "03-exercise-edited")
    ed.close()

    nb = Notebook.open(browser, lab, "handin.ipynb")
    nb.run_all(timeout_s=120)
    shown = nb.page.locator(".jp-OutputArea-output").all_text_contents()
    assert any("handed in" in t for t in shown), shown
    _shot(nb.page, "04-handed-in")
    nb.close()

    # the instructor grades, in a kernel of their own server (no GPU seat, the whole exchange)
    instructor_ready.result(timeout=300)
    instructor.shutdown()
    seed = hub.instructor_dir / "grading-seed"           # the instructor's own seed: no learner can read it
    out = hub.execute("instructor", "import os, subprocess, sys\n"
                      "r = subprocess.run([sys.executable, '-m', 'rocmlab.cli', 'grade', '--exchange', "
                      "os.environ['ROCMLAB_EXCHANGE'], '--exercise', 'vector-add', '--no-progress', '--seed-file', "
                      f"{str(seed)!r}], "
                      "capture_output=True, text=True)\nprint(r.returncode, r.stdout, r.stderr)", timeout_s=300)
    assert out.startswith("0 ") and "1 learners, 2 hand-ins" in out, out
    result = json.loads((hub.exchange / "grades" / "results" / f"{LEARNER}__vector-add.json").read_text())
    info = json.loads((hub.exchange / "outbound" / "feedback" / LEARNER / "vector-add.json").read_text())
    assert info["handin"] != first and info["count"] == 2, (info, first)
    assert result["earned"] > 0, json.dumps(result)[:3000]   # the starter would earn 0: the port was graded

    nb = Notebook.open(browser, lab, "feedback.ipynb")
    nb.run_all(timeout_s=120)
    fb = nb.page.locator(".rocmlab-feedback")
    fb.wait_for(timeout=30_000)
    text = fb.inner_text()
    assert f"{result['earned']:g} / {result['possible']:g} points" in text and "hand-in 2 of 2" in text, text
    assert "compiles" in text, text
    _shot(nb.page, "05-learner-feedback")
    _shot(nb.page, "05-learner-feedback-output", locator=fb)
    nb.close()
    page.close()
    print(f"browser workshop flow: {time.monotonic() - t0:.0f} s")
