"""Fuzz the SSE parser and the OpenAI chunk parsing (rocmlab.serve.client) with random valid
streams, cut at random byte boundaries, and with random malformed ones.

Seeded random, a fresh seed each run: the seed is printed (pytest shows it with a failure) and
``ROCMLAB_FUZZ_SEED=N`` replays a run. Each test prints its case count, and the counts of a run
are written to ``$ROCMLAB_TEST_ARTIFACTS/fuzz_counts.json``.

The properties:
- a valid stream, however it is cut into pieces (mid-line, mid-CRLF, mid-UTF-8 character), with
  any line endings, comments, pings and event/id lines, parses to exactly the text, chunk count and
  usage it was made from, and to the same result as the whole stream in one piece;
- anything else either parses, or raises MalformedChunk, never another exception;
- a full request over HTTP (httpx's mock transport) never raises: it succeeds, or fails with an
  error that names the bytes received, and its byte count is what was sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from pathlib import Path

import pytest

from rocmlab import settings
from rocmlab.serve import client as C

FUZZ_COUNTS: dict[str, int] = {}
COUNTS = FUZZ_COUNTS


@pytest.fixture(scope="module", autouse=True)
def _write_counts():
    yield
    out = Path(os.environ.get("ROCMLAB_TEST_ARTIFACTS") or "test-artifacts")
    out.mkdir(parents=True, exist_ok=True)
    (out / "fuzz_counts.json").write_text(json.dumps({**COUNTS, "total": sum(COUNTS.values())}, indent=1) + "\n")
    print(f"\nfuzz cases this run: {COUNTS} (total {sum(COUNTS.values())})")


@pytest.fixture
def rng(request):
    seed = int(settings.env("ROCMLAB_FUZZ_SEED") or random.SystemRandom().randrange(2**32))
    print(f"fuzz seed {seed}: replay with ROCMLAB_FUZZ_SEED={seed} pytest {request.node.nodeid}")
    return random.Random(seed)


def counted(name, n):
    COUNTS[name] = n
    print(f"{name}: {n} cases")
    return range(n)


# ------------------------------------------------------------------ generators
ALPHABET = "abc xyz\t\"\\/{}[],:01é中𝄞\u2028"


def rand_text(rng, n=6):
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, n)))


def valid_stream(rng, endpoint):
    """(bytes, expected text pieces, usage) of a stream as vLLM sends it, with random noise an SSE
    reader must skip."""
    eol = rng.choice(["\n", "\r\n", "\r"])
    pieces = [rand_text(rng) for _ in range(rng.randint(1, 8))]
    msgs = []
    for p in pieces:
        if rng.random() < 0.3:
            msgs.append(rng.choice([": ping", ":", "event: message", "id: 7", "retry: 10"]))
        choice = {"index": 0, "delta": {"content": p}} if endpoint == "chat" else {"index": 0, "text": p}
        if rng.random() < 0.2:
            choice["finish_reason"] = None
        body = json.dumps({"id": "x", "choices": [choice]}, ensure_ascii=rng.random() < 0.5)
        lines = ["data: " + body] if rng.random() < 0.8 else ["data:" + body]
        if rng.random() < 0.2:
            lines.insert(0, "event: completion")
        msgs.append(eol.join(lines))
    usage = {"prompt_tokens": rng.randint(0, 99), "completion_tokens": rng.randint(0, 99)}
    msgs.append("data: " + json.dumps({"choices": [], "usage": usage}))
    msgs.append("data: [DONE]")
    sep = eol + eol
    data = (sep.join(msgs) + sep).encode()
    if rng.random() < 0.2:
        data = data[:-len(sep.encode())]      # the last message without its blank line
    return data, pieces, usage


def cut(rng, data):
    """Random pieces of ``data`` (some empty, some one byte)."""
    out, i = [], 0
    while i < len(data):
        k = rng.choice([0, 1, 1, 2, 3, 7, 50, 1000])
        out.append(data[i:i + k])
        i += k
    return out


def rand_json(rng, depth=0):
    keys = ["choices", "text", "delta", "content", "usage", "completion_tokens", "prompt_tokens", "error", "index", "z"]
    r = rng.random()
    if depth > 3 or r < 0.35:
        return rng.choice([None, True, False, 0, -1, 7, 2**70, 1.5, float("nan"), "", "abc", "[DONE]", "\xff"])
    if r < 0.6:
        return [rand_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(keys): rand_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def feed_all(parser, parts):
    for part in parts:
        parser.feed(part, 1.0)
    parser.finish(2.0)


# ------------------------------------------------------------------ valid streams
@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_valid_streams_cut_anywhere_parse_to_what_was_sent(rng, endpoint):
    for _ in counted(f"valid_{endpoint}", 3000):
        data, pieces, usage = valid_stream(rng, endpoint)
        whole = C.RequestOutput()
        feed_all(C.StreamParser(whole, endpoint), [data])
        out = C.RequestOutput()
        feed_all(C.StreamParser(out, endpoint), cut(rng, data))
        for o in (whole, out):
            assert o.success and o.generated_text == "".join(pieces), (data, o)
            assert o.chunks == len(pieces) and o.output_tokens == usage["completion_tokens"]
            assert o.prompt_len == usage["prompt_tokens"] and len(o.itl) == len(pieces) - 1
            assert o.bytes_received == len(data)
        assert out.received_tail == data[-C.TAIL_BYTES:].decode("utf-8", "backslashreplace")


def test_control_a_cut_or_corrupted_stream_is_not_a_success(rng):
    """The control of the property above: the parser does not call everything a success."""
    for _ in counted("control_truncated", 300):
        data, pieces, _ = valid_stream(rng, "completions")
        short = data[:data.rindex(b"[DONE]")]
        out = C.RequestOutput()
        with pytest.raises(C.MalformedChunk, match="without"):
            feed_all(C.StreamParser(out), cut(rng, short))
        assert not out.success


# ------------------------------------------------------------------ malformed streams
def mutate(rng, data):
    kind = rng.randrange(6)
    b = bytearray(data)
    if kind == 0 and b:                         # flip random bytes
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == 1:                             # insert an invalid UTF-8 byte
        b[rng.randint(0, len(b)):0] = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"])
    elif kind == 2:                             # truncate anywhere
        del b[rng.randint(0, len(b)):]
    elif kind == 3:                             # a random JSON value as a chunk
        msg = b"data: " + json.dumps(rand_json(rng)).encode() + b"\n\n"
        b[0:0] = msg
    elif kind == 4:                             # deep nesting
        d = rng.choice([10, 1000, 100000])
        b[0:0] = b"data: " + b"[" * d + b"]" * d + b"\n\n"
    else:                                       # random bytes
        b = bytearray(rng.randbytes(rng.randint(0, 300)))
    return bytes(b)


def parse(parts, endpoint):
    """(success, text, chunks, error) of a stream given in pieces; only MalformedChunk may come out."""
    out = C.RequestOutput()
    try:
        feed_all(C.StreamParser(out, endpoint), parts)
        return out.success, out.generated_text, out.chunks, ""
    except C.MalformedChunk as exc:
        assert str(exc) and not out.success
        return False, out.generated_text, out.chunks, str(exc)


def test_malformed_streams_raise_only_malformed_chunk_whatever_the_cut(rng):
    outcomes = {"success": 0, "malformed": 0}
    for _ in counted("malformed_streams", 6000):
        endpoint = rng.choice(["completions", "chat"])
        data, _, _ = valid_stream(rng, rng.choice(["completions", "chat"]))
        bad = mutate(rng, data)
        whole = parse([bad], endpoint)
        pieces = parse(cut(rng, bad), endpoint)
        assert pieces == whole, bad      # the same verdict, text and message, however it is cut
        outcomes["success" if whole[0] else "malformed"] += 1
    print("outcomes", outcomes)
    assert outcomes["malformed"] and outcomes["success"]      # the mutations break some streams, not all


def test_sse_message_size_is_bounded():
    buf = C.SSEBuffer(max_chars=100)
    assert buf.feed(b"data: " + b"x" * 90 + b"\n\n") == ["data: " + "x" * 90]      # control: under the cap
    with pytest.raises(C.MalformedChunk, match="over 100 characters without its blank line"):
        for _ in range(30):
            buf.feed(b"data: xxxxx")


def test_random_json_chunks_parse_or_raise_malformed_chunk(rng):
    kinds = {"token": 0, "usage": 0, "nothing": 0, "malformed": 0}
    for _ in counted("chunk_objects", 10000):
        obj = rand_json(rng)
        if rng.random() < 0.5:
            obj = {"choices": [rand_json(rng)], "usage": rand_json(rng)}
        try:
            ch = C.parse_chunk(obj, rng.choice(["completions", "chat"]))
        except C.MalformedChunk as exc:
            kinds["malformed"] += 1
            assert "not an OpenAI streaming chunk" in str(exc) or "error mid-stream" in str(exc)
            continue
        assert ch.text is None or isinstance(ch.text, str)
        for v in (ch.completion_tokens, ch.prompt_tokens):
            assert v is None or (type(v) is int and v >= 0)
        kinds["token" if ch.text is not None else "usage" if ch.completion_tokens is not None else "nothing"] += 1
    print("kinds", kinds)
    assert kinds["malformed"] and kinds["token"]


def test_usage_counts_are_taken_exactly_or_refused(rng):
    """An oracle for the usage chunk: whole numbers >= 0 are taken as they are, anything else is refused."""
    values = [0, 1, 7, 2**40, -1, "3", None, True, False, 2.0, float("nan"), [], {}]
    taken = refused = 0
    for _ in counted("usage_chunks", 3000):
        usage = {k: rng.choice(values) for k in ("completion_tokens", "prompt_tokens") if rng.random() < 0.9}
        good = all(v is None or (type(v) is int and v >= 0) for v in usage.values())
        try:
            ch = C.parse_chunk({"choices": rng.choice([[], None]), "usage": usage})
        except C.MalformedChunk:
            assert not good, usage
            refused += 1
            continue
        assert good, usage
        taken += 1
        if any(v is not None for v in usage.values()):
            assert (ch.completion_tokens, ch.prompt_tokens) == (usage.get("completion_tokens"),
                                                                usage.get("prompt_tokens"))
    assert taken and refused


def test_sse_messages_parse_or_raise_malformed_chunk(rng):
    for _ in counted("sse_messages", 5000):
        msg = "\n".join(rng.choice(["data: ", "data:", ":", "event: ", "id: ", "", "x"]) + rand_text(rng, 12)
                        for _ in range(rng.randint(1, 4)))
        try:
            C.parse_message(msg)
        except C.MalformedChunk as exc:
            assert "not JSON" in str(exc)


# ------------------------------------------------------------------ whole requests over HTTP
def test_request_one_never_raises_over_http(rng):
    import httpx

    async def main(cases):
        results = []
        for data, parts in cases:
            async def body(parts=parts):
                for p in parts:
                    yield p

            stream = body()

            def handler(request, stream=stream):
                return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream)

            async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as cl:
                out = await C.request_one(cl, "http://fake", "m", C.SampleRequest("p", 1, 4),
                                          timeouts=C.Timeouts(first_token=5, between_tokens=5, total=10))
            # closed here, not by the garbage collector: a collection can run deep in a later case's 100000-level
            # JSON, where the generator's finalizer and pytest's report of it run out of stack (seen once in CI-like runs)
            await stream.aclose()
            results.append((data, out))
        return results

    cases = []
    for _ in counted("http_requests", 1000):
        data, _, _ = valid_stream(rng, "completions")
        if rng.random() < 0.7:
            data = mutate(rng, data)
        cases.append((data, cut(rng, data)))
    ok = failed = 0
    for data, out in asyncio.run(main(cases)):
        assert out.bytes_received == len(data) or not out.success
        if out.success:
            ok += 1
            assert not out.error
        else:
            failed += 1
            assert out.error and ("bytes received" in out.error or "did not complete" in out.error), out.error
    print("http outcomes", {"success": ok, "failed": failed})
    assert ok and failed
