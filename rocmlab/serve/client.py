"""HTTP and server-sent events to an OpenAI-compatible server (vLLM, SGLang): one streamed request, timed.

Timing follows vLLM's request functions (``vllm/benchmarks/lib/endpoint_request_func.py``):
TTFT is request sent -> first chunk carrying a choice, ITL the gaps between such chunks, the
latency request sent -> last such chunk, and the output token count comes from the stream's
final ``usage`` chunk.

Everything a server sends is checked before it is used. A request that goes wrong (no
connection, a timeout, bytes that are not UTF-8, a chunk that is not an OpenAI chunk, a stream
cut before ``[DONE]``) is marked failed with a message naming the problem and the fix, the text
received so far, and the number and the last of the bytes received. Nothing the server sends
raises out of :func:`request_one`.

Each request has four limits (:class:`Timeouts`, defaults in :mod:`rocmlab.settings`): to connect,
to the first token, between two tokens, and in all.

The timed requests go over :mod:`rocmlab.serve.http_stream` (asyncio's protocol layer, no task or
timer per token: the client must not take the CPU of the server it measures); the untimed calls
(the model list, the tokenizer endpoints) over httpx.
"""

from __future__ import annotations

import codecs
import json
import time
from dataclasses import dataclass, field

from rocmlab import settings
from rocmlab.serve import http_stream

#: Bytes of the end of a stream kept with a request (``RequestOutput.received_tail``).
TAIL_BYTES = 200


class ServerUnreachable(ConnectionError):
    """The server does not answer at all (refused, hung, wrong address)."""


class BadServerAnswer(RuntimeError):
    """The server answered, but not as an OpenAI-compatible server answers."""


class MalformedChunk(ValueError):
    """A piece of a stream that is not what an OpenAI-compatible server sends."""


@dataclass(frozen=True)
class Timeouts:
    """Seconds each step of one request may take: ``connect`` (open the connection),
    ``first_token`` (request sent -> first token), ``between_tokens`` (one token -> the next;
    SSE pings do not count as tokens), ``total`` (the whole request), and ``tokenize`` (one
    answer of vLLM's ``/tokenize`` or ``/detokenize``, which the random dataset needs). Each is
    a finite number of seconds above 0 (at most an hour)."""

    connect: float = settings.SERVE_CONNECT_TIMEOUT_S
    first_token: float = settings.SERVE_FIRST_TOKEN_TIMEOUT_S
    between_tokens: float = settings.SERVE_TOKEN_TIMEOUT_S
    total: float = settings.SERVE_TOTAL_TIMEOUT_S
    tokenize: float = settings.SERVE_TOKENIZE_TIMEOUT_S

    #: The command-line flag of each limit, named in the messages.
    FLAGS = {"connect": "--connect-timeout", "first_token": "--first-token-timeout",
             "between_tokens": "--token-timeout", "total": "--total-timeout", "tokenize": "--tokenize-timeout"}

    def __post_init__(self):
        for name, flag in self.FLAGS.items():
            object.__setattr__(self, name, settings.time_limit(getattr(self, name), what=flag))


@dataclass
class SampleRequest:
    prompt: str
    prompt_len: int
    expected_output_len: int


@dataclass
class RequestOutput:
    generated_text: str = ""
    success: bool = False
    latency: float = 0.0
    output_tokens: int = 0
    ttft: float = 0.0
    itl: list = field(default_factory=list)
    prompt_len: int = 0
    error: str = ""
    start_time: float = 0.0
    client_queue_time: float = 0.0
    chunks: int = 0
    bytes_received: int = 0
    received_tail: str = ""     # the last TAIL_BYTES bytes received, undecodable bytes as \\x escapes


# ------------------------------------------------------------------------------ server checks
def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower() or "errno 111" in text.lower():
        return "connection refused"
    return text


