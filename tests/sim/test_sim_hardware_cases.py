"""The wave64 simulator on kernels that are wrong on MI300X (tests/sim/hardware_cases.py): each buggy form loses
the run check with the sanitizer's finding (its kind and the marked line) whatever the program prints or returns,
and its corrected form runs cleanly. Then the sanitizer's own channel: a program that silences stderr, ends with
_exit, closes the channel or takes its code out of the sanitizer's view does not hide a finding (each with its
control), and a compiler-sanitizer build is refused with the reason instead of failing to start."""

from __future__ import annotations

import random

import pytest

from rocmlab import grader
from rocmlab.grader.checks import _run_verdict
from rocmlab.grader.spec import load
from rocmlab.hip import build, simulate
from rocmlab.machine.detect import current

from .hardware_cases import BY_NAME, CASES, HEAD

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")


def _verdict(src: str, flags=()) -> tuple[str, str, object]:
    res = build.compile(src, toolchain=simulate.KIND, flags=list(flags))
    assert res.ok, res.summary()
    done = build.run(res)
    status, msg = _run_verdict({"done": done, "host_only": False, "format_error": "", "simulated": True})
    return status, msg, done


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_kernel_wrong_on_mi300x_fails_with_its_finding_and_line_and_its_fix_passes(case):
    status, msg, done = _verdict(case.source(fixed=False))
    assert status == "failed", msg
    first = simulate.findings(done.stderr)[0]
    assert first[0] in case.tool.split("|"), msg
    assert first[1].startswith(f"line {case.bug_line()}:"), msg
    assert f"{first[0]}: line {case.bug_line()}" in msg, msg          # the first finding leads the feedback
    status, msg, done = _verdict(case.source(fixed=True))
    assert status == "passed" and not simulate.findings(done.stderr), msg
    assert "result: RIGHT" in done.stdout


# --- the channel ------------------------------------------------------------------------------------------------
# A kernel whose answer is right but which reads a hipMalloc buffer before anything wrote it (c is read, times 0).
CAUGHT = HEAD + """
__global__ void add(const float* a, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + 0.0f * c[i];   // BUG
}
int main() {
    const int n = 256;
    float h[n], out[n];
    for (int i = 0; i < n; ++i) h[i] = SEED + i;
    float *a, *c;
    hipMalloc(&a, sizeof h); hipMalloc(&c, sizeof h);
    hipMemcpy(a, h, sizeof h, hipMemcpyHostToDevice);
    BEFORE
    add<<<n / 64, 64>>>(a, c, n);
    hipMemcpy(out, c, sizeof out, hipMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != h[i];
    std::printf("result: %s\\n", bad ? "WRONG" : "RIGHT");
    AFTER
    return 0;
}
"""


def _caught(before: str = "", after: str = "", kernel_attr: str = "") -> str:
    src = CAUGHT.replace("BEFORE", before).replace("AFTER", after).replace("SEED", str(random.randint(1, 999)))
    return f"// {random.getrandbits(64):x}\n" + src.replace("__global__ void add", f"{kernel_attr} __global__ void add")


def _finds_it(src: str) -> str:
    line = next(i for i, ln in enumerate(src.splitlines(), 1) if "// BUG" in ln)
    status, msg, done = _verdict(src)
    assert status == "failed", msg
    assert f"initcheck: line {line}" in msg, msg
    assert "result: RIGHT" in done.stdout or "result" not in done.stdout
    return msg


def test_the_finding_survives_a_silenced_stderr_and_an_exit_that_skips_the_end():
    _finds_it(_caught())                                                  # the control: found as before
    _finds_it(_caught(before='std::freopen("/dev/null", "w", stderr); close(2);'))
    _finds_it(_caught(after="std::fflush(stdout); _exit(0);"))
    status, msg, done = _verdict(_caught(after="std::fflush(stdout); _exit(0);").replace("0.0f * c[i]", "0.0f"))
    assert status == "passed" and done.returncode == 0, msg               # the control: _exit alone is no finding


def test_a_program_that_closes_the_channel_is_stopped():
    src = _caught(before="for (int fd = 3; fd < 4096; ++fd) close(fd);")
    status, msg, done = _verdict(src)
    assert status == "failed" and done.returncode == simulate.STOPPED_EXIT, msg
    assert "report channel" in done.stderr


def test_no_sanitize_is_refused_and_a_pasted_one_is_ignored():
    spelled = _caught(kernel_attr='__attribute__((no_sanitize("coverage")))')
    res = build.compile(spelled, toolchain=simulate.KIND)
    assert not res.ok and "no_sanitize is refused" in res.summary(), res.summary()
    pasted = "#define CAT(a, b) a##b\n" + _caught(kernel_attr='__attribute__((CAT(no_, sanitize)("coverage")))')
    _finds_it(pasted)      # the control of the refusal: the same attribute, pasted, changes nothing


def test_a_compiler_sanitizer_build_is_refused_with_the_reason():
    src = _caught().replace("0.0f * c[i]", "0.0f")
    res = build.compile(src, toolchain=simulate.KIND, flags=["-fsanitize=address", "-shared-libsan", "-g"])
    assert not res.ok and "does not run on the CPU simulator" in res.summary(), res.summary()
    assert "address space" in res.summary()
    status, msg, _ = _verdict(src, flags=["-g"])                           # the control: the same build without it
    assert status == "passed", msg


