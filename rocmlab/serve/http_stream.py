"""One HTTP/1.1 POST whose streamed answer is handed over piece by piece as it arrives: the transport of
the benchmark client (:func:`rocmlab.serve.client.request_one`).

It works on asyncio's protocol layer: each piece of the body goes to a callback from the event loop's
own read callback, with the time it arrived, with no task, future or timer per piece. On a small
machine the client shares the CPU with the server it measures, so what the client spends per token
is taken from the server (``benchmarks/serve_vs_vllm_bench.py`` measures it against ``vllm bench
serve``). The limits of a request are one timer that re-arms itself when it fires.

It speaks what OpenAI-compatible servers (vLLM, SGLang, uvicorn) answer: a status line and headers,
then a body framed by ``Transfer-Encoding: chunked``, by ``Content-Length``, or by the end of the
connection; over TCP or TLS (``https://``). Connections are kept alive and reused
(:class:`Connections`, one per benchmark run). Everything it receives is checked: an answer that is
not HTTP raises :class:`BadHTTP` naming the problem.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

MAX_HEAD_BYTES = 64 * 1024      # status line and headers
MAX_LINE_BYTES = 1024           # one chunk-size line
ERROR_BODY_BYTES = 300          # what is kept of a non-200 answer's body
_HEX = frozenset(b"0123456789abcdefABCDEF")



def _ascii_digits(text: str) -> bool:
    """0-9 only: ``str.isdigit`` also takes other scripts' digits and superscripts ("5\u00b20"), which int() refuses."""
    return bool(text) and text.isascii() and text.isdigit()

class BadHTTP(Exception):
    """What the server sent is not HTTP/1.1 as a server answers."""


class ConnectionClosed(Exception):
    """The connection ended before the answer did (``str()`` says where)."""


class ConnectFailed(OSError):
    """The connection could not be opened (refused, unreachable)."""


class ConnectTimeout(Exception):
    """The connection was not open within the connect limit."""


class StepTimeout(Exception):
    """A limit of the request passed; ``args[0]`` is its name (the one ``deadline()`` gave)."""


