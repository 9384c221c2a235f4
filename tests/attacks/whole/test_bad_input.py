"""Bad input everywhere (issue 18): each case gets a clear message that names the problem and the
fix, and a documented exit status, never a traceback; each check has a control (a valid input
that passes, or the same input one step short of bad).

Every CLI case records (bad input, message, exit status); the table is written to
``$ROCMLAB_TEST_ARTIFACTS/bad_input_table.md`` (default ``test-artifacts/``) and is the table of
the documentation site's "Bad input: examples" page (docs/reference/bad-input.md).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

import pytest

from rocmlab import cli

TABLE: list[tuple[str, str, str, int]] = []


@pytest.fixture(scope="module", autouse=True)
def _write_table():
    yield
    if not TABLE:
        return
    out = Path(os.environ.get("ROCMLAB_TEST_ARTIFACTS") or "test-artifacts")
    out.mkdir(parents=True, exist_ok=True)
    lines = ["| command | bad input | message (first words) | exit |", "|---|---|---|---|"]
    for cmd, bad, msg, rc in TABLE:
        short = msg.strip().splitlines()[0][:150].replace("|", "\\|") if msg.strip() else ""
        lines.append(f"| `{cmd}` | {bad} | {short} | {rc} |")
    (out / "bad_input_table.md").write_text("\n".join(lines) + "\n")


def record(cmd, bad, msg, rc):
    import re

    msg = re.sub(r"http://127\.0\.0\.1:(?!8000\b)\d+", "URL", str(msg))
    msg = re.sub(r"/tmp/\S*/(\S+)", r"\1", msg)          # tmp_path: the file's name
    TABLE.append((cmd, bad, msg, rc))


def rocmlab(capsys, *argv):
    """Run the CLI in this process: (exit status, stdout, stderr, seconds). argparse's exits count too."""
    t0 = time.monotonic()
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return rc, out, err, time.monotonic() - t0


# ================================================================== rocmlab serve bench
def bench(capsys, url, *extra, dataset="prompts"):
    return rocmlab(capsys, "serve", "bench", "--url", url, "--dataset", dataset, "--num-prompts", 2,
                   "--input-len", 4, "--output-len", 4, "--concurrency", "1", *extra)


def test_serve_bench_control_a_good_server_exits_0(fake, capsys, tmp_path):
    s = fake(tokens=4)
    for dataset in ("prompts", "random"):
        rc, out, err, _ = bench(capsys, s.url, "--out", tmp_path / f"{dataset}.jsonl", dataset=dataset)
        assert rc == 0, err
        assert json.loads((tmp_path / f"{dataset}.jsonl").read_text())["completed"] == 2
        assert "failed request" not in err


def test_serve_bench_no_models(fake, capsys):
    s = fake(models=[])
    rc, out, err, _ = bench(capsys, s.url)
    assert rc == 2 and "lists no models" in err and "wait until its /health answers 200" in err
    record("rocmlab serve bench", '`/v1/models` answers `{"data": []}`', err.removeprefix("error: "), rc)
    bad = fake(models=[17])
    rc, out, err, _ = bench(capsys, bad.url)
    assert rc == 2 and "model ids that are not names" in err


def test_serve_bench_wrong_model(fake, capsys):
    s = fake()
    rc, out, err, _ = bench(capsys, s.url, "--model", "llama-3")
    assert rc == 2 and "serves ['fake-model'], not 'llama-3'" in err and "--model" in err
    record("rocmlab serve bench", "`--model` the server does not serve", err.removeprefix("error: "), rc)
    rc, out, err, _ = bench(capsys, s.url, "--model", "fake-model")       # control
    assert rc == 0, err


def test_serve_bench_tokenize_hangs_is_bounded_by_tokenize_timeout(fake, capsys):
    s = fake(tokenize="hang", hang_s=20)
    rc, out, err, secs = bench(capsys, s.url, "--tokenize-timeout", 0.5, dataset="random")
    assert rc == 2 and "/tokenize did not answer within 0.5 s" in err and "--tokenize-timeout" in err
    assert secs < 10          # not the 30 s default, nor httpx's
    record("rocmlab serve bench --dataset random", "`/tokenize` hangs", err.removeprefix("error: "), rc)
    # control: the prompt set needs no /tokenize, so the same hanging server benchmarks fine
    rc, out, err, _ = bench(capsys, s.url, "--tokenize-timeout", 0.5, dataset="prompts")
    assert rc == 0, err