def check_server(base_url: str, timeout: float = settings.SERVE_CHECK_TIMEOUT_S) -> list[str]:
    """The model ids a server serves (``GET /v1/models``), never empty. ServerUnreachable when
    it does not answer, BadServerAnswer when its answer is not an OpenAI model list."""
    import httpx

    url = base_url.rstrip("/") + "/v1/models"
    try:
        r = httpx.get(url, timeout=timeout)
    except httpx.ConnectError as exc:
        raise ServerUnreachable(f"cannot reach {base_url} ({_reason(exc)}): is the server running on that host "
                                "and port? Run the lab's cell that starts the server (and wait for it to say it is ready), or fix the URL") from None
    except httpx.TimeoutException:
        raise ServerUnreachable(f"{base_url} did not answer within {timeout:g} s: the server is hung or the "
                                "address is wrong") from None
    except httpx.HTTPError as exc:
        raise ServerUnreachable(f"cannot reach {base_url}: {_reason(exc)}") from None
    if r.status_code != 200:
        raise BadServerAnswer(f"{url} answered HTTP {r.status_code}: not an OpenAI-compatible server? "
                              "Give the server's base URL, e.g. http://127.0.0.1:8000")
    try:
        data = r.json()["data"]
        models = [m["id"] for m in data]
    except (ValueError, KeyError, TypeError):
        raise BadServerAnswer(f"{url} did not return an OpenAI model list ({_excerpt(r.content)}): not an "
                              "OpenAI-compatible server? Give the server's base URL, e.g. http://127.0.0.1:8000") from None
    if not models:
        raise BadServerAnswer(f"{url} lists no models ({_excerpt(r.content)}): the server is still loading its model "
                              "or has none; wait until its /health answers 200, then try again")
    if not all(isinstance(m, str) and m for m in models):
        raise BadServerAnswer(f"{url} lists model ids that are not names ({_excerpt(r.content)}): not an "
                              "OpenAI-compatible server?")
    return models


def _excerpt(data: bytes, n: int = 120) -> str:
    text = data[:n].decode("utf-8", errors="backslashreplace")
    return repr(text) + (" ..." if len(data) > n else "")


# ------------------------------------------------------------------------------ SSE parsing
class SSEBuffer:
    """Splits a byte stream into server-sent-event messages (separated by a blank line; lines end
    in LF, CRLF or CR). Bytes that are not UTF-8 raise MalformedChunk naming their offset (its
    ``messages`` are those complete before the bad byte), and so
    does a message longer than ``settings.SERVE_MAX_SSE_MESSAGE_CHARS``. Linear in the stream's
    length however it is cut into pieces."""

    def __init__(self, max_chars: int = settings.SERVE_MAX_SSE_MESSAGE_CHARS):
        self._dec = codecs.getincrementaldecoder("utf-8")()
        self._parts: list[str] = []     # text after the last message, line endings already LF
        self._size = 0
        self._last = ""                 # its last character ("" when empty)
        self._cr = False                # a CR ended the last piece: maybe the first half of a CRLF
        self._fed = 0
        self.max_chars = max_chars

    def feed(self, data: bytes) -> list[str]:
        pending = self._dec.getstate()[0]       # the start of a character cut by the last piece
        try:
            text = self._dec.decode(data)
        except UnicodeDecodeError as exc:
            # exc.start counts from the pending bytes, which the decoder put before this piece
            offset = self._fed - len(pending) + exc.start
            whole = pending + data
            err = MalformedChunk(f"the stream is not UTF-8 text (byte {whole[exc.start:exc.start + 1]!r} at offset "
                                 f"{offset}): the server or a proxy in between corrupted it")
            # the messages complete before the bad byte, so that what a stream says does not depend on
            # how it was cut into pieces
            err.messages = self._add(whole[:exc.start].decode("utf-8"))
            raise err from None
        self._fed += len(data)
        return self._add(text)

    def _add(self, text: str) -> list[str]:
        if self._cr:
            text = "\r" + text
        self._cr = text.endswith("\r")
        if self._cr:
            text = text[:-1]
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if not text:
            return []
        if "\n\n" not in self._last + text:
            self._parts.append(text)
            self._size += len(text)
            self._last = text[-1]
            if self._size > self.max_chars:
                raise MalformedChunk(f"an SSE message is over {self.max_chars} characters without its blank line: "
                                     "not an OpenAI stream (or a proxy merged the stream)")
            return []
        *msgs, rest = "".join(self._parts + [text]).split("\n\n")
        self._parts, self._size, self._last = [rest], len(rest), rest[-1:]
        return [m.strip() for m in msgs if m.strip()]

    def rest(self) -> str:
        """What is left after the stream ended (a last message without its blank line)."""
        try:
            tail = self._dec.decode(b"", final=True)
        except UnicodeDecodeError:
            raise MalformedChunk("the stream ends inside a UTF-8 character: the server cut it mid-character") from None
        msgs = self._add(tail)
        if self._cr:
            msgs += self._add("\n")
        left = "".join(self._parts).strip()
        self._parts, self._size, self._last = [], 0, ""
        return "\n\n".join(msgs + ([left] if left else []))