class _Stale(Exception):
    """A kept-alive connection was closed by the server before it answered anything: try a new one."""


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection, answering one request at a time."""

    def __init__(self):
        self.transport = None
        self.closed = False
        self.reused = False
        self._fut = None

    # ------------------------------------------------------------------ asyncio callbacks
    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        if self._fut is None or self._fut.done():
            self.closed = True              # bytes nobody asked for: never reuse this connection
            self.transport.abort()
            return
        self._got += len(data)
        try:
            if self._head is not None:
                self._read_head(data)
            else:
                self._read_body(data, time.perf_counter())
        except BaseException as exc:        # noqa: BLE001 - the caller's callback raised, or the bytes are bad
            self._fail(exc)

    def connection_lost(self, exc):
        self.closed = True
        fut = self._fut
        if fut is None or fut.done():
            return
        if self._got == 0 and self.reused:
            fut.set_exception(_Stale())
        elif self._head is None and self._framing == "close" and exc is None:
            self._complete()
        elif self._got == 0:
            fut.set_exception(ConnectionClosed("before it answered"))
        else:
            where = "in its headers" if self._head is not None else {
                "chunked": "in the middle of a chunked body", "length": "before the body's Content-Length",
                "close": "with an error"}[self._framing]
            fut.set_exception(ConnectionClosed(f"{where}{f': {exc}' if exc else ''}"))

    # ------------------------------------------------------------------ one request
    def begin(self, request: bytes, on_data, fut) -> None:
        self._fut, self._on_data = fut, on_data
        self._head = b""
        self._got = 0
        self._status = 0
        self._framing = ""
        self._buf = b""
        self._left = 0          # bytes of the body (Content-Length) or of the current chunk still to come
        self._crlf = False      # the CRLF after a chunk's data is due
        self._trailers = False  # the last chunk came: trailers until an empty line
        self._error_body = b""
        self.keep_alive = False
        self.transport.write(request)

    def _fail(self, exc) -> None:
        self.closed = True
        self.transport.abort()
        if self._fut is not None and not self._fut.done():
            self._fut.set_exception(exc)

    def _complete(self) -> None:
        if self._buf or not self.keep_alive:
            self.closed = True
            self.transport.close()
        self._fut.set_result((self._status, self._error_body))

    def _read_head(self, data: bytes) -> None:
        head = self._head + data
        end = head.find(b"\r\n\r\n")
        if end < 0:
            if len(head) > MAX_HEAD_BYTES:
                raise BadHTTP(f"no end of headers within {MAX_HEAD_BYTES} bytes")
            self._head = head
            return
        lines = head[:end].decode("latin-1").split("\r\n")
        rest = head[end + 4:]
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or parts[0] not in ("HTTP/1.1", "HTTP/1.0") or not _ascii_digits(parts[1]) or len(parts[1]) != 3:
            raise BadHTTP(f"the status line is {lines[0][:80]!r}")
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise BadHTTP(f"a header line is {line[:80]!r}")
            headers[name.lower()] = value.strip()
        if 100 <= status < 200:             # an interim answer (100 Continue): the real one follows
            self._head = b""
            if rest:
                self._read_head(rest)
            return
        self._status = status
        self._head = None
        conn = headers.get("connection", "").lower()
        self.keep_alive = (parts[0] == "HTTP/1.1" and conn != "close") or conn == "keep-alive"
        te = headers.get("transfer-encoding", "").lower()
        if te:
            if te.split(",")[-1].strip() != "chunked":
                raise BadHTTP(f"Transfer-Encoding {te!r} is not chunked")
            self._framing = "chunked"
        elif "content-length" in headers:
            cl = headers["content-length"]
            if not _ascii_digits(cl):
                raise BadHTTP(f"Content-Length is {cl[:40]!r}")
            self._framing, self._left = "length", int(cl)
        else:
            self._framing, self.keep_alive = "close", False
        if self._framing == "length" and self._left == 0:
            self._complete()
        elif rest:
            self._read_body(rest, time.perf_counter())

    def _read_body(self, data: bytes, now: float) -> None:
        if self._framing == "chunked":
            body, done = self._dechunk(data)
        elif self._framing == "length":
            body = data[:self._left]
            self._left -= len(body)
            self._buf = data[len(body):]
            done = self._left == 0
        else:
            body, done = data, False
        if body:
            if self._status == 200:
                self._on_data(body, now)
            else:
                self._error_body = (self._error_body + body)[:ERROR_BODY_BYTES]
                done = done or len(self._error_body) >= ERROR_BODY_BYTES
                self.keep_alive = self.keep_alive and done
        if done:
            self._complete()

    def _dechunk(self, data: bytes) -> tuple[bytes, bool]:
        """The body bytes in ``data`` (chunked framing removed), and whether the body ended."""
        buf = self._buf + data if self._buf else data
        pos, n, out = 0, len(buf), []
        while pos < n:
            if self._left:
                take = buf[pos:pos + self._left]
                out.append(take)
                pos += len(take)
                self._left -= len(take)
                if self._left:
                    break
                self._crlf = True
            if self._crlf:
                if n - pos < 2:
                    break
                if buf[pos:pos + 2] != b"\r\n":
                    raise BadHTTP(f"a chunk is longer than its size line said (then {buf[pos:pos + 20]!r})")
                pos += 2
                self._crlf = False
                continue
            if self._trailers:
                if buf.startswith(b"\r\n", pos):
                    self._buf = buf[pos + 2:]
                    return b"".join(out), True
                end = buf.find(b"\r\n\r\n", pos)
                if end < 0:
                    if n - pos > MAX_HEAD_BYTES:
                        raise BadHTTP("trailers without an end")
                    break
                self._buf = buf[end + 4:]
                return b"".join(out), True
            end = buf.find(b"\r\n", pos)
            if end < 0:
                if n - pos > MAX_LINE_BYTES:
                    raise BadHTTP(f"a chunk-size line is over {MAX_LINE_BYTES} bytes")
                break
            size = buf[pos:end].split(b";", 1)[0].strip()
            if not size or not _HEX.issuperset(size) or len(size) > 16:
                raise BadHTTP(f"a chunk-size line is {buf[pos:end][:40]!r}, not a hexadecimal size")
            pos = end + 2
            self._left = int(size, 16)
            if self._left == 0:
                self._trailers = True
        self._buf = buf[pos:]
        return b"".join(out), False


class Connections:
    """Kept-alive connections to the server at ``base_url`` (``http://`` or ``https://``), for the
    requests of one benchmark run: ``async with Connections(url, connect_timeout) as conns``."""

    def __init__(self, base_url: str, connect_timeout: float):
        u = urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"{base_url!r} is not a server's base URL: give its scheme, host and port, "
                             "e.g. http://127.0.0.1:8000")
        self.tls = u.scheme == "https"
        self.host, self.port = u.hostname, u.port or (443 if self.tls else 80)
        self.prefix = u.path.rstrip("/")
        self.host_header = u.netloc.rpartition("@")[2]
        self.connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._ssl = None

    async def __aenter__(self) -> Connections:
        return self

    async def __aexit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for c in self._idle:
            c.closed = True
            if c.transport is not None:
                c.transport.close()
        self._idle.clear()

    async def _open(self, deadline) -> _Connection:
        while self._idle:
            c = self._idle.pop()
            if not c.closed and not c.transport.is_closing():
                c.reused = True
                return c
        loop = asyncio.get_running_loop()
        when, name = deadline()
        left = when - time.perf_counter()
        if left <= 0:
            raise StepTimeout(name)
        limit = min(left, self.connect_timeout)
        if self.tls and self._ssl is None:
            import ssl

            self._ssl = ssl.create_default_context()
        try:
            _, c = await asyncio.wait_for(loop.create_connection(_Connection, self.host, self.port, ssl=self._ssl),
                                          limit)
        except asyncio.TimeoutError:
            raise (ConnectTimeout() if limit == self.connect_timeout else StepTimeout(name)) from None
        except OSError as exc:
            raise ConnectFailed(str(exc)) from None
        return c

    async def post(self, path: str, body: bytes, on_data, deadline, recheck: float) -> tuple[int, bytes]:
        """POST the JSON ``body`` to ``path``. For a 200 answer, ``on_data(piece, arrived)`` gets each
        piece of its body as it arrives (``arrived``: ``time.perf_counter()``; whatever it raises ends
        the request and is raised here) and this returns ``(200, b"")`` when the body is complete;
        another status returns ``(status, the first bytes of its body)``. ``deadline()`` gives
        ``(perf_counter time, name)`` of the limit that applies now; when it passes, StepTimeout(name).
        It is asked again when it passes, and at least every ``recheck`` seconds: a limit may move
        earlier by at most that much (the first token starts the shorter between-tokens limit).
        Also raises ConnectFailed, ConnectTimeout, ConnectionClosed and BadHTTP."""
        request = (f"POST {self.prefix}{path} HTTP/1.1\r\nHost: {self.host_header}\r\n"
                   f"Content-Type: application/json\r\nAccept: text/event-stream, application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1") + body
        for attempt in (1, 2):
            c = await self._open(deadline)
            try:
                return await self._exchange(c, request, on_data, deadline, recheck)
            except _Stale:
                if attempt == 2:
                    raise ConnectionClosed("before it answered") from None
        raise AssertionError("unreachable")

    async def _exchange(self, c: _Connection, request: bytes, on_data, deadline, recheck) -> tuple[int, bytes]:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        timer = None

        def check():
            nonlocal timer
            if fut.done():
                return
            when, name = deadline()
            left = when - time.perf_counter()
            if left <= 0:
                c._fail(StepTimeout(name))
            else:
                timer = loop.call_later(min(left, recheck), check)

        c.begin(request, on_data, fut)
        check()
        try:
            result = await fut
        except BaseException:
            c.closed = True
            c.transport.abort()
            raise
        finally:
            if timer is not None:
                timer.cancel()
            c._fut = None
        if not c.closed:
            self._idle.append(c)
        return result