def test_serve_bench_tokenize_not_a_list(fake, capsys):
    s = fake(tokenize="bad")
    rc, out, err, _ = bench(capsys, s.url, dataset="random")
    assert rc == 2 and "expected 'tokens', a list of token ids" in err and "--dataset prompts" in err
    assert "invalid literal" not in err
    record("rocmlab serve bench --dataset random", '`/tokenize` answers `{"tokens": "not a list"}`',
           err.removeprefix("error: "), rc)


@pytest.mark.parametrize("chunk, says", [
    (b"data: [1,2,3]\n\n", "a JSON list, not an object"),
    (b'data: {"choices":"abc"}\n\n', "'choices' is not a list"),
    (b'data: {"choices":[{"text": 5}]}\n\n', "the token text is not a string"),
    (b'data: {"choices":[{"text":"\xff"}]}\n\n', "not UTF-8 text (byte b'\\xff' at offset"),
])
def test_serve_bench_bad_chunk_fails_that_request_and_the_sweep_keeps_its_points(fake, capsys, tmp_path, chunk, says):
    """Requests 1 (the test request) to 3 are good: the first point (2 requests) completes. From
    request 4 on the second chunk is bad: the second point's requests fail with the reason and the
    bytes received, and --out has both points."""
    s = fake(tokens=4, replace={1: chunk}, bad_from=4)
    out = tmp_path / "sweep.jsonl"
    rc, _, err, _ = bench(capsys, s.url, "--concurrency", "1,2", "--out", out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["max_concurrency"] for r in rows] == [1, 2]
    assert rows[0]["completed"] == 2 and rows[0]["failed"] == 0           # the control point, kept
    assert rows[1]["completed"] == 0 and rows[1]["failed"] == 2
    assert all(says in e and "1 chunks" in e and "bytes received" in e for e in rows[1]["errors"]), rows[1]["errors"]
    assert rows[1]["generated_texts"] == ["t0", "t0"]                     # what came before the bad chunk
    assert rc == 1 and says in err and "AttributeError" not in err
    record("rocmlab serve bench", f"stream chunk `{chunk.decode('latin-1').strip()}`",
           next(line for line in err.splitlines() if "failed request" in line).split(": ", 1)[1], rc)


def test_serve_bench_one_chunk_then_hang_is_bounded_by_token_timeout(fake, capsys, tmp_path):
    s = fake(tokens=4, hang_after=1, hang_s=30, bad_from=2)
    out = tmp_path / "sweep.jsonl"
    rc, _, err, secs = bench(capsys, s.url, "--token-timeout", 0.5, "--out", out)
    assert secs < 15
    row = json.loads(out.read_text())
    assert row["failed"] == 2 and all("no token for 0.5 s after token 1" in e and "--token-timeout" in e
                                      for e in row["errors"])
    assert row["generated_texts"] == ["t0", "t0"]         # the token received before the hang is kept
    assert rc == 1
    record("rocmlab serve bench", "one chunk, then the server hangs (`--token-timeout 0.5`)",
           next(line for line in err.splitlines() if "failed request" in line).split(": ", 1)[1], rc)
    # control: the same server, good from the start, is not cut by the short limit
    ok = fake(tokens=4, gap=0.05)
    rc, _, err, _ = bench(capsys, ok.url, "--token-timeout", 0.5)
    assert rc == 0, err


def test_serve_bench_first_token_and_total_timeouts(fake, capsys, tmp_path):
    slow = fake(tokens=3, ttft=3.0)
    rc, _, err, secs = bench(capsys, slow.url, "--first-token-timeout", 0.4)
    assert rc == 1 and secs < 10
    assert "no first token within 0.4 s" in err and "--first-token-timeout" in err
    assert "initial test request failed" in err           # a server this slow is not benchmarked
    record("rocmlab serve bench", "no first token (`--first-token-timeout 0.4`)",
           next(line for line in err.splitlines() if line.startswith("skipped")).split(": ", 1)[1], rc)
    long = fake(tokens=20, gap=0.1)
    rc, _, err, secs = bench(capsys, long.url, "--total-timeout", 0.5, "--output-len", 20)
    assert rc == 1 and "the request took over 0.5 s in all" in err and secs < 10
    # control: limits above what the server takes
    rc, _, err, _ = bench(capsys, long.url, "--total-timeout", 30, "--first-token-timeout", 5, "--output-len", 20)
    assert rc == 0, err