def parse_message(msg: str):
    """A parsed JSON payload, "[DONE]", or None (an SSE comment/ping). MalformedChunk otherwise."""
    lines = [line for line in msg.split("\n") if not line.startswith(":")]
    data = "\n".join(line[5:].lstrip() if line.startswith("data:") else line for line in lines
                     if not line.startswith(("event:", "id:", "retry:")))
    if not data.strip():
        return None
    if data == "[DONE]":
        return data
    try:
        return json.loads(data)
    except (json.JSONDecodeError, RecursionError):
        raise MalformedChunk(f"malformed SSE chunk from the server (not JSON): {data[:120]!r}; the server or a "
                             "proxy in between broke the stream") from None


@dataclass
class Chunk:
    """What one OpenAI streaming chunk says: a token (``text``, '' for an empty one) or not
    (None), and the ``usage`` counts if it carries them."""

    text: str | None = None
    completion_tokens: int | None = None
    prompt_tokens: int | None = None


def _bad(what: str, obj) -> MalformedChunk:
    try:
        shown = json.dumps(obj)[:120]
    except (ValueError, RecursionError):
        shown = "(too deeply nested to show)"
    return MalformedChunk(f"not an OpenAI streaming chunk ({what}): {shown}; is the URL an OpenAI-compatible "
                          "server (vLLM, SGLang)?")


def _count(usage: dict, key: str):
    v = usage.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _bad(f"usage.{key} is not a token count", usage)
    return v


def parse_chunk(obj, endpoint: str = "completions") -> Chunk:
    """Check one parsed chunk (see :func:`parse_message`) as vLLM's client reads it: a chunk with
    choices carries a token (``choices[0].text``, or ``.delta.content`` for chat); else its
    ``usage`` carries the token counts. MalformedChunk for anything else, and for an ``error``."""
    if not isinstance(obj, dict):
        raise _bad(f"a JSON {type(obj).__name__}, not an object", obj)
    choices = obj.get("choices")
    if choices:
        if not isinstance(choices, list):
            raise _bad("'choices' is not a list", obj)
        c = choices[0]
        if not isinstance(c, dict):
            raise _bad("choices[0] is not an object", obj)
        if endpoint == "chat":
            delta = c.get("delta")
            if delta is None:
                delta = {}
            if not isinstance(delta, dict):
                raise _bad("choices[0].delta is not an object", obj)
            piece = delta.get("content")
        else:
            piece = c.get("text")
        if piece is not None and not isinstance(piece, str):
            raise _bad("the token text is not a string", obj)
        return Chunk(text=piece or "")
    if "error" in obj:
        raise MalformedChunk(f"the server sent an error mid-stream: {str(obj['error'])[:200]}")
    usage = obj.get("usage")
    if usage:
        if not isinstance(usage, dict):
            raise _bad("'usage' is not an object", obj)
        return Chunk(completion_tokens=_count(usage, "completion_tokens"), prompt_tokens=_count(usage, "prompt_tokens"))
    return Chunk()


class StreamParser:
    """The bytes of one streamed completion -> a :class:`RequestOutput`. The caller passes the
    time each piece arrived, so this has no I/O and no clock (the fuzz tests drive it)."""

    def __init__(self, out: RequestOutput, endpoint: str = "completions", start: float = 0.0):
        self.out, self.endpoint = out, endpoint
        self.start = self.last = start
        self.first = self.done = False
        self.sse_fields = False          # a 'data:' line was seen: the body is server-sent events
        self._sse = SSEBuffer()
        self._text: list[str] = []
        self._tail = b""

    def feed(self, data: bytes, now: float) -> None:
        """One piece of the body, received at ``now``; MalformedChunk if it is not a valid stream."""
        self.out.bytes_received += len(data)
        self._tail = (self._tail + data)[-TAIL_BYTES:]
        try:
            try:
                msgs = self._sse.feed(data)
            except MalformedChunk as exc:
                for msg in getattr(exc, "messages", []):
                    self._message(msg, now)
                raise
            for msg in msgs:
                self._message(msg, now)
        except MalformedChunk:
            self.sync()
            raise

    def sync(self) -> None:
        """Put the text received so far into ``out.generated_text`` (done once at the end, not per
        token: joining per token would cost the client time quadratic in the output's length), and the
        stream's last bytes into ``out.received_tail``."""
        self.out.generated_text = "".join(self._text)
        self.out.received_tail = self._tail.decode("utf-8", errors="backslashreplace")

    def _message(self, msg: str, now: float) -> None:
        if not self.sse_fields and any(line.startswith("data:") for line in msg.split("\n")):
            self.sse_fields = True
        obj = parse_message(msg)
        if obj is None:
            return
        if obj == "[DONE]":
            self.done = True
            return
        if self.done:
            raise MalformedChunk(f"the server sent data after [DONE]: {msg[:120]!r}")
        chunk = parse_chunk(obj, self.endpoint)
        if chunk.text is not None:
            if not self.first:
                self.first = True
                self.out.ttft = now - self.start
            else:
                self.out.itl.append(now - self.last)
            self.last = now
            self.out.chunks += 1
            self._text.append(chunk.text)
            self.out.latency = self.last - self.start
        else:
            if chunk.completion_tokens is not None:
                self.out.output_tokens = chunk.completion_tokens
            if chunk.prompt_tokens is not None:
                self.out.prompt_len = chunk.prompt_tokens

    def finish(self, now: float) -> None:
        """The body ended: the last message, then success or the reason it failed."""
        try:
            for msg in self._sse.rest().split("\n\n"):
                if msg.strip():
                    self._message(msg, now)
        finally:
            self.sync()
        if self.first and not self.sse_fields:
            raise MalformedChunk("the server answered plain JSON, not a stream of server-sent events ('data: ...' "
                                 "lines): it ignored \"stream\": true; is the URL an OpenAI-compatible server (vLLM, "
                                 "SGLang)?")
        if self.first and self.done:
            self.out.success = True
        elif self.first:
            raise MalformedChunk(f"the stream ended after {self.out.chunks} chunks without [DONE]: the server died or "
                                 "closed the connection")
        else:
            raise MalformedChunk("the stream ended without a token: nothing to measure TTFT from")


