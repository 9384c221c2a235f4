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
- an HTTP answer (chunked, Content-Length or end-of-connection framing) cut anywhere gives exactly the
  body sent, one cut short is never complete, and bytes that are not HTTP raise only BadHTTP;
- a full request over HTTP (a real local server, random framings and TCP pieces, kept-alive connections)
  never raises: it succeeds, or fails with an error that names the bytes received, and its byte count is
  what was sent.
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


# ------------------------------------------------------------------ the HTTP/1.1 framing (rocmlab.serve.http_stream)
def http_answer(rng, body: bytes, status: int = 200) -> tuple[bytes, str]:
    """(the bytes of a whole HTTP answer carrying ``body``, its framing), as servers frame it."""
    framing = rng.choice(["chunked", "chunked", "length", "close"])
    head = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Oops'}", "content-type: text/event-stream"]
    if rng.random() < 0.3:
        head.append("X-Extra:  spaced value ")
    if framing == "chunked":
        head.append(rng.choice(["Transfer-Encoding: chunked", "TRANSFER-ENCODING: chunked"]))
        out, i = [], 0
        while i < len(body):
            k = rng.choice([1, 2, 5, 17, 300])
            piece = body[i:i + k]
            ext = rng.choice(["", "", ";name=value", " "])
            out.append(rng.choice(["%x", "%X", "%04x"]).encode() % len(piece) + ext.encode() + b"\r\n" + piece + b"\r\n")
            i += k
        out.append(b"0\r\n" + (b"X-Trailer: 1\r\n" if rng.random() < 0.2 else b"") + b"\r\n")
        data = b"".join(out)
    elif framing == "length":
        head.append(f"Content-Length: {len(body)}")
        data = body
    else:
        head.append("Connection: close")
        data = body
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" if rng.random() < 0.1 else b""
    return interim + ("\r\n".join(head) + "\r\n\r\n").encode() + data, framing


class _Transport:
    """What a _Connection needs of an asyncio transport, for feeding it bytes directly."""

    def __init__(self):
        self.aborted = self.closing = False

    def write(self, data):
        pass

    def abort(self):
        self.aborted = True

    def close(self):
        self.closing = True

    def is_closing(self):
        return self.aborted or self.closing


class _Future:
    """The part of an asyncio future a _Connection uses (no event loop: thousands of answers a second)."""

    def __init__(self):
        self.value = self.error = None
        self._done = False

    def done(self):
        return self._done

    def set_result(self, value):
        assert not self._done
        self.value, self._done = value, True

    def set_exception(self, exc):
        assert not self._done
        self.error, self._done = exc, True


def feed_http(parts, eof=True):
    """Feed the pieces of an HTTP answer to a _Connection: ((status, error body) or the exception, body pieces)."""
    from rocmlab.serve import http_stream as H

    fut, got = _Future(), []
    c = H._Connection()
    c.connection_made(_Transport())
    c.begin(b"", lambda data, now: got.append(data), fut)
    for p in parts:
        if fut.done():
            break
        if p:
            c.data_received(p)
    if eof and not fut.done():
        c.connection_lost(None)
    if not fut.done():
        return "pending", got
    return (fut.error or fut.value), got


def test_http_answers_cut_anywhere_give_exactly_the_body_sent(rng):
    """Whatever the framing (chunked with extensions and trailers, Content-Length, end of connection, after a
    100 Continue) and however TCP cuts the answer, the body handed over is the body sent, and a 200 is done
    exactly when the body is; a non-200 keeps the start of its body."""
    for _ in counted("http_framings", 2000):
        body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 400)))
        status = 200 if rng.random() < 0.85 else rng.choice([400, 404, 500])
        data, framing = http_answer(rng, body, status)
        result, got = feed_http(cut(rng, data))
        assert result == (status, b"" if status == 200 else body[:300]), (result, framing, data[:200])
        if status == 200:
            assert b"".join(got) == body, framing


def test_control_an_answer_cut_short_is_never_complete(rng):
    """The control: the same answers ended early (the server died) raise ConnectionClosed, never a result,
    except where the end of the connection is the framing."""
    from rocmlab.serve import http_stream as H

    for _ in counted("http_cut_short", 1000):
        body = bytes(rng.randrange(256) for _ in range(rng.randint(1, 400)))
        data, framing = http_answer(rng, body)
        end = data.find(b"\r\n\r\n", data.find(b"\r\n\r\n") + 4 if data.startswith(b"HTTP/1.1 100") else 0)
        stop = rng.randrange(1, len(data))
        if framing == "close" and stop > end + 3:
            continue
        result, _ = feed_http(cut(rng, data[:stop]))
        assert isinstance(result, H.ConnectionClosed), (result, framing, stop, len(data))


def test_bytes_that_are_not_http_raise_only_bad_http_or_closed(rng):
    from rocmlab.serve import http_stream as H

    for _ in counted("http_garbage", 1000):
        body = rand_text(rng, 20).encode()
        data, _ = http_answer(rng, body, rng.choice([200, 200, 500]))
        data = mutate(rng, data) if rng.random() < 0.8 else bytes(rng.randrange(256) for _ in range(60))
        result, got = feed_http(cut(rng, data))
        assert isinstance(result, (tuple, H.BadHTTP, H.ConnectionClosed)), repr(result)
    for bad, words in ((b"SSH-2.0-OpenSSH\r\n\r\n", "status line"),
                       (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "header line"),
                       (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not a hexadecimal size"),
                       (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", "longer than its size"),
                       (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"),
                       ("HTTP/1.1 5\u00b20 OK\r\n\r\n".encode(), "status line"),     # found by this fuzz: int()
                       ("HTTP/1.1 200 OK\r\nContent-Length: \u0662\r\n\r\n".encode(), "Content-Length"),
                       (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 20000, "no end of headers")):
        result, _ = feed_http([bad], eof=False)
        assert isinstance(result, H.BadHTTP) and words in str(result), (bad[:40], result)


# ------------------------------------------------------------------ whole requests over HTTP
def test_request_one_never_raises_over_http(rng):
    """Random (often corrupted) streams sent by a real local server in random framings and TCP pieces, over
    kept-alive connections: each request succeeds, or fails with an error naming the bytes received."""
    from rocmlab.serve.http_stream import Connections

    cases = []
    for _ in counted("http_requests", 600):
        data, _, _ = valid_stream(rng, "completions")
        if rng.random() < 0.7:
            data = mutate(rng, data)
        cases.append(data)
    todo = list(cases)

    async def serve(reader, writer):
        try:
            while todo:
                head = await reader.readuntil(b"\r\n\r\n")
                n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                await reader.readexactly(n)
                answer, framing = http_answer(rng, todo.pop(0))
                for part in cut(rng, answer):
                    writer.write(part)
                    if rng.random() < 0.1:
                        await writer.drain()
                        await asyncio.sleep(0)
                await writer.drain()
                if framing == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        results = []
        async with Connections(url, 5.0) as conns:
            for data in cases:
                out = await C.request_one(conns, url, "m", C.SampleRequest("p", 1, 4),
                                          timeouts=C.Timeouts(first_token=5, between_tokens=5, total=10))
                results.append((data, out))
        server.close()
        await server.wait_closed()
        return results

    ok = failed = 0
    for data, out in asyncio.run(main()):
        assert out.bytes_received == len(data) or not out.success
        if out.success:
            ok += 1
            assert not out.error
        else:
            failed += 1
            assert out.error and ("bytes received" in out.error or "did not complete" in out.error), out.error
    print("http outcomes", {"success": ok, "failed": failed})
    assert ok and failed