def test_serve_connect_timeout(fake):
    """A server whose listen queue is full never accepts: the request fails after --connect-timeout."""
    import asyncio
    import socket

    from rocmlab.serve import client as C
    from rocmlab.serve.http_stream import Connections

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
    fillers = []
    for _ in range(3):                      # fill the accept queue: later connections wait for ever
        f = socket.socket()
        f.setblocking(False)
        try:
            f.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(f)
    good = fake(tokens=3)

    async def one(url, t):
        async with Connections(url, t.connect) as cl:
            t0 = time.monotonic()
            out = await C.request_one(cl, url, "fake-model", C.SampleRequest("p", 1, 3), timeouts=t)
            return out, time.monotonic() - t0

    try:
        t = C.Timeouts(connect=0.5)
        out, secs = asyncio.run(one(f"http://127.0.0.1:{port}", t))
        assert not out.success and secs < 5
        assert "could not connect" in out.error and "within 0.5 s" in out.error and "--connect-timeout" in out.error
        record("rocmlab serve bench", "a server that stops accepting connections mid-sweep (`--connect-timeout 0.5`; "
               "the request, exit 1 if its point completes none)", out.error, 1)
        ok, _ = asyncio.run(one(good.url, t))          # control: the same limit, a server that answers
        assert ok.success and ok.generated_text == "t0t1t2"
    finally:
        for f in fillers:
            f.close()
        srv.close()


def test_serve_request_answered_with_plain_json(fake):
    """A server that ignores "stream": true and answers one JSON object: failed with that reason."""
    import asyncio

    from rocmlab.serve import client as C
    from rocmlab.serve.http_stream import Connections

    def answer(body):
        s = fake(body=body)

        async def go():
            async with Connections(s.url, 5.0) as cl:
                return await C.request_one(cl, s.url, "m", C.SampleRequest("p", 1, 3))
        return asyncio.run(go())

    out = answer(b'{"id": "x", "choices": [{"text": "hello"}], "usage": {"completion_tokens": 1}}')
    assert not out.success and "plain JSON, not a stream of server-sent events" in out.error
    record("rocmlab serve bench", 'a server that ignores `"stream": true` (one JSON answer)', out.error, 1)
    ok = answer(b'data: {"choices": [{"text": "hello"}]}\n\ndata: [DONE]\n\n')      # control: the same as SSE
    assert ok.success and ok.generated_text == "hello"


@pytest.mark.parametrize("flag", ["--connect-timeout", "--first-token-timeout", "--token-timeout", "--total-timeout",
                                  "--tokenize-timeout"])
@pytest.mark.parametrize("value, says", [("nan", "finite number of seconds above 0"),
                                         ("inf", "finite number of seconds above 0"),
                                         ("-1", "finite number of seconds above 0"),
                                         ("0", "finite number of seconds above 0"),
                                         ("1e308", "over the 3600 s maximum"),
                                         ("abc", "is not a number")])
def test_serve_bench_timeout_values(capsys, flag, value, says):
    rc, _, err, _ = rocmlab(capsys, "serve", "bench", "--url", "http://127.0.0.1:9", flag, value)
    assert rc == 2 and says in err and flag in err, err
    if flag == "--token-timeout":
        record("rocmlab serve bench", f"`{flag} {value}`", err.splitlines()[-1].split("error: ", 1)[1], rc)


def test_serve_bench_timeout_control_accepted():
    from rocmlab.settings import time_limit_arg

    assert time_limit_arg("--token-timeout")("2.5") == 2.5 and time_limit_arg("--token-timeout")("3600") == 3600


@pytest.mark.parametrize("args, says", [(["--rate", "abc"], "--rate 'abc': 'abc' is not valid"),
                                        (["--rate", "0"], "--rate '0'"),
                                        (["--concurrency", "0"], "--concurrency '0'"),
                                        (["--concurrency", ","], "names no value"),
                                        (["--num-prompts", "0"], "--num-prompts 0 must be 1 or more"),
                                        (["--out", "/nonexistent-dir/x.jsonl"], "does not exist; create it first")])