def test_the_grade_loses_the_run_point_when_the_program_silences_itself():
    """Issue 56: reopening stderr on /dev/null and ending with _exit(0) turned a caught kernel (9/10) into 10/10."""
    if current().backend != "cpu":
        pytest.skip("the simulator grades only where no GPU is")
    src = load("vector-add").solution
    bug = "if (i < n) c[i] = a[i] + b[i];"
    assert bug in src
    caught = src.replace(bug, "if (i < n) c[i] = a[i] + b[i] + 0.0f * c[i];")
    silenced = caught.replace("int main(int argc, char** argv) {",
                              "int main(int argc, char** argv) {\n    std::freopen(\"/dev/null\", \"w\", stderr);\n"
                              "    std::atexit([] { _exit(0); });", 1)
    silenced = "#include <unistd.h>\n#include <cstdlib>\n" + silenced
    for s in (caught, silenced):
        r = grader.check("vector-add", f"// {random.getrandbits(64):x}\n" + s, only=("compile", "run", "compare"))
        run = r.check("runs")
        assert run.status == "failed" and "initcheck" in run.message, r.to_text()
        assert r.check("correct").status == "passed", r.to_text()          # right by luck, as on a GPU


# --- lockstep -------------------------------------------------------------------------------------------------
WAVE_SYNC = HEAD + """
// a wave-synchronous reduction in LDS: no barrier inside the wavefront (volatile: every step reads LDS)
__global__ void wave_sum(const int* x, int* out) {
    volatile __shared__ int s[64];
    const int l = threadIdx.x;
    s[l] = x[l];
    for (int off = 32; off > 0; off /= 2)
        if (l < off) s[l] = s[l] + s[l + off];
    if (l == 0) out[0] = s[0];
}
// every lane reads its neighbour's word and writes its own, in one step
__global__ void swap_pairs(const int* x, int* out) {
    volatile __shared__ int s[64];
    const int l = threadIdx.x;
    s[l] = x[l];
    const int v = s[l ^ 1];
    s[l] = v;
    out[l] = s[l];
}
int main() {
    int h[64], o[64], want = 0;
    for (int i = 0; i < 64; ++i) { h[i] = (i * 37 + SEED) % 101; want += h[i]; }
    int *x, *out;
    hipMalloc(&x, sizeof h); hipMalloc(&out, sizeof h);
    hipMemcpy(x, h, sizeof h, hipMemcpyHostToDevice);
    wave_sum<<<1, 64>>>(x, out);
    hipMemcpy(o, out, 4, hipMemcpyDeviceToHost);
    std::printf("sum %d want %d\\n", o[0], want);
    swap_pairs<<<1, 64>>>(x, out);
    hipMemcpy(o, out, sizeof o, hipMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < 64; ++i) bad += o[i] != h[i ^ 1];
    std::printf("swap differs %d\\n", bad);
    return 0;
}
"""


def test_wave_synchronous_code_gets_the_hardwares_answer_in_lockstep():
    src = f"// {random.getrandbits(64):x}\n" + WAVE_SYNC.replace("SEED", str(random.randint(1, 999)))
    res = build.compile(src, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    done = build.run(res)
    got, want = (int(v) for v in done.stdout.split("sum ")[1].split()[::2][:2])
    assert got == want and "swap differs 0" in done.stdout, done.stdout + done.stderr
    assert not simulate.findings(done.stderr), done.stderr
    # the control: lanes running ahead (no lockstep) read words the other lanes have not written yet
    ahead = build.run(res, env={"HIPSIM_LOCKSTEP": "0"})
    assert "swap differs 0" not in ahead.stdout or f"sum {want} " not in ahead.stdout, ahead.stdout
    assert simulate.findings(ahead.stderr), ahead.stderr


def test_a_non_atomic_lds_increment_by_a_wavefront_loses_updates_as_on_mi300x():
    case = BY_NAME["non-atomic += of one LDS word by every lane of a wavefront"]
    res = build.compile(case.source(fixed=False), toolchain=simulate.KIND)
    done = build.run(res)
    assert "result: WRONG" in done.stdout, done.stdout            # c ends at 1: 64 loads, then 64 stores
    assert "does not hide" in done.stderr, done.stderr
    fixed = build.run(build.compile(case.source(fixed=True), toolchain=simulate.KIND))
    assert "result: RIGHT" in fixed.stdout, fixed.stdout


# --- static __shared__ arrays ----------------------------------------------------------------------------------
def test_an_index_past_a_static_shared_array_names_the_variable_the_lanes_and_the_index():
    case = BY_NAME["an index past a static __shared__ array"]
    _, msg, done = _verdict(case.source(fixed=False))
    found = simulate.findings(done.stderr)[0][1]
    assert "reads __shared__ float tile[256] at index 256" in found, found
    assert "lane 63 of wavefront 3 of block (0,0,0)" in found and "past its end" in found, found
    assert done.returncode == simulate.STOPPED_EXIT          # stopped before the access, as memcheck does
    tile = BY_NAME["a row index past a 2-D __shared__ tile"]
    _, msg, done = _verdict(tile.source(fixed=False))
    found = simulate.findings(done.stderr)
    assert len(found) == 1, found        # a[0][16 * ty + tx] stays inside a: no finding for it
    assert "lanes 48-63 of wavefront 3" in found[0][1] and "__shared__ float a[16][16] (dimension 1, extent 16)" \
        in found[0][1] and "at index 16" in found[0][1], found