# ------------------------------------------------------------------------------ one request
def _payload(model: str, req: SampleRequest, endpoint: str, ignore_eos: bool, temperature, extra_body) -> dict:
    if endpoint == "completions":
        payload = {"model": model, "prompt": req.prompt, "repetition_penalty": 1.0,
                   "max_tokens": req.expected_output_len, "logprobs": None}
    elif endpoint == "chat":
        payload = {"model": model, "messages": [{"role": "user", "content": [{"type": "text", "text": req.prompt}]}],
                   "max_completion_tokens": req.expected_output_len}
    else:
        raise ValueError(f"endpoint must be 'completions' or 'chat', got {endpoint!r}")
    payload.update({"stream": True, "stream_options": {"include_usage": True}})
    if temperature is not None:
        payload["temperature"] = temperature
    if ignore_eos:
        payload["ignore_eos"] = True
    if extra_body:
        payload.update(extra_body)
    return payload


def _received(out: RequestOutput) -> str:
    if not out.bytes_received:
        return "0 bytes received"
    return f"{out.chunks} chunks, {out.bytes_received} bytes received, ending {out.received_tail[-80:]!r}"


async def request_one(conns, base_url: str, model: str, req: SampleRequest, endpoint: str = "completions",
                      ignore_eos: bool = True, temperature: float | None = 0.0, extra_body: dict | None = None,
                      pbar=None, timeouts: Timeouts | None = None) -> RequestOutput:
    """Send one streaming request over ``conns`` (:class:`rocmlab.serve.http_stream.Connections` to
    ``base_url``) and time it as vLLM's request functions do. Never raises for what the server does:
    a failed request has ``success=False`` and an ``error`` saying why."""
    t = timeouts or Timeouts()
    path = "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"
    url = base_url.rstrip("/") + path
    body = json.dumps(_payload(model, req, endpoint, ignore_eos, temperature, extra_body)).encode()
    out = RequestOutput(prompt_len=req.prompt_len)
    st = time.perf_counter()
    out.start_time = st
    parser = StreamParser(out, endpoint, st)

    def deadline():
        """(perf_counter time, name) of the limit that applies now."""
        step, name = ((parser.last + t.between_tokens, "between_tokens") if parser.first
                      else (st + t.first_token, "first_token"))
        if st + t.total < step:
            step, name = st + t.total, "total"
        return step, name

    error = ""
    try:
        status, answer = await conns.post(path, body, parser.feed, deadline, t.between_tokens)
        if status != 200:
            error = f"HTTP {status} from {url}: {answer[:300].decode('utf-8', 'backslashreplace')}"
        else:
            parser.finish(time.perf_counter())
    except MalformedChunk as exc:
        error = str(exc)
        parser.sync()
        error = f"{error} ({_received(out)})"
    except http_stream.StepTimeout as exc:
        name = exc.args[0]
        seconds = getattr(t, name)
        what = {"first_token": f"no first token within {seconds:g} s",
                "between_tokens": f"no token for {seconds:g} s after token {out.chunks}",
                "total": f"the request took over {seconds:g} s in all"}[name]
        parser.sync()
        error = (f"timed out: {what} ({_received(out)}): the server is overloaded or hung; "
                 f"raise {Timeouts.FLAGS[name]} if it is just slow")
    except http_stream.ConnectTimeout:
        error = (f"timed out: could not connect to {url} within {t.connect:g} s: the server is overloaded or "
                 f"the address is wrong; raise {Timeouts.FLAGS['connect']} if it is just slow")
    except http_stream.ConnectFailed as exc:
        error = f"cannot connect to {url} ({_reason(exc)}): the server is not running (or died)"
    except http_stream.ConnectionClosed as exc:
        parser.sync()
        error = f"the server closed the connection after {out.chunks} chunks ({exc}; {_received(out)}): did it " \
                "die or restart?"
    except http_stream.BadHTTP as exc:
        parser.sync()
        error = (f"the answer from {url} is not HTTP/1.1 as a server sends it ({exc}; {_received(out)}): is the "
                 "URL an OpenAI-compatible server (vLLM, SGLang)?")
    parser.sync()       # the text received so far, also after a timeout or a dropped connection
    if not error and not out.success:
        error = (f"the request did not complete: the server's answer ended early ({_received(out)}): did it "
                 "die or restart?")
    out.error = error
    if error:
        out.success = False
    if pbar is not None:
        pbar.update(1)
    return out