def test_serve_bench_bad_options(capsys, args, says):
    rc, _, err, _ = rocmlab(capsys, "serve", "bench", "--url", "http://127.0.0.1:9", *args)
    assert rc == 2 and says in err, err
    if args[0] in ("--rate", "--out") and args[1] != "0":
        record("rocmlab serve bench", f"`{' '.join(args)}`", err.removeprefix("error: "), rc)


def test_serve_bench_unreachable(capsys):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    rc, _, err, secs = rocmlab(capsys, "serve", "bench", "--url", f"http://127.0.0.1:{port}")
    assert rc == 2 and "connection refused" in err and secs < 10
    record("rocmlab serve bench", "nothing listens at `--url`", err.removeprefix("error: "), rc)


# ================================================================== rocmlab hip build|inspect|translate|hipify
HIP_SRC = "#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\nint main() { return 0; }\n"


@pytest.mark.parametrize("verb", ["build", "inspect", "translate", "hipify"])
def test_hip_latin1_file(capsys, tmp_path, verb):
    f = tmp_path / "café.hip"
    f.write_bytes(("// caf\xe9: ported by Ren\xe9\n" + HIP_SRC).encode("latin-1"))
    with pytest.raises(UnicodeDecodeError):        # control: what Path.read_text did with it
        f.read_text(encoding="utf-8")
    rc, out, err, _ = rocmlab(capsys, "hip", verb, f, *(["--no-run"] if verb == "build" else []))
    assert rc == 2 and "is not UTF-8 text (byte 0xe9 on line 1" in err and "iconv -f latin1 -t utf-8" in err, err
    if verb in ("build", "translate"):
        record(f"rocmlab hip {verb}", "a latin-1 source file", err.removeprefix("error: "), rc)
    # control: the same source as UTF-8 gets past reading (translate needs no compiler)
    f.write_bytes(("// caf\xe9: ported by Ren\xe9\n" + HIP_SRC).encode("utf-8"))
    if verb == "translate":
        rc, out, err, _ = rocmlab(capsys, "hip", verb, f)
        assert rc == 0 and "cuda_runtime.h" in out and "café" in out
    elif verb == "hipify":
        rc, out, err, _ = rocmlab(capsys, "hip", verb, f)
        assert rc == 2 and "looks like HIP already" in err          # read fine, then judged
    else:
        rc, out, err, _ = rocmlab(capsys, "hip", verb, f, *(["--no-run"] if verb == "build" else []))
        assert "not UTF-8" not in err


def test_hip_binary_file(capsys, tmp_path):
    f = tmp_path / "a.out.hip"
    f.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    rc, _, err, _ = rocmlab(capsys, "hip", "translate", f)
    assert rc == 2 and "is a binary file" in err
    record("rocmlab hip translate", "a binary file", err.removeprefix("error: "), rc)


@pytest.mark.parametrize("value, says", [("nan", "finite number of seconds above 0"),
                                         ("inf", "finite number of seconds above 0"),
                                         ("1e308", "over the 3600 s maximum"),
                                         ("-5", "finite number of seconds above 0"),
                                         ("abc", "is not a number")])
def test_hip_build_timeout_values(capsys, tmp_path, value, says):
    f = tmp_path / "k.hip"
    f.write_text(HIP_SRC)
    rc, _, err, _ = rocmlab(capsys, "hip", "build", f, "--timeout", value)
    assert rc == 2 and says in err and "--timeout" in err, err
    record("rocmlab hip build", f"`--timeout {value}`", err.splitlines()[-1].split("error: ", 1)[1], rc)


def test_hip_build_timeout_control_and_library_check(tmp_path):
    from rocmlab.commands.hip import add_parser
    import argparse

    p = argparse.ArgumentParser()
    add_parser(p.add_subparsers())
    assert p.parse_args(["hip", "build", "k.hip", "--timeout", "2.5"]).timeout == 2.5     # control
    from rocmlab.hip import build

    res = build.BuildResult.__new__(build.BuildResult)            # run() checks the limit before anything else
    for bad in (float("nan"), float("inf"), 1e308, -1.0):
        with pytest.raises(ValueError, match="timeout_s"):
            build.run(res, timeout_s=bad)


# ================================================================== %hip_run (rocmlab.course.magics)
@pytest.mark.parametrize("line, says", [("vadd --timeout abc", "--timeout 'abc' is not a number"),
                                        ("vadd --timeout nan", "finite number of seconds above 0"),
                                        ("vadd --timeout 1e308", "over the 3600 s maximum"),
                                        ("vadd --timeout", "--timeout needs a number of seconds"),
                                        ("--timeout 3", "needs the NAME of a build"),
                                        ("vadd 'unclosed", "close the quote"),
                                        ("", "needs the NAME of a build")])
