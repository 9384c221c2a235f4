"""Learners cannot reach each other, the instructor's material or the hub: a real hub with 3 learners as 3 Unix
users. For each learner, as that user, through their own server's contents API and a terminal (the terminals
REST API and its websocket, as JupyterLab's terminal), try to read and write another learner's home and
hand-ins, hand in as them, read the instructor's grading folder, the grading seed and the reference
solutions, read another learner's feedback, read the hub's config, and kill another learner's kernel.

Every attempt must fail with a permission error in the workshop mode (``mode="users"``), and the control,
the same attempts on the one-user ``mode="dry-run"`` hub, must succeed (and read the real secret), so a
"denied" here is the permissions at work, not a wrong path. The table of outcomes goes to
test-artifacts/hub/isolation.md. Needs root (the hub creates the Unix users, and removes them afterwards).
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from rocmlab.grader.spec import load
from rocmlab.workshop.hub import HubError, jupyterhub

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("ROCMLAB_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "hub"
LEARNERS = ["learner01", "learner02", "learner03"]
PREFIX = f"rl{secrets.token_hex(2)}-"          # this run's Unix users: removed by the hub on exit
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the workshop hub runs as root (it creates users)")
RESULTS: dict[str, dict] = {}                   # mode -> {(attempt, route): (outcome, detail)}


def victim_of(name: str) -> str:
    return LEARNERS[(LEARNERS.index(name) + 1) % len(LEARNERS)]


def _setup(hub) -> dict:
    """Each learner: a secret in their home, a hand-in from their kernel, graded feedback, a running kernel."""
    secret = {n: f"secret of {n} {secrets.token_hex(8)}" for n in LEARNERS}
    for n in LEARNERS:
        hub.put_file(n, "secret.txt", secret[n] + "\n")
        hub.put_file(n, "vector_add.hip", f"// {secret[n]}\n" + load("vector-add").solution)
        hub.spawn(n, timeout_s=240)
        out = hub.terminal(n, "rocmlab handin vector-add ~/vector_add.hip", timeout_s=180)
        assert "handed in" in out, out
    seed = hub.instructor_dir / "grading-seed"          # a 0600 file: the seed never on a command line
    r = subprocess.run([sys.executable, "-m", "rocmlab.cli", "grade", "--exchange", str(hub.exchange), "--exercise",
                        "vector-add", "--seed-file", str(seed), "--no-progress"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and "3 feedback returned" in r.stdout, r.stdout + r.stderr
    kernels = {}
    for n in LEARNERS:
        status, k = hub.request(f"/user/{n}/api/kernels", "POST", {"name": "python3"}, timeout=120)
        assert status == 201, k
        server = hub.server_process(n)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and n not in kernels:
            for child in server.children(recursive=True):
                if k["id"] in " ".join(child.cmdline()):
                    kernels[n] = child.pid
            time.sleep(0.2)
        assert n in kernels, f"no kernel process for {n}"
    return {"secret": secret, "kernels": kernels}


def _terminal_attempts(hub, me: str, other: str, kernel_pid: int) -> dict:
    H, X, inst = hub.home(other), hub.exchange, hub.instructor_dir
    return {
        "read another learner's home": f"cat {H}/secret.txt",
        "write into another learner's home": f"echo forged > {H}/planted-by-{me}.txt",
        "list another learner's hand-ins": f"ls {X}/inbound/{other}/vector-add",
        "read another learner's hand-in": f"cat {X}/inbound/{other}/vector-add/*.hip",
        "hand in as another learner (rocmlab handin --learner)":
            f"printf 'int main(){{}}\\n' > ~/forged.hip && rocmlab handin vector-add ~/forged.hip --learner {other}",
        "write a file into another learner's hand-ins":
            f"echo forged > {X}/inbound/{other}/vector-add/99999999T000000000000Z-{me}.hip",
        "read the instructor's grading folder": f"cat {X}/grades/grades.csv",
        "read the grading seed": f"cat {inst}/grading-seed",
        "read the reference solutions": f"cat {inst}/references/vector-add.hip",
        "read another learner's feedback": f"cat {X}/outbound/feedback/{other}/vector-add.txt",
        "read the hub's config (its token and password)": f"cat {hub.state}/jupyterhub_config.py",
        "read /etc/shadow": "cat /etc/shadow",
        "kill another learner's kernel": f"kill -9 {kernel_pid}",
    }


def _run_terminal(hub, me: str, attempts: dict, links: dict) -> dict:
    lines = [f"ln -sfn {target} ~/{name}" for name, target in links.items()]
    for i, cmd in enumerate(attempts.values()):
        lines.append(f'out=$( ({cmd}) 2>&1 ) && r=OK || r=DENIED; '
                     f'echo "R|{i}|$r|$(printf %s "$out" | sed "s|^.*attempts.sh: line [0-9]*: ||" | head -c 300 | tr "\\n|" "  ")"')
    script = hub.home(me) / ".attempts.sh"
    hub.put_file(me, ".attempts.sh", "\n".join(lines) + "\n")
    got = {}
    out = hub.terminal(me, f"bash {script}", timeout_s=120)
    for line in out.splitlines():
        if line.startswith("R|"):
            _, i, outcome, detail = line.split("|", 3)
            got[list(attempts)[int(i)]] = (outcome, detail.strip())
    assert len(got) == len(attempts), out
    return got


def _contents_attempts(hub, me: str) -> dict:
    """(attempt -> (method, path in the attacker's server, text to write)) through the links in their home."""
    return {
        "read another learner's home": ("GET", "peek-home/secret.txt", None),
        "write into another learner's home": ("PUT", f"peek-home/planted-c-{me}.txt", "forged"),
        "list another learner's hand-ins": ("GET", "peek-inbound/vector-add", None),
        "write a file into another learner's hand-ins":
            ("PUT", f"peek-inbound/vector-add/99999999T000000000001Z-{me}.hip", "// forged"),
        "read the instructor's grading folder": ("GET", "peek-grades/grades.csv", None),
        "read the grading seed": ("GET", "peek-instructor/grading-seed", None),
        "read the reference solutions": ("GET", "peek-instructor/references/vector-add.hip", None),
        "read another learner's feedback": ("GET", "peek-feedback/vector-add.txt", None),
        "read the hub's config (its token and password)": ("GET", "peek-hub/jupyterhub_config.py", None),
    }


@pytest.fixture(scope="module", params=["users", "dry-run"])
def hub(request, needs_proxy, no_leftovers):
    base = Path(tempfile.mkdtemp(prefix="rocmlab-hub-iso-"))
    os.chmod(base, 0o711)
    with jupyterhub(base, LEARNERS, n_gpus=3, mode=request.param, user_prefix=PREFIX, cull_idle_s=None,
                    mem_limit="2G", cpu_limit=1.0) as h:
        h.setup = _setup(h)
        yield h
        no_leftovers |= h.remember_pids()
    assert not [p.pw_name for p in pwd.getpwall() if p.pw_name.startswith(PREFIX)], "users left behind"


def test_each_learner_runs_as_their_own_user_in_a_private_home(hub):
    uids = set()
    for n in LEARNERS:
        p = hub.server_process(n)
        home = hub.home(n)
        if hub.mode == "users":
            assert p.username() == f"{PREFIX}{n}" and p.uids().real != 0, p.username()
            assert home.stat().st_uid == p.uids().real and (home.stat().st_mode & 0o777) == 0o700
            uids.add(p.uids().real)
        else:
            assert p.uids().real == os.geteuid()      # the control: every server as the hub's user
    assert len(uids) == (3 if hub.mode == "users" else 0)


def test_no_learner_reaches_another_learner_the_instructor_or_the_hub(hub):
    secret, kernels = hub.setup["secret"], hub.setup["kernels"]
    X, inst = hub.exchange, hub.instructor_dir
    table = RESULTS.setdefault(hub.mode, {})
    for me in LEARNERS:
        other = victim_of(me)
        links = {"peek-home": hub.home(other), "peek-inbound": X / "inbound" / other, "peek-grades": X / "grades",
                 "peek-instructor": inst, "peek-feedback": X / "outbound" / "feedback" / other, "peek-hub": hub.state}
        attempts = _terminal_attempts(hub, me, other, kernels[other])
        for name, (outcome, detail) in _run_terminal(hub, me, attempts, links).items():
            table[(name, "terminal", me)] = (outcome, detail)
        for name, (method, path, text) in _contents_attempts(hub, me).items():
            status, body = hub.contents(me, path, method, text)
            detail = body.get("message", "") if isinstance(body, dict) else str(body)[:80]
            if status < 300 and method == "GET" and "content" in (body or {}):
                c = body["content"]
                detail = ", ".join(i["name"] for i in c) if isinstance(c, list) else str(c)[:60]
            if status == 500:          # the server's own PermissionError, logged with the path it refused
                refused = f"Permission denied: '{hub.home(me) / path}'"
                deadline = time.monotonic() + 10      # the server's log line can reach the hub's log a little later
                while refused not in hub.log_tail(5000) and time.monotonic() < deadline:
                    time.sleep(0.5)
                if refused in hub.log_tail(5000):
                    detail = f"PermissionError ({detail})"
            table[(name, "contents API", me)] = ("OK" if status < 300 else "DENIED", f"{status} {detail}")

    for (name, route, me), (outcome, detail) in table.items():
        other = victim_of(me)
        if hub.mode == "users":
            assert outcome == "DENIED", (me, route, name, detail)
            if route == "terminal":
                assert any(w in detail for w in ("Permission denied", "Operation not permitted",
                                                 "belongs to another user")), (me, name, detail)
            else:
                assert detail.startswith(("403", "500 PermissionError")), (me, name, detail)
        else:                                  # the control: the same attempt works where all share one user
            assert outcome == "OK", (me, route, name, detail)
            if name == "read another learner's home":
                assert secret[other] in detail, detail
            if name == "read another learner's hand-in":
                assert secret[other] in detail, detail
    for n in LEARNERS:                          # side effects: none in the workshop, all in the control
        planted = (hub.home(n) / f"planted-by-{LEARNERS[LEARNERS.index(n) - 1]}.txt").exists()
        forged = list((X / "inbound" / n / "vector-add").glob("99999999T*"))
        alive = psutil.pid_exists(kernels[n]) and psutil.Process(kernels[n]).status() != psutil.STATUS_ZOMBIE
        if hub.mode == "users":
            assert not planted and not forged and alive, (n, planted, forged, alive)
        else:
            assert planted and len(forged) == 2 and not alive, (n, planted, forged, alive)
    _write_table()


def test_a_learner_still_reads_their_own_feedback_and_hands_in(hub):
    """The controls within the workshop mode: a learner's own folders work for them."""
    me = LEARNERS[0]
    out = hub.terminal(me, "rocmlab handin --feedback vector-add; ls ~/secret.txt; cat ~/secret.txt")
    assert re.search(r"points( \(instructor-graded\))? for hand-in", out) and hub.setup["secret"][me] in out, out
    status, body = hub.contents(me, "secret.txt")
    assert status == 200 and hub.setup["secret"][me] in body["content"], (status, body)
    out = hub.terminal(me, "rocmlab handin vector-add ~/vector_add.hip && echo HANDED-IN")
    assert "HANDED-IN" in out, out


def test_the_instructor_frees_a_seat_and_restarts_a_learners_server_learners_cannot(hub):
    """The named admin (the hub's admin user ``instructor``): a token of theirs stops a learner's server and
    their server frees that learner's seat; a learner's token and terminal can do neither."""
    victim, me = LEARNERS[2], LEARNERS[0]
    tok = {u: hub.api(f"users/{u}/tokens", "POST", {"note": "test", "expires_in": 600})["token"]
           for u in ("instructor", me)}
    status, _ = hub.request(f"/hub/api/users/{victim}/server", "DELETE", token=tok[me])
    assert status in (403, 404), status              # JupyterHub hides users a token may not see: 404
    assert hub.api(f"users/{victim}")["servers"], "a learner's token stopped another learner's server"
    status, _ = hub.request(f"/hub/api/users/{victim}/server", "DELETE", token=tok["instructor"])
    assert status in (202, 204)
    hub.stop_server(victim)
    if hub.mode == "users":
        out = hub.terminal(me, f"python -m rocmlab.cli seats release {victim} --state {hub.seat_state}; "
                               "echo rc=$?")
        assert "Permission denied" in out and "rc=1" in out, out
        assert victim in hub.seat_state.read_text()
    hub.spawn("instructor", timeout_s=240)
    out = hub.execute("instructor", "import os, subprocess, sys\n"
                      f"r = subprocess.run([sys.executable, '-m', 'rocmlab.cli', 'seats', 'release', {victim!r}, "
                      "'--state', os.environ['ROCMLAB_GPU_STATE']], capture_output=True, text=True)\n"
                      "print(r.returncode, r.stdout, r.stderr)")
    assert out.startswith("0 ") and "released" in out, out
    assert victim not in hub.seat_state.read_text()
    hub.spawn(victim, timeout_s=240)              # the admin restarts the learner's server: a seat again
    assert hub.server_env(victim)["HIP_VISIBLE_DEVICES"] in {"0", "1", "2"}


def test_each_server_has_its_memory_and_cpu_limit(hub):
    from rocmlab.workshop.hubconfig import Cgroups

    cg = Cgroups(f"rocmlab-hub-{hub.port}")
    if not cg.available:
        pytest.skip("no writable cgroup here: the limits are not enforced (the hub log says so)")
    n = LEARNERS[0]
    if hub.mode == "users":
        assert cg.limits_of(n) == {"memory_bytes": 2 * 2**30, "cpus": 1.0,
                                   "pids": 1024 if cg.limits_pids else None}, cg.limits_of(n)
        where = Path(f"/proc/{hub.server_process(n).pid}/cgroup").read_text()
        assert f"rocmlab-hub-{hub.port}/{n}" in where, where
        # a kernel that fills more memory than the limit is killed; the control: a small one is not
        with pytest.raises(HubError, match="the kernel died"):
            hub.execute(n, "b = b'x' * (3 * 2**30)\nprint(len(b))", timeout_s=90)
        assert hub.execute(n, "b = b'x' * (64 * 2**20)\nprint(len(b))").strip() == str(64 * 2**20)
    else:
        assert not (cg.bases and any((b / n).exists() for b in cg.bases.values()))


def _write_table() -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    rows = ["| attempt | route | workshop (each learner a Unix user) | control (dry-run, one user) |",
            "|---|---|---|---|"]
    users, dry = RESULTS.get("users", {}), RESULTS.get("dry-run", {})
    for key in sorted({(a, r) for a, r, _ in (*users, *dry)}):
        rows.append(f"| {key[0]} | {key[1]} | {_cell(users, key)} | {_cell(dry, key, key[0] in SECRET)} |")
    (ARTIFACTS / "isolation.md").write_text("\n".join(rows) + "\n")


#: Attempts whose successful control read a real secret of this machine or hub: the table does not show it.
SECRET = {"read /etc/shadow", "read the hub's config (its token and password)"}


def _cell(table: dict, key: tuple, redact: bool = False) -> str:
    got = [v for (a, r, _), v in table.items() if (a, r) == key]
    if not got:
        return "(not run)"
    detail = "(read; not shown)" if redact else " ".join(got[0][1].replace(str(ROOT), "").split())
    detail = detail if len(detail) < 60 else "..." + detail[-57:]
    return f"{'/'.join(sorted({o for o, _ in got}))} x{len(got)}: {detail}"
