"""The wave64 simulator's sanitizer: initcheck, racecheck, memcheck and synccheck on every simulated run. For
each class a kernel with the bug (found, with its source line) and its fixed form (clean), including a read of
uninitialised LDS that happens to give the right answer; and the grader turns a finding into a failed check."""

from __future__ import annotations

import random

import pytest

from rocmlab import grader
from rocmlab.grader.spec import load
from rocmlab.hip import build, simulate
from rocmlab.machine.detect import current

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

HEAD = "#include <hip/hip_runtime.h>\n#include <cstdio>\n"
MAIN = """
int main() {
    float *in, *out;
    hipMalloc(&in, 512 * sizeof(float));
    hipMalloc(&out, 512 * sizeof(float));
    float h[512];
    for (int i = 0; i < 512; ++i) h[i] = SEED + i;
    hipMemcpy(in, h, sizeof h, hipMemcpyHostToDevice);
    LAUNCH
    hipMemcpy(h, out, 256 * sizeof(float), hipMemcpyDeviceToHost);
    double s = 0; for (int i = 0; i < 256; ++i) s += h[i];
    std::printf("sum %.1f\\n", s);
    return 0;
}
"""

# (kernel with the bug, its fix, the launch, the tool, the marker comment on the line it must name)
CASES = {
    "racecheck: no barrier between waves": (
        """__global__ void rev(const float* in, float* out) {
    __shared__ float tile[256];
    tile[threadIdx.x] = in[threadIdx.x];
    BARRIER
    out[threadIdx.x] = tile[255 - threadIdx.x];   // BUG
}""", "__syncthreads();", "rev<<<1, 256>>>(in, out);", "racecheck"),
    "initcheck: LDS read no thread wrote (the answer is right anyway)": (
        # the first block leaves 1.0 in the slots the second block reads without writing: right by luck
        """__global__ void ones(const float* in, float* out) {
    __shared__ float s[256];
    if (blockIdx.x == 0 || FIX) s[threadIdx.x] = 1.0f;
    __syncthreads();
    if (blockIdx.x == 1) out[threadIdx.x] = s[threadIdx.x];   // BUG
}""", "", "ones<<<2, 256>>>(in, out);", "initcheck"),
    "initcheck: a hipMalloc buffer nothing wrote": (
        """__global__ void copy(const float* in, float* out) {
    out[threadIdx.x] = in[threadIdx.x + 256 * FIRSTHALF];   // BUG
}""", "", "copy<<<1, 256>>>(in, out);", "initcheck"),
    "memcheck: out of bounds": (
        """__global__ void shifted(const float* in, float* out) {
    out[threadIdx.x] = in[threadIdx.x + OFFSET];   // BUG
}""", "", "shifted<<<1, 256>>>(in, out);", "memcheck"),
}


def _program(kernel: str, launch: str, seed: int) -> str:
    return f"// {random.getrandbits(64):x}\n" + HEAD + kernel + MAIN.replace("LAUNCH", launch).replace("SEED", str(seed))