# ------------------------------------------------------------------------------ tokenizer endpoints
def _post_json(base_url: str, path: str, body: dict, client, timeouts: Timeouts | None) -> dict:
    """POST a JSON body and return the JSON object answered; BadServerAnswer / ServerUnreachable
    with the fix otherwise."""
    import httpx

    t = timeouts or Timeouts()
    url = base_url.rstrip("/") + path
    c = client or httpx
    try:
        r = c.post(url, json=body, timeout=httpx.Timeout(connect=t.connect, read=t.tokenize, write=t.connect,
                                                         pool=t.connect))
    except httpx.ConnectError as exc:
        raise ServerUnreachable(f"cannot reach {url} ({_reason(exc)}): is the server running?") from None
    except httpx.TimeoutException:
        raise ServerUnreachable(f"{url} did not answer within {t.tokenize:g} s: the server is hung or overloaded; "
                                f"raise {Timeouts.FLAGS['tokenize']} if it is just slow, or use the shipped prompts "
                                "(--dataset prompts)") from None
    except httpx.HTTPError as exc:
        raise ServerUnreachable(f"{url}: {type(exc).__name__}: {_reason(exc)}") from None
    if r.status_code != 200:
        raise BadServerAnswer(f"{url} answered HTTP {r.status_code} ({_excerpt(r.content)}): the random dataset "
                              "needs vLLM's /tokenize and /detokenize endpoints; with another server (SGLang) use the "
                              "shipped prompts (--dataset prompts, or prompt_requests())")
    try:
        obj = r.json()
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise BadServerAnswer(f"{url} did not answer a JSON object ({_excerpt(r.content)}): is it vLLM? "
                              "Otherwise use the shipped prompts (--dataset prompts)")
    return obj


def tokenize(base_url: str, model: str, text: str, client=None, timeouts: Timeouts | None = None) -> list[int]:
    """Token ids of ``text`` by the SERVER's tokenizer (vLLM's ``POST /tokenize``), no special tokens."""
    obj = _post_json(base_url, "/tokenize", {"model": model, "prompt": text, "add_special_tokens": False},
                     client, timeouts)
    tokens = obj.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                               for x in tokens):
        raise BadServerAnswer(f"{base_url.rstrip('/')}/tokenize answered {json.dumps(obj)[:120]}: expected "
                              "'tokens', a list of token ids; is it vLLM? Otherwise use the shipped prompts "
                              "(--dataset prompts)")
    return tokens


def detokenize(base_url: str, model: str, tokens: list[int], client=None, timeouts: Timeouts | None = None) -> str:
    """The text of token ids by the server's tokenizer (vLLM's ``POST /detokenize``)."""
    obj = _post_json(base_url, "/detokenize", {"model": model, "tokens": [int(x) for x in tokens]}, client, timeouts)
    text = obj.get("prompt")
    if not isinstance(text, str):
        raise BadServerAnswer(f"{base_url.rstrip('/')}/detokenize answered {json.dumps(obj)[:120]}: expected "
                              "'prompt', a string; is it vLLM? Otherwise use the shipped prompts (--dataset prompts)")
    return text