def test_hip_run_magic_bad_options(line, says):
    from rocmlab.course.magics import hip_run

    shown = []
    assert hip_run(line, display=shown.append) is None
    assert says in "\n".join(shown) and "usage: %hip_run NAME" in "\n".join(shown), shown
    if line in ("vadd --timeout abc", "vadd --timeout"):
        record("%hip_run", f"`%hip_run {line}`", shown[0].removeprefix("error: "), "-")


def test_hip_run_magic_control_valid_timeout_reaches_the_name_lookup():
    from rocmlab.course.magics import hip_run

    name = f"never-built-{random.randrange(10**9)}"
    shown = []
    assert hip_run(f"{name} --timeout 2.5 -- 1 2", display=shown.append) is None
    assert f"no build named '{name}'" in shown[0] and "%%hip --name" in shown[0]


def test_hip_run_magic_control_runs_a_named_build():
    """The valid line runs the program: the timeout is taken, '--' is not passed to the program."""
    from rocmlab.hip import build
    from rocmlab.course.magics import hip_run

    name = f"hello{random.randrange(10**6)}"
    src = ("#include <hip/hip_runtime.h>\n#include <cstdio>\n"
           "int main(int argc, char** argv) { printf(\"argc=%d %s\\n\", argc, argc > 1 ? argv[1] : \"-\"); return 0; }\n")
    res = build.compile(src, lang="hip", name=name)
    if not res.ok:
        pytest.skip(f"no HIP compiler here: {res.summary()[:200]}")
    shown = []
    done = hip_run(f"{name} --timeout 5 --host-only -- world", display=shown.append)
    assert done is not None and done.ok, shown
    assert "argc=2 world" in done.stdout


def test_hip_cell_magic_bad_timeout():
    from rocmlab.course.magics import run_cell

    shown = []
    assert run_cell("hip", "--timeout abc", HIP_SRC, display=shown.append) is None
    assert "bad %%hip options" in shown[0] and "argument --timeout: 'abc' is not a number" in shown[0]
    record("%%hip", "`%%hip --timeout abc`", shown[0].removeprefix("error: "), "-")


# ================================================================== rocmlab port
def test_port_long_relative_path(capsys, tmp_path):
    from rocmlab.port.unit_build import log_name

    src = tmp_path / "src"
    d = src
    for i in range(12):                          # a 1.2 KB relative path: each name is legal, the flattened one is not
        d = d / (f"{i:02d}" + random.choice("abcdef") * 98)
    d.mkdir(parents=True)
    (d / "kernel.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n")
    rel = str((d / "kernel.cu").relative_to(src))
    flat = rel.replace("/", "__") + ".log"       # control: the old flattened log name
    with pytest.raises(OSError, match="File name too long"):
        (tmp_path / flat).write_text("")
    name = log_name(rel)
    assert len(name.encode()) <= 200 and "/" not in name and name.endswith("kernel.cu.log")
    assert log_name(rel.replace("00", "99", 1)) != name          # the hash tells apart paths with the same tail
    (tmp_path / name).write_text("")
    rc, out, err, _ = rocmlab(capsys, "port", src, "--out", tmp_path / "out", "--json", "--no-compile")
    assert rc == 0 and (tmp_path / "out" / rel.replace(".cu", ".hip")).is_file(), err
    record("rocmlab port", "a 1.2 KB relative path (`--no-compile`)", "ported; compile logs get hashed names of at "
           "most 200 bytes", rc)


def test_port_long_relative_path_compiles(capsys, tmp_path):
    from rocmlab.port.unit_build import choose_toolchain

    try:
        choose_toolchain()
    except RuntimeError:
        pytest.skip("no HIP compiler here (the offline ROCm root: scripts/setup)")
    src = tmp_path / "src"
    d = src
    for i in range(12):
        d = d / (f"{i:02d}" + "x" * 98)
    d.mkdir(parents=True)
    (d / "kernel.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n")
    rc, out, err, _ = rocmlab(capsys, "port", src, "--out", tmp_path / "out", "--json")
    assert rc == 0, err
    logs = list((tmp_path / "out").rglob("*kernel.hip.log"))
    assert len(logs) == 1 and len(logs[0].name.encode()) <= 200