def _run(src: str):
    res = build.compile(src, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    return build.run(res)


def _bug_line(src: str) -> int:
    return next(i for i, ln in enumerate(src.splitlines(), 1) if "// BUG" in ln)


def _variants(name: str) -> tuple[str, str, str]:
    kernel, fix, launch, _ = CASES[name]
    if "BARRIER" in kernel:
        return kernel.replace("BARRIER", ""), kernel.replace("BARRIER", fix), launch
    if "FIX" in kernel:
        return kernel.replace("FIX", "0"), kernel.replace("FIX", "1"), launch
    if "FIRSTHALF" in kernel:       # only the buffer's first half is copied in: the bug reads its second half
        return kernel.replace("FIRSTHALF", "1"), kernel.replace("FIRSTHALF", "0"), launch
    return kernel.replace("OFFSET", "300"), kernel.replace("OFFSET", "0"), launch


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_class_finds_the_bug_on_its_line_and_the_fix_is_clean(name):
    tool = CASES[name][3]
    bad_k, good_k, launch = _variants(name)
    seed = random.randint(1, 1000)
    main = MAIN
    if "hipMalloc buffer" in name:     # copy in only the first 256 values: the second half is never written
        main = MAIN.replace("hipMemcpy(in, h, sizeof h,", "hipMemcpy(in, h, 256 * sizeof(float),")
    bad = f"// {random.getrandbits(64):x}\n" + HEAD + bad_k + main.replace("LAUNCH", launch).replace("SEED", str(seed))
    good = f"// {random.getrandbits(64):x}\n" + HEAD + good_k + main.replace("LAUNCH", launch).replace("SEED", str(seed))
    done = _run(bad)
    found = simulate.findings(done.stderr)
    assert found, done.stderr
    tools = {t for t, _ in found}
    assert tool in tools, found
    line = _bug_line(bad)
    assert any(t == tool and text.startswith(f"line {line}:") for t, text in found), (line, found)
    assert any("block (" in text and "thread (" in text and "kernel " in text for _, text in found), found
    clean = _run(good)
    assert clean.returncode == 0 and simulate.findings(clean.stderr) == [], clean.stderr
    if "right anyway" in name:       # the uninitialised read runs to the end: only the sanitizer tells
        # whether block 1 finds block 0's 1.0s in that LDS depends on which LDS the simulator hands it (as on a
        # GPU, on which CU it lands): right by luck or not, the run itself never says anything is wrong
        assert done.returncode == 0 and done.stdout.startswith("sum "), done.stdout


def test_use_after_free_stops_with_the_line():
    src = f"// {random.getrandbits(64):x}\n" + HEAD + """__global__ void touch(float* p) { p[threadIdx.x] += 1.0f; }  // BUG
int main() {
    float* p;
    hipMalloc(&p, 64 * sizeof(float));
    hipMemset(p, 0, 64 * sizeof(float));
    hipFree(p);
    touch<<<1, 64>>>(p);
    hipDeviceSynchronize();
    std::printf("done\\n");
    return 0;
}
"""
    done = _run(src)
    found = simulate.findings(done.stderr)
    assert done.returncode == simulate.STOPPED_EXIT and "done" not in done.stdout, done.stderr
    assert any(t == "memcheck" and "use after free" in text and text.startswith(f"line {_bug_line(src)}:")
               for t, text in found), found
    fixed = _run(src.replace("    hipFree(p);\n    touch<<<1, 64>>>(p);", "    touch<<<1, 64>>>(p);\n    hipFree(p);"))
    assert fixed.returncode == 0 and simulate.findings(fixed.stderr) == [], fixed.stderr


def test_synccheck_a_barrier_only_part_of_the_block_reaches():
    src = f"// {random.getrandbits(64):x}\n" + HEAD + """__global__ void k(float* p) {
    if (threadIdx.x < 128) __syncthreads();   // BUG
    p[threadIdx.x] = 1.0f;
}
int main() {
    float* p;
    hipMalloc(&p, 256 * sizeof(float));
    k<<<1, 256>>>(p);
    hipDeviceSynchronize();
    return 0;
}
"""
    done = _run(src)
    assert done.returncode == simulate.STOPPED_EXIT
    msg = simulate.stopped_message(done.stderr)
    assert "synccheck" in msg and f"line {_bug_line(src)}" in msg, msg
    fixed = _run(src.replace("if (threadIdx.x < 128) __syncthreads();", "__syncthreads();"))
    assert fixed.returncode == 0 and not simulate.stopped_message(fixed.stderr), fixed.stderr


def test_the_checks_can_be_turned_off_for_a_run():
    bad_k, _, launch = _variants("racecheck: no barrier between waves")
    res = build.compile(_program(bad_k, launch, 3), toolchain=simulate.KIND)
    assert simulate.findings(build.run(res).stderr)
    assert simulate.findings(build.run(res, env={"HIPSIM_CHECKS": "0"}).stderr) == []


@pytest.mark.skipif(current().backend != "cpu", reason="the grader simulates only where no GPU is")
def test_the_grader_turns_a_finding_into_a_failed_run_check():
    """lab11-race without its barrier: the run check fails with the racecheck finding and its line."""
    sol = load("lab11-race").solution
    barrier = "    __syncthreads();                             // every write to tile lands before any read of it\n"
    assert barrier in sol
    r = grader.check("lab11-race", f"// {random.getrandbits(64):x}\n" + sol.replace(barrier, ""),
                     only=("compile", "run"))
    run = r.check("runs")
    assert run.status == "failed" and "racecheck: line " in run.message, run.message
    ok = grader.check("lab11-race", f"// {random.getrandbits(64):x}\n" + sol, only=("compile", "run"))
    assert ok.check("runs").status == "passed", ok.to_text()
