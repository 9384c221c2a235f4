"""Shared resources (issue 31): what one run can take of the host, and whose fault a failure is. Each attack
has its control: the same program without the defence takes what the attack wants.

- memory: the limit is for the whole run (all its processes), not per process: a cgroup of its own where one
  can be made, else a watchdog over the run's resident memory;
- /dev/shm in the sandbox is a bounded tmpfs;
- a graded run's scratch is a private tmpfs with a quota: only its output file reaches the host's disk;
- the compiler's output is capped, and so is the build cache;
- ``build.run`` never changes the owner or mode of a folder the caller passed;
- a grader-side failure (disk full) is a machine fault: status error, not scored, not cached, the rerun grades;
- the learner's own ``#error`` is the learner's compile failure; a policy check that cannot finish refuses.

Sizes are kept small (this machine is shared): 4 processes x 96 MB against a 160 MiB run limit.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rocmlab import grader, sandbox, settings
from rocmlab.grader import batch, checks, static
from rocmlab.hip import build
from rocmlab.hip import compile as driver

PY = "/usr/bin/python3"          # the system python: visible inside the sandbox
BWRAP = sandbox.isolation().level == sandbox.BWRAP
needs_bwrap = pytest.mark.skipif(not BWRAP, reason=f"bubblewrap does not run here: {sandbox.isolation().reason}")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="as root (the sandbox hands folders to a uid of the run's own)")

MB = 1 << 20
# 4 children each hold 96 MB at once (touched, so resident), then report; the parent waits for all
FORKS = textwrap.dedent("""
    import os, sys, time
    kids = []
    for i in range(4):
        pid = os.fork()
        if pid == 0:
            b = b"x" * (96 << 20)
            print("held", flush=True)
            time.sleep(1.5)
            os._exit(0)
        kids.append(pid)
    for k in kids:
        os.waitpid(k, 0)
""")
LIMIT = 160 * MB      # one child fits, two do not (each process alone is far under it)


def _toolchain_ok() -> bool:
    return bool(driver.choose("hip", settings.DEFAULT_TARGET)[0])


needs_compiler = pytest.mark.skipif(not _toolchain_ok(), reason="no AMD compiler here (scripts/setup/20-rocm-root.sh)")


def _forks(**kw) -> sandbox.Completed:
    return sandbox.run([PY, "-c", FORKS], limits=sandbox.Limits(wall_s=30, memory_bytes=LIMIT), **kw)


# --- memory: one limit for the whole run ---------------------------------------------------------------

def test_memory_limit_is_for_the_whole_run_not_per_process(capsys):
    parent, why = sandbox.cgroup_parent()
    r = _forks()
    held = r.stdout.count("held")
    how = f"cgroup v{parent.version}" if parent else f"watchdog: {why}"
    with capsys.disabled():
        print(f"\n[memory] whole-run limit {LIMIT / MB:.0f} MiB, 4 x 96 MB asked: {held} held (one killed makes room), peak "
              f"{r.memory_peak_bytes / MB:.0f} MiB, ended at the limit: {r.memory_exceeded} ({how})")
    # a child killed at the limit makes room for the next: never all four at once
    assert held < 4 and r.memory_exceeded, (held, r)
    if parent is not None:
        assert r.memory_peak_bytes <= LIMIT + 8 * MB
    # control: per-process limits only (the sandbox as it was): all four hold 96 MB at once, 384 MB of the host
    with sandbox.no_cgroup():
        c = _forks()
    assert c.stdout.count("held") == 4 and not c.memory_exceeded, c


def test_memory_watchdog_is_the_fallback_without_cgroups(monkeypatch):
    monkeypatch.setattr(sandbox.guard, "cgroup_parent", lambda: (None, "cgroups switched off for this test"))
    assert "WEAKER" in sandbox.memory_isolation() and "watchdog" in sandbox.memory_isolation()
    r = _forks()
    assert r.stdout.count("held") < 4 and r.memory_exceeded, r
    assert "memory limit of the whole run" in r.explain() or r.ok


def test_isolation_names_the_memory_limit():
    text = sandbox.isolation().description
    assert "memory:" in text
    parent, why = sandbox.cgroup_parent()
    assert ("cgroup v" in text) if parent else ("WEAKER" in text and why in text)


# --- /dev/shm and the scratch: bounded tmpfs ----------------------------------------------------------

WRITE = textwrap.dedent("""
    import os, sys
    path, n = sys.argv[1], int(sys.argv[2])
    done = 0
    try:
        with open(path, "wb") as f:
            for _ in range(n):
                f.write(b"x" * (1 << 20)); done += 1
    except OSError as e:
        print("stopped", e.errno, flush=True)
    print("wrote", done, flush=True)