def test_port_path_over_path_max_in_out(capsys, tmp_path):
    """SRC's file path fits the system's limit, but OUT/that path does not: that file is reported, the rest ported."""
    src = tmp_path / "src"
    d = src
    while len(str(d)) < os.pathconf("/", "PC_PATH_MAX") - 300:
        d = d / ("p" * 100)
    d.mkdir(parents=True)
    (d / "kernel.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n")
    (src / "main.cu").write_text("__global__ void g(int* x) { x[0] = 1; }\n")
    out = tmp_path / ("o" * 200) / ("o" * 200)
    rc, stdout, err, _ = rocmlab(capsys, "port", src, "--out", out, "--json", "--no-compile")
    assert rc == 0, err
    rep = json.loads(stdout)
    text = json.dumps(rep)
    assert "path-too-long" in text and (out / "main.hip").is_file()      # control: the short one is ported
    msg = next(p["message"] for p in rep["problems"] if p["kind"] == "path-too-long")
    record("rocmlab port", "OUT/path longer than the system's PATH_MAX", f"ported the rest; in the report: {msg}", rc)


def _remove_deep(root, depth):
    """Remove a chain of folders named d under root without recursion (relative paths: no PATH_MAX)."""
    old = os.getcwd()
    try:
        os.chdir(root)
        n = 0
        while os.path.isdir("d"):
            os.chdir("d")
            n += 1
        for _ in range(n):
            for f in os.listdir("."):
                os.unlink(f) if not os.path.isdir(f) else os.rmdir(f)
            os.chdir("..")
        os.rmdir("d")
    finally:
        os.chdir(old)


def test_port_deep_tree(capsys, tmp_path):
    from rocmlab.port.inputs import MAX_DEPTH

    src = tmp_path / "src"
    src.mkdir()
    (src / "main.cu").write_text("__global__ void g(int* x) { x[0] = 1; }\n")
    old = os.getcwd()
    try:                                  # a tree deeper than MAX_DEPTH (and than Python's recursion limit)
        os.chdir(src)
        depth = max(MAX_DEPTH + 20, sys.getrecursionlimit() + 50)
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
        Path("deep.cu").write_text("__global__ void h(int* x) { x[0] = 2; }\n")
        os.chdir(src)
        for _ in range(MAX_DEPTH - 10):   # control: a file within the limit is ported
            os.chdir("d")
        Path("ok.cu").write_text("__global__ void h(int* x) { x[0] = 3; }\n")
    finally:
        os.chdir(old)
    try:
        rc, out, err, _ = rocmlab(capsys, "port", src, "--out", tmp_path / "out", "--json", "--no-compile")
    finally:
        _remove_deep(src, depth)       # pytest's clean-up (shutil.rmtree) recurses, so remove it here
    assert rc == 0, err
    rep = json.loads(out)
    text = json.dumps(rep)
    assert "too-deep" in text and f"more than {MAX_DEPTH} folders deep" in text
    assert "ok.hip" in text and "deep.hip" not in text
    record("rocmlab port", f"a tree {depth} folders deep", f"ported; below {MAX_DEPTH} folders: \"is more than "
           f"{MAX_DEPTH} folders deep, so what is below it was skipped\" (in the report)", rc)


# ================================================================== rocmlab preflight
def _labs(folder, cells_by_name):
    import nbformat
    from nbtools import new_notebook

    folder.mkdir()
    for name, cells in cells_by_name.items():
        nbformat.write(new_notebook([("code", "quick = False", ["parameters"])] + [("code", c) for c in cells]),
                       folder / f"{name}.ipynb")


