"""Bad input everywhere (issue 18): each case gets a clear message that names the problem and the
fix, and a documented exit status, never a traceback; each check has a control (a valid input
that passes, or the same input one step short of bad).

Every CLI case records (bad input, message, exit status); the table is written to
``$ROCMLAB_TEST_ARTIFACTS/bad_input_table.md`` (default ``test-artifacts/``) and is the table of
the README's "Exit statuses" section.
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
from rocmlab.serve.fakeserver import FakeServer

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


@pytest.fixture
def fake():
    servers = []

    def make(**kw):
        s = FakeServer(**kw)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


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
    from rocmlab.commands.serve import _seconds

    assert _seconds("--token-timeout")("2.5") == 2.5 and _seconds("--token-timeout")("3600") == 3600


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
