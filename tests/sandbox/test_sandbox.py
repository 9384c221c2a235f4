"""rocmlab.sandbox.run: isolation (read-only system, one writable scratch, own pid/net namespaces, a clean
environment, no GPU nodes unless asked), limits (wall, CPU, memory, processes, file size, output) and a clean
stop on interrupts. Each isolation test has a control: the same thing works outside the sandbox."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid

import pytest

from rocmlab import sandbox, settings
from rocmlab.sandbox import Limits, bubblewrap, guard, run, run_limited, spawn

PY = "/usr/bin/python3"          # the system python: visible inside the sandbox (a venv under /root or /home is not)
HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

needs_bwrap = pytest.mark.skipif(sandbox.isolation().level != sandbox.BWRAP,
                                 reason=f"bubblewrap does not run here: {sandbox.isolation().reason}")


def py(code: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(code)]


def _alive(marker: str) -> list[str]:
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(d)
            except OSError:
                pass
    return found


def _running(argv: list[str]) -> bool:
    """Whether a process runs with exactly this command line."""
    want = "\0".join(argv).encode() + b"\0"
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if f.read() == want:
                        return True
            except OSError:
                pass
    return False


@pytest.fixture
def scratch():
    with tempfile.TemporaryDirectory() as d:
        yield d


# --- what it keeps from the old runner ----------------------------------------------------------------

def test_ok_and_stderr_warning_is_not_failure(scratch):
    r = run(py("import sys; print('hi'); print('warning: x', file=sys.stderr)"), scratch=scratch)
    assert r.ok and r.stdout == "hi\n" and "warning" in r.stderr
    assert r.isolation == sandbox.isolation().description


def test_timeout_kills_everything(scratch):
    marker = f"7{uuid.uuid4().int % 10**6}.5"
    r = run(py(f"import subprocess,time; subprocess.Popen(['sleep','{marker}']); time.sleep(60)"),
            scratch=scratch, limits=Limits(wall_s=1.0))
    assert r.timed_out and not r.ok and r.returncode is None
    assert r.duration_s < 5 and "time limit" in r.explain()
    assert _alive(marker) == []


def test_segfault_exit_status_and_missing_program(scratch):
    assert run(py("import ctypes; ctypes.string_at(0)"), scratch=scratch).signal == "SIGSEGV"
    r = run(py("import sys; print('bad input', file=sys.stderr); sys.exit(3)"), scratch=scratch)
    assert r.returncode == 3 and "status 3" in r.explain() and "bad input" in r.explain()
    with pytest.raises(FileNotFoundError, match="not found"):
        run(["/nonexistent/program"], scratch=scratch)


def test_output_cap(scratch):
    r = run(py("import sys; sys.stdout.write('x' * 5_000_000)"), scratch=scratch, limits=Limits(output_bytes=1000))
    assert r.ok and len(r.stdout) == 1000 and r.stdout_truncated and "truncated" in r.explain()


def test_memory_cpu_and_file_limits(scratch):
    r = run(py("b = bytearray(2 << 30)"), scratch=scratch, limits=Limits(memory_bytes=512 << 20))
    assert not r.ok and "MemoryError" in r.stderr
    control = run(py("b = bytearray(64 << 20); print(len(b))"), scratch=scratch, limits=Limits(memory_bytes=512 << 20))
    assert control.ok
    r = run(py("open('big', 'wb').write(b'x' * (8 << 20))"), scratch=scratch, limits=Limits(file_bytes=1 << 20))
    assert not r.ok and "File too large" in r.stderr          # python ignores SIGXFSZ and gets EFBIG
    assert os.path.getsize(os.path.join(scratch, "big")) <= 1 << 20
    r = run(["sh", "-c", "head -c 8000000 /dev/zero > big2"], scratch=scratch, limits=Limits(file_bytes=1 << 20))
    assert r.signal == "SIGXFSZ" and "file size" in r.explain()
    r = run(py("while True: pass"), scratch=scratch, limits=Limits(wall_s=30, cpu_s=1))
    assert r.signal in ("SIGXCPU", "SIGKILL") and not r.timed_out     # the CPU limit ended it, not the wall limit


def test_limits_are_checked():
    for bad in (dict(wall_s=float("nan")), dict(wall_s=0), dict(memory_bytes=-1), dict(processes=0)):
        with pytest.raises(ValueError):
            Limits(**bad)
    assert Limits(wall_s=3).cpu_limit_s >= 3


def test_run_limited_still_works():
    r = run_limited([sys.executable, "-c", "print('x' * 5000)"], output_bytes=100)
    assert r.ok and len(r.stdout) == 100 and "not isolated" in r.isolation


# --- isolation ------------------------------------------------------------------------------------------

@needs_bwrap
def test_read_only_system_and_one_writable_scratch(scratch):
    probe = py("""
        import os
        for p in ['/etc/rocmlab-x', '/usr/rocmlab-x', '/tmp/x', os.getcwd() + '/ok']:
            try:
                open(p, 'w').write('x'); print('wrote', p)
            except OSError as e:
                print('denied', p, e.errno)
    """)
    r = run(probe, scratch=scratch)
    assert r.ok, r.stderr
    assert "denied /etc/rocmlab-x" in r.stdout and "denied /usr/rocmlab-x" in r.stdout
    assert f"wrote {scratch}/ok" in r.stdout and "wrote /tmp/x" in r.stdout      # private /tmp
    assert not os.path.exists("/tmp/x") or open("/tmp/x").read() != "x"            # ... not the host's


@needs_bwrap
def test_sees_no_home_no_checkout_no_other_scratch(scratch):
    with tempfile.TemporaryDirectory() as other:
        open(os.path.join(other, "secret"), "w").write("s3cret")
        r = run(py(f"""
            import os
            for p in ['/root', '/home', {HERE!r}, {other!r}]:
                print(p, os.path.exists(p))
        """), scratch=scratch)
        assert r.ok, r.stderr
        for p in ("/root", "/home", HERE, other):
            assert f"{p} False" in r.stdout
        control = subprocess.run(py(f"import os; print(os.path.exists({other!r}))"), capture_output=True, text=True)
        assert control.stdout.strip() == "True"


@needs_bwrap
def test_unprivileged_user_clean_env_no_network(scratch):
    os.environ["ROCMLAB_TEST_SECRET"] = "leak-me"
    try:
        r = run(py("""
            import os, socket
            print(os.getuid(), os.getgid())
            print(sorted(os.environ))
            s = socket.socket()
            try:
                s.connect(('1.1.1.1', 80)); print('net yes')
            except OSError as e:
                print('net no', e.errno)
        """), scratch=scratch, env={"MINE": "1"})
    finally:
        del os.environ["ROCMLAB_TEST_SECRET"]
    assert r.ok, r.stderr
    lines = r.stdout.splitlines()
    uid, gid = map(int, lines[0].split())
    if os.geteuid() == 0:      # as root: a uid of the run's own, never one with a passwd entry
        import pwd

        assert uid >= settings.SANDBOX_UID_BASE and gid == settings.SANDBOX_GID
        with pytest.raises(KeyError):
            pwd.getpwuid(uid)
        assert uid != int(run(py("import os; print(os.getuid())"), scratch=scratch).stdout)   # the next run: another
    else:
        assert (uid, gid) == (65534, 65534)
    assert eval(lines[1]) == ["HOME", "MINE", "PATH"] or set(eval(lines[1])) <= {"HOME", "MINE", "PATH", "PWD", "LC_CTYPE"}
    assert "ROCMLAB_TEST_SECRET" not in r.stdout and lines[2].startswith("net no")


@needs_bwrap
def test_own_pid_namespace_ends_setsid_daemons(scratch):
    marker = f"8{uuid.uuid4().int % 10**6}.5"
    r = run(py(f"""
        import os, subprocess
        print(len([p for p in os.listdir('/proc') if p.isdigit()]))
        if os.fork() == 0:
            os.setsid()
            subprocess.Popen(['sleep', '{marker}'], start_new_session=True)
            os._exit(0)
        os.wait()
        print('parent done')
    """), scratch=scratch)
    assert r.ok and "parent done" in r.stdout
    assert int(r.stdout.split()[0]) < 10          # it sees its own few processes, not the host's
    time.sleep(0.2)
    assert _alive(marker) == []


@needs_bwrap
def test_fork_storm_is_capped(scratch):
    r = run(py("""
        import os
        n = 0
        try:
            for _ in range(10000):
                if os.fork() == 0:
                    import time; time.sleep(30); os._exit(0)
                n += 1
        except OSError as e:
            print('stopped at', n, e.errno)
    """), scratch=scratch, limits=Limits(wall_s=10, processes=32))
    assert r.ok and "stopped at" in r.stdout and int(r.stdout.split()[2]) < 40
    assert r.duration_s < 5


@needs_bwrap
def test_gpu_nodes_only_when_asked(scratch):
    r = run(["sh", "-c", "ls /dev; ls /sys | head -1"], scratch=scratch)
    assert "kfd" not in r.stdout and "nvidia" not in r.stdout and "dri" not in r.stdout
    g = run(["sh", "-c", "ls /dev; ls /sys"], scratch=scratch, gpu=True)
    assert g.ok and "class" in g.stdout                       # /sys is there for the GPU runtime
    for node in bubblewrap._gpu_nodes():
        assert os.path.basename(node) in g.stdout


@needs_bwrap
def test_ro_binds_are_read_only(scratch):
    with tempfile.TemporaryDirectory() as inputs:
        f = os.path.join(inputs, "in.txt")
        open(f, "w").write("input")
        os.chmod(inputs, 0o755)
        r = run(py(f"print(open({f!r}).read()); open({f!r}, 'w')"), scratch=scratch, ro_binds=[inputs])
        assert "input" in r.stdout and "Read-only file system" in r.stderr and open(f).read() == "input"


# --- interrupts -----------------------------------------------------------------------------------------

def _interrupt_after(sig, delay):
    threading.Timer(delay, os.kill, (os.getpid(), sig)).start()


@pytest.mark.parametrize("sig, exc", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, sandbox.Terminated)])
def test_interrupt_ends_everything_and_reraises(scratch, sig, exc):
    marker = f"9{uuid.uuid4().int % 10**6}.5"
    _interrupt_after(sig, 0.5)
    t = time.monotonic()
    with pytest.raises(exc):
        run(["sh", "-c", f"sleep {marker} & sleep {marker}"], scratch=scratch, limits=Limits(wall_s=30))
    time.sleep(0.1)
    assert time.monotonic() - t < 0.5 + 2.0
    assert _alive(marker) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_interrupt_handed_to_another_thread_still_ends_the_run(scratch):
    """The kernel may hand a process's Ctrl-C to any of its threads (a reader thread, a pytest-xdist or Jupyter
    thread): Python then raises KeyboardInterrupt in the main thread only when it returns to Python. A run's wait
    returns to Python at least every SIGNAL_SLICE_S (a loaded quick tier once waited out a run's 30 s limit)."""
    marker = f"8{uuid.uuid4().int % 10**6}.5"
    parked = threading.Event()
    other = threading.Thread(target=parked.wait, args=(10,), daemon=True)
    other.start()
    # control: a plain select in the main thread is not woken by a signal handed to the other thread
    r, w = os.pipe()
    threading.Timer(0.2, signal.pthread_kill, (other.ident, signal.SIGINT)).start()
    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        select.select([r], [], [], 1.5)
        time.sleep(0.5)                      # back in Python: the pending KeyboardInterrupt is raised here
    assert time.monotonic() - t >= 1.4       # the select slept its whole timeout
    os.close(r)
    os.close(w)
    threading.Timer(0.5, signal.pthread_kill, (other.ident, signal.SIGINT)).start()
    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run(["sh", "-c", f"sleep {marker} & sleep {marker}"], scratch=scratch, limits=Limits(wall_s=30))
    assert time.monotonic() - t < 0.5 + 2.0
    time.sleep(0.1)
    assert _alive(marker) == []
    parked.set()


def test_killed_caller_leaves_nothing(tmp_path):
    marker = f"6{uuid.uuid4().int % 10**6}.5"
    code = (f"import sys; sys.path.insert(0, {HERE!r}); from rocmlab.sandbox import run, Limits; "
            f"run(['sh', '-c', 'sleep {marker} & sleep {marker}'], scratch={str(tmp_path)!r}, limits=Limits(wall_s=30))")
    caller = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 10
    while not _running(["sleep", marker]) and time.monotonic() < deadline:
        time.sleep(0.05)                     # the program itself, not bubblewrap's command line that names it
    assert _running(["sleep", marker]), "control: the program was running"
    caller.kill()
    caller.wait()
    deadline = time.monotonic() + 2.0
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive(marker) == []


# --- the fallback is said, never silent ----------------------------------------------------------------

def test_fallback_without_bubblewrap_is_named(monkeypatch, scratch):
    monkeypatch.setenv("ROCMLAB_SANDBOX", "no-bwrap")
    iso = sandbox.isolation()
    assert iso.level in (sandbox.SETPRIV, sandbox.RLIMITS) and not iso.namespaces
    assert "WEAKER" in iso.description and "no-bwrap" in iso.reason and iso.fix
    r = run(py("print('hi')"), scratch=scratch)
    assert r.ok and r.isolation == iso.description and "WEAKER" in r.isolation
    entry, problem = sandbox.root_entry()          # another root is entered with chroot (root) or PRoot, or it says why not
    assert entry in (sandbox.CHROOT, sandbox.PROOT) or (entry == "" and "proot" in problem.lower())
    assert ("chroot" in iso.description) if entry == sandbox.CHROOT else True
    if not entry:
        with pytest.raises(sandbox.SandboxError, match="without bubblewrap"):
            run(["true"], root=scratch)
    monkeypatch.setenv("ROCMLAB_SANDBOX", "auto")
    assert "WEAKER" not in sandbox.isolation().description or sandbox.isolation().reason


def test_fallback_as_root_still_ends_setsid_daemons(monkeypatch, scratch):
    monkeypatch.setenv("ROCMLAB_SANDBOX", "no-bwrap")
    if sandbox.isolation().level != sandbox.SETPRIV:
        pytest.skip("needs root and setpriv")
    marker = f"5{uuid.uuid4().int % 10**6}.5"
    r = run(py(f"""
        import os, subprocess
        if os.fork() == 0:
            os.setsid(); subprocess.Popen(['sleep', '{marker}'], start_new_session=True); os._exit(0)
        os.wait(); print('parent done')
    """), scratch=scratch)
    assert r.ok and r.duration_s < 2
    time.sleep(0.1)
    assert _alive(marker) == []


def test_wait_exit_wakes_when_the_process_ends_and_keeps_the_time_limit(monkeypatch):
    """The sandbox's wait returns as the process ends (not at Python's next 50 ms poll), and still times out."""
    import random
    import subprocess
    import time

    naps = [round(random.uniform(0.15, 0.35), 3) for _ in range(5)]
    late = []
    for nap in naps:
        proc = subprocess.Popen(["sleep", str(nap)])
        t = time.monotonic()
        assert sandbox.wait_exit(proc, 10) == 0
        late.append(time.monotonic() - t - nap)
    assert sorted(late)[len(late) // 2] < 0.015, late          # Python's own wait is 25 ms late on average
    proc = subprocess.Popen(["sleep", "5"])
    t = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        sandbox.wait_exit(proc, 0.3)
    assert 0.25 < time.monotonic() - t < 2
    proc.kill()
    assert sandbox.wait_exit(proc, 5) == -9
    # without pidfds (an old kernel, not Linux): Python's own wait, with the same results
    monkeypatch.delattr(spawn.os, "pidfd_open")
    proc = subprocess.Popen(["sleep", "0.1"])
    assert sandbox.wait_exit(proc, 5) == 0
    proc = subprocess.Popen(["sleep", "5"])
    with pytest.raises(subprocess.TimeoutExpired):
        sandbox.wait_exit(proc, 0.2)
    proc.kill()
    proc.wait()


def test_a_cgroup_probe_that_failed_once_is_tried_again_and_a_found_one_is_kept(monkeypatch):
    """A failed probe is not kept for the process (a busy machine's one failure would leave every later run to the
    weaker watchdog); a parent found is."""
    found = sandbox.CgroupParent("/sys/fs/cgroup/memory", 1)
    answers = [(None, "cannot make a cgroup (Device or resource busy)"), (found, ""), (None, "never asked")]
    monkeypatch.setattr(guard, "_found_parent", [])
    monkeypatch.setattr(guard, "_find_cgroup_parent", lambda: answers.pop(0))
    assert sandbox.cgroup_parent() == (None, "cannot make a cgroup (Device or resource busy)")
    assert sandbox.cgroup_parent() == (found, "")
    assert sandbox.cgroup_parent() == (found, "") and len(answers) == 1      # kept: not probed again