def test_preflight_multiline_error_timeout_and_dead_kernel(capsys, tmp_path):
    labs = tmp_path / "labs"
    _labs(labs, {
        "01-multiline": ["x = 1", "raise ValueError('first line\\nsecond | line\\nthird')"],
        "02-timeout": ["y = 2", "import time\ntime.sleep(60)", "print('never')"],
        "03-dies": ["import os", "os._exit(3)"],
        "04-ok": ["print('fine')"],
    })
    out = tmp_path / "out"
    rc, stdout, err, secs = rocmlab(capsys, "preflight", "--labs", labs, "--out", out, "--timeout", 3)
    assert rc == 1
    summary = {lab["lab"]: lab for lab in json.loads((out / "summary.json").read_text())["labs"]}
    # each failing cell, numbered as in the lab: 0 parameters, then the cells written above
    assert summary["01-multiline"]["cell_index"] == 2 and "raise ValueError" in summary["01-multiline"]["cell_source"]
    assert summary["02-timeout"]["cell_index"] == 2 and "time.sleep(60)" in summary["02-timeout"]["cell_source"]
    assert summary["03-dies"]["cell_index"] == 2 and "os._exit" in summary["03-dies"]["cell_source"]
    assert summary["04-ok"]["status"] == "passed"            # control
    assert "second | line" in summary["01-multiline"]["error"]  # the whole error in the JSON
    md = (out / "summary.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| 0")]
    assert len(rows) == 4, md                                   # one table row per lab: no line broken out of it
    header_cols = md.splitlines()[0].count(" | ")
    for row in rows:                                            # and no cell split by an unescaped '|'
        assert row.replace("\\|", "").count(" | ") == header_cols, row
    assert "cell None" not in md and "cell 3" in md
    assert "first line / second \\| line / third" in md
    assert "cell 3" in err and "cell None" not in err
    assert "ran longer than 3 s (--timeout)" in summary["02-timeout"]["error"]
    assert "the kernel died" in summary["03-dies"]["error"]

    def failure(lab):        # the failure as summary.md shows it: **error** (cell N)
        row = next(r for r in rows if lab in r)
        return row[row.index("**"):].rstrip(" |")

    record("rocmlab preflight", "a cell raising a 3-line error", failure("01-"), rc)
    record("rocmlab preflight", "a cell running past `--timeout 3`", failure("02-"), rc)
    record("rocmlab preflight", "a cell killing its kernel", failure("03-"), rc)


def test_preflight_cell_index_control_matches_the_notebook():
    """failed_cell on a notebook executed by papermill: the injected cell is not counted, an index
    before it is kept, and the injected cell itself is -1."""
    import nbformat

    from rocmlab.preflight import INJECTED_TAG, failed_cell

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("quick = False", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("quick = True", metadata={"tags": [INJECTED_TAG]}),
                nbformat.v4.new_code_cell("a = 1"), nbformat.v4.new_code_cell("b = 2")]
    for c in nb.cells[:3]:
        c.metadata["papermill"] = {"start_time": "2026-01-01T00:00:00"}
    nb.cells[3].metadata["papermill"] = {"start_time": None}
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.ipynb"
        nbformat.write(nb, p)
        assert failed_cell(p) == (1, "a = 1")          # the last started cell, index 2 executed -> 1 as written
        assert failed_cell(p, 3) == (2, "b = 2")
        assert failed_cell(p, 0) == (0, "quick = False")
        assert failed_cell(p, 1) == (-1, "quick = True")
        assert failed_cell(Path(d) / "missing.ipynb") == (None, "")


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e308", "abc"])
def test_preflight_bad_timeout(capsys, tmp_path, value):
    rc, _, err, _ = rocmlab(capsys, "preflight", "--labs", tmp_path, "--out", tmp_path / "o", "--timeout", value)
    assert rc == 2 and "--timeout" in err and ("finite number" in err or "maximum" in err or "not a number" in err)
    assert not (tmp_path / "o").exists()
    if value in ("nan", "1e308"):
        record("rocmlab preflight", f"`--timeout {value}`", err.splitlines()[-1].split("error: ", 1)[1], rc)


def test_preflight_timeout_library_check_and_control(tmp_path):
    from rocmlab import preflight

    with pytest.raises(preflight.PreflightError, match="finite number of seconds"):
        preflight.run(tmp_path, tmp_path / "o", timeout_s=float("nan"), progress=False)
    with pytest.raises(preflight.PreflightError, match="no notebooks"):      # control: a valid limit gets further
        preflight.run(tmp_path, tmp_path / "o", timeout_s=7200, progress=False)


@pytest.mark.parametrize("url", ["notaurl", "127.0.0.1:8000", "ftp://x/", "http://"])
def test_serve_bench_url_without_scheme(capsys, url):
    rc, _, err, secs = rocmlab(capsys, "serve", "bench", "--url", url)
    assert rc == 2 and "is not a server's base URL" in err and "e.g. --url http://127.0.0.1:8000" in err
    if url == "127.0.0.1:8000":
        record("rocmlab serve bench", f"`--url {url}`", err.removeprefix("error: "), rc)