""")


@needs_bwrap
def test_dev_shm_is_bounded(tmp_path):
    r = sandbox.run([PY, "-c", WRITE, "/dev/shm/fill", "200"], limits=sandbox.Limits(wall_s=30))
    wrote = int(r.stdout.split("wrote")[1])
    assert f"stopped {errno.ENOSPC}" in r.stdout and wrote <= sandbox.SHM_BYTES // MB, r.stdout
    # control: the same program on an unbounded tmpfs (the host's /dev/shm) writes all of it
    name = f"/dev/shm/rocmlab-test-{os.getpid()}"
    try:
        with sandbox.use("none"):
            c = sandbox.run([PY, "-c", WRITE, name, "100"], limits=sandbox.Limits(wall_s=30))
        assert "wrote 100" in c.stdout, c
    finally:
        Path(name).unlink(missing_ok=True)


@needs_bwrap
def test_private_scratch_has_a_quota_and_only_outputs_reach_the_disk(tmp_path, capsys):
    scratch = tmp_path / "run"
    scratch.mkdir()
    (scratch / "input.bin").write_bytes(b"in")
    out = scratch / "output.bin"
    junk = sandbox.run([PY, "-c", WRITE, str(scratch / "junk"), "100"], scratch=str(scratch), outputs=(str(out),),
                       limits=sandbox.Limits(wall_s=30, scratch_bytes=32 * MB, file_bytes=256 * MB))
    sandbox.run([PY, "-c", WRITE, str(out), "100"], scratch=str(scratch), outputs=(str(out),),
                limits=sandbox.Limits(wall_s=30, scratch_bytes=32 * MB, file_bytes=4 * MB))
    on_disk = sum(p.stat().st_blocks * 512 for p in scratch.rglob("*"))
    with capsys.disabled():
        print(f"\n[scratch] quota 32 MiB: junk stopped after {junk.stdout.split('wrote')[1].strip()} MB; output "
              f"capped at {out.stat().st_size / MB:.0f} MiB; on the host's disk after both: {on_disk / MB:.1f} MiB")
    assert f"stopped {errno.ENOSPC}" in junk.stdout and not (scratch / "junk").exists()
    assert out.stat().st_size <= 4 * MB and on_disk <= 5 * MB
    assert (scratch / "input.bin").read_bytes() == b"in"                       # read-only inside, untouched
    st = scratch.stat()
    assert st.st_uid == os.geteuid() and (st.st_mode & 0o777) == 0o755         # the folder was never handed over
    # control: without a quota the program fills the host folder (the shared TMPDIR in a grade run)
    c = sandbox.run([PY, "-c", WRITE, str(scratch / "junk"), "40"], limits=sandbox.Limits(wall_s=30),
                    scratch=str(scratch))
    assert "wrote 40" in c.stdout and (scratch / "junk").stat().st_size == 40 * MB


def test_scratch_watchdog_is_the_fallback_without_bubblewrap(tmp_path):
    scratch = tmp_path / "run"
    scratch.mkdir()
    os.chmod(scratch, 0o777)
    with sandbox.use(sandbox.RLIMITS):
        r = sandbox.run([PY, "-c", WRITE + "\nimport time; time.sleep(5)", str(scratch / "junk"), "60"],
                        limits=sandbox.Limits(wall_s=20, scratch_bytes=16 * MB), scratch=str(scratch))
    assert r.scratch_exceeded and not r.ok and "scratch" in r.explain(), r


def test_the_fallback_quota_counts_what_the_run_writes_not_its_input_or_output_file(tmp_path):
    """A graded perf run gets a large input (written before the run) and writes a large output file (capped by
    the file-size limit): neither counts against the scratch quota, as with bubblewrap's private tmpfs. Seen on
    a machine without bubblewrap, where a correct solution's timed run was ended for its input's size."""
    scratch = tmp_path / "run"
    scratch.mkdir()
    os.chmod(scratch, 0o777)
    (scratch / "input.bin").write_bytes(os.urandom(24 * MB))
    out = scratch / "output.bin"
    with sandbox.use(sandbox.RLIMITS):
        r = sandbox.run([PY, "-c", WRITE + "\nimport time; time.sleep(1)", str(out), "24"],
                        limits=sandbox.Limits(wall_s=20, scratch_bytes=16 * MB, file_bytes=32 * MB),
                        scratch=str(scratch), outputs=(str(out),))
        assert r.ok and not r.scratch_exceeded, r
        # the control: the same 24 MB written to another file of the scratch is over the quota
        r = sandbox.run([PY, "-c", WRITE + "\nimport time; time.sleep(5)", str(scratch / "junk"), "24"],
                        limits=sandbox.Limits(wall_s=20, scratch_bytes=16 * MB, file_bytes=32 * MB),
                        scratch=str(scratch), outputs=(str(out),))
    assert r.scratch_exceeded and not r.ok, r


# --- the compiler's output and the build cache -------------------------------------------------------

BIG = "#include <hip/hip_runtime.h>\nchar big[{mb} << 20] = {{1}};\n__global__ void k(char* p) {{ p[0] = 1; }}\n" \
      "int main() {{ return big[7]; }}\n"


@needs_compiler
def test_compiler_output_is_capped(monkeypatch):
    monkeypatch.setattr(driver, "COMPILER_FILE_BYTES", 16 * MB)
    r = build.compile(BIG.format(mb=24), target=settings.DEFAULT_TARGET, use_cache=False, link=True)
    assert not r.ok and not (r.binary and Path(r.binary).exists())
    assert not r.errors or "big" not in r.errors[0].message, r.summary()        # stopped by the cap, not a typo
    # control: with room for it, the same source leaves a 24+ MB program
    monkeypatch.setattr(driver, "COMPILER_FILE_BYTES", 64 * MB)
    c = build.compile(BIG.format(mb=24), target=settings.DEFAULT_TARGET, use_cache=False, link=True)
    try:
        assert c.ok and Path(c.binary).stat().st_size >= 24 * MB, c.summary()
    finally:
        shutil.rmtree(Path(c.binary).parent, ignore_errors=True) if c.binary else None


def test_build_cache_is_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(driver, "builds_dir", lambda: tmp_path)
    for i in range(5):
        e = tmp_path / f"entry{i}"
        e.mkdir()
        (e / "prog").write_bytes(os.urandom(MB))
        (e / "outcome.json").write_text("{}")
        os.utime(e / "outcome.json", (1000 + i, 1000 + i))
    (tmp_path / "tmp-inprogress").mkdir()
    (tmp_path / "tmp-inprogress" / "x").write_bytes(os.urandom(MB))
    assert driver.prune_cache(max_bytes=10 * MB) == 0                  # control: under the cap, nothing goes
    assert driver.prune_cache(max_bytes=int(2.5 * MB)) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry3", "entry4", "tmp-inprogress"]   # the newest stay


# --- build.run and the caller's folders ---------------------------------------------------------------

@needs_root
@needs_compiler
def test_build_run_never_changes_the_callers_folder(tmp_path):
    src = textwrap.dedent("""
        #include <hip/hip_runtime.h>
        #include <cstdio>
        #include <unistd.h>
        __global__ void k(int* p) { p[0] = 1; }
        int main(int argc, char** argv) {
            FILE* f = std::fopen(argv[1], "a");
            std::printf("append:%s\\n", f ? "OK" : "DENIED");
            if (f) std::fclose(f);
            sleep(2);
            int* d = nullptr; hipMalloc(&d, 4); k<<<1, 1>>>(d); return 0;
        }
    """)
    r = build.compile(src, target=settings.DEFAULT_TARGET)
    assert r.ok, r.summary()
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    (shared / "data.txt").write_text("x")
    seen = []

    def watch():
        for _ in range(30):
            st = shared.stat()
            seen.append((st.st_uid, st.st_mode & 0o7777))
            time.sleep(0.1)

    t = threading.Thread(target=watch)
    t.start()
    done = build.run(r, [str(shared / "data.txt")], host_only=True, timeout_s=20)
    t.join()
    assert "append:DENIED" in done.stdout, done                 # read-only inside
    assert set(seen) == {(0, 0o1777)}, set(seen)                 # never handed over, not even during the run
    # control: a folder given to the sandbox as its scratch (what build.run did with an argument's folder)
    # is handed to the run's uid while it runs
    seen.clear()
    t = threading.Thread(target=watch)
    t.start()
    sandbox.run([PY, "-c", "import time; time.sleep(1.5)"], scratch=str(shared), limits=sandbox.Limits(wall_s=10))
    t.join()
    assert any(uid != 0 for uid, _ in seen), set(seen)


# --- whose fault is a failure ---------------------------------------------------------------------

@needs_compiler
def test_disk_full_in_the_grader_is_a_machine_fault_and_the_rerun_grades(tmp_path, monkeypatch):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.hip").write_text(grader.load("vector-add").solution)

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    real = checks.gio.write_arrays
    monkeypatch.setattr(checks.gio, "write_arrays", full)        # the grader's own write of the inputs fails
    counts = batch.grade_folder(subs, ["vector-add"], out, workers=1, time_limit_s=5, progress=False)
    d = json.loads((out / "results" / "alice__vector-add.json").read_text())
    assert d["status"] == "error" and d["earned"] == 0 and "No space left" in d["error"], d
    assert counts.get("not_graded") == 1
    assert "NOT GRADED" in (out / "feedback" / "alice" / "vector-add.txt").read_text()
    monkeypatch.setattr(checks.gio, "write_arrays", real)         # the disk has room again
    counts = batch.grade_folder(subs, ["vector-add"], out, workers=1, time_limit_s=5, progress=False)
    d = json.loads((out / "results" / "alice__vector-add.json").read_text())
    assert counts["graded"] == 1 and d["status"] == "graded" and d["earned"] > 0     # the rerun graded it


@needs_compiler
def test_the_learners_own_error_directive_is_the_learners_failure():
    src = "#error is not available offline here\n" + grader.load("vector-add").solution
    r = grader.check("vector-add", src, time_limit_s=3)
    assert r.status == "graded" and r.check("compiles").status == "failed", r.to_text()   # scored, cached
    assert all(c.points == 0 for c in r.checks if c.type in ("compile", "run", "compare")), r.to_text()
    # control: a machine that lacks the target is still the machine's fault
    m = grader.check("vector-add", grader.load("vector-add").solution, target="gfx1100", time_limit_s=3)
    assert m.status == "error"


@needs_compiler
def test_a_policy_check_that_cannot_finish_refuses(monkeypatch):
    leak = grader.load("vector-add").solution.replace(
        "int main(", '__asm__(".macro rd f\\n .incb\\\\()in \\"\\\\f\\"\\n .endm\\n rd /etc/os-release\\n");\nint main(', 1)

    def slow(*a, **k):
        raise static.AnalysisError("the static analysis did not finish in 15 s (a very large or macro-heavy file?)")

    monkeypatch.setattr(static, "analyze", slow)
    r = grader.check("vector-add", leak, time_limit_s=3)
    assert r.status == "graded" and r.earned == 0, r.to_text()
    assert r.check("compiles").status == "failed" and "did not compile it" in r.check("compiles").message
    monkeypatch.undo()
    # the policy itself, when it finishes, refuses the assembler-macro spelling of .incbin
    a = static.analyze(leak)
    assert any("assembler macros" in t for _, t in static.compile_inputs(a, leak)), static.compile_inputs(a, leak)
    # control: the compiler itself takes the file (the policy is what stops it; /etc/os-release is among the few
    # files of /etc a compile is shown: sandbox.TOOL_ETC)
    assert build.compile(leak, target=settings.DEFAULT_TARGET, mode="obj", flags=("-I", checks.include_dir())).ok


# --- feedback shows what was printed, never what it does to a terminal -------------------------------

@needs_compiler
def test_terminal_escapes_in_program_output_are_shown_not_obeyed(tmp_path):
    src = grader.load("vector-add").solution.replace(
        "int main(int argc, char** argv) {",
        'int main(int argc, char** argv) {\n    std::fprintf(stderr, "\\x1b[2K\\x1b[1G  PASS runs 1/1\\n"); return 3;', 1)
    assert src != grader.load("vector-add").solution, "the exercise's main has another signature"
    r = grader.check("vector-add", src, time_limit_s=5)
    text = r.to_text()
    assert "\x1b" not in text and "\x1b" not in r.to_html(), text
    assert "\\x1b[2K" in r.check("runs").message, r.check("runs").message
    # control: the raw program output the sandbox returned does hold the escape
    raw = sandbox.Completed(("p",), 3, "", "\x1b[2K\x1b[1G  PASS runs 1/1\n", 0.1, False, False, False)
    assert "\x1b" in raw.explain()


def test_feedback_html_escapes_every_name():
    from rocmlab.workshop.exchange import Feedback

    fb = Feedback("<img src=x onerror=alert(1)>", {"handin": "<script>alert(1)</script>.hip", "earned": 1,
                                                     "possible": 2, "count": "<b>", "graded_at": "<i>"}, "", "")
    page = fb._repr_html_()
    assert "<script>" not in page and "<img" not in page and "<b>" not in page.replace("<b>&lt;img", "")
    assert "&lt;script&gt;" in page


def test_temp_folders_are_per_run():
    """Two runs never share a writable temp folder: each has its own /tmp tmpfs (a control: the host's own /tmp
    is one folder for everyone)."""
    code = "import os; open('/tmp/mark', 'w').write(str(os.getpid())); print(sorted(os.listdir('/tmp')))"
    a = sandbox.run([PY, "-c", code], limits=sandbox.Limits(wall_s=10))
    b = sandbox.run([PY, "-c", "import os; print(sorted(os.listdir('/tmp')))"], limits=sandbox.Limits(wall_s=10))
    if BWRAP:
        assert a.stdout.strip() == "['mark']" and b.stdout.strip() == "[]", (a, b)
