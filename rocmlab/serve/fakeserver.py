"""A fake OpenAI-compatible streaming server with exact, scripted timing (tests, client checks).

``FakeServer(ttft=0.05, gap=0.01)`` answers ``/v1/completions`` and ``/v1/chat/completions``
with ``max_tokens`` chunks: the first after ``ttft`` seconds, then one every ``gap`` seconds,
a ``usage`` chunk and ``[DONE]``, in server-sent events with chunked transfer encoding, as
vLLM does. Every request runs in its own thread, so the timing does not depend on load or
concurrency: two clients measuring it must agree. ``mode`` scripts failures: ``malformed``
(the second chunk is not JSON), ``die`` (the connection drops after two chunks),
``pings`` (an SSE comment before every chunk), ``cut`` (the body ends after two chunks, without ``[DONE]``), ``error500``, ``nousage``
(no usage chunk). Bad servers for the client's tests are scripted too: ``body=b"..."`` answers every
completion with exactly those bytes (a 200 with a Content-Length); ``replace={i: b"..."}`` sends
those raw bytes instead of chunk ``i``; ``hang_after=k`` stops after ``k`` chunks and holds the
connection open (until ``close()`` or ``hang_s`` seconds); ``bad_from=n`` applies ``replace`` and
``hang_after`` only from the n-th completion request on (the earlier ones are good); ``models=[]`` lists no models; and
``tokenize`` = ok (one token per character) | hang | bad (``{"tokens": "not a list"}``) scripts
vLLM's ``/tokenize`` and ``/detokenize``. It listens on 127.0.0.1 only, and ``close()`` ends
every connection, hanging ones included.

It also runs as its own process, until killed (Lab 04's crash demo kills one)::

    python -m rocmlab.serve.fakeserver --port 8123 [--ttft 0.05] [--gap 0.01] [--model NAME]
"""

from __future__ import annotations

import argparse
import http.server
import json
import socket
import threading
import time


class FakeServer:
    """Streams ``tokens`` chunks per completion with ``gap`` s between them. ``mode``:
    ok | malformed (second chunk is not JSON) | die (closes the socket after two chunks)
    | error500 | nousage (no usage chunk)."""

    def __init__(self, mode="ok", tokens=5, gap=0.01, model="fake-model", ttft=0.0, port=0, replace=None,
                 hang_after=None, hang_s=30.0, models=None, tokenize="ok", bad_from=1, body=None):
        self.mode, self.tokens, self.gap, self.model, self.ttft = mode, tokens, gap, model, ttft
        self.replace, self.hang_after, self.hang_s, self.tokenize = dict(replace or {}), hang_after, hang_s, tokenize
        self.models = [model] if models is None else list(models)
        self.bad_from = bad_from
        self.body = body
        self.requests = 0
        self._conns = set()
        self._stop = threading.Event()
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                outer._conns.add(self.connection)

            def handle_one_request(self):
                if outer._stop.is_set():        # closed: a crashed server answers nothing more
                    self.close_connection = True
                    return
                super().handle_one_request()

            def log_message(self, *a):
                pass

            def do_GET(self):
                if self.path == "/health":      # as vLLM: 200 and an empty body once it serves
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps({"object": "list", "data": [{"id": m} for m in outer.models]}).encode()
                self.send_response(200 if self.path == "/v1/models" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                req = json.loads(self.rfile.read(n))
                if self.path in ("/tokenize", "/detokenize"):
                    self._tokenizer(req)
                    return
                if not self.path.endswith(("/v1/completions", "/v1/chat/completions")):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                outer.requests += 1
                bad = outer.requests >= outer.bad_from
                if outer.body is not None:          # these exact bytes, whatever was asked
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(outer.body)))
                    self.end_headers()
                    self.wfile.write(outer.body)
                    return
                if outer.mode == "error500":
                    body = b'{"error": "model exploded"}'
                    self.send_response(500)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

                def send(data: bytes):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()

                chat = self.path.endswith("chat/completions")
                k = req.get("max_tokens") or req.get("max_completion_tokens") or outer.tokens
                t0 = time.perf_counter()
                for i in range(k):
                    # chunk i is due at ttft + i * gap after the request arrived
                    due = t0 + outer.ttft + i * outer.gap
                    time.sleep(max(0.0, due - time.perf_counter()))
                    if outer.mode == "die" and i == 2:
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if outer.mode == "cut" and i == 2:      # a clean end of body, but no [DONE]
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                        return
                    if bad and outer.hang_after is not None and i == outer.hang_after:
                        outer._stop.wait(outer.hang_s)
                        return
                    if bad and i in outer.replace:
                        send(outer.replace[i])
                        continue
                    if outer.mode == "malformed" and i == 1:
                        send(b'data: {"choices": [{"text": "x"\n\n')
                        continue
                    c = {"delta": {"content": f"t{i}"}} if chat else {"text": f"t{i}"}
                    ping = b": ping\n\n" if outer.mode == "pings" else b""   # SSE comments, to be skipped
                    send(ping + f"data: {json.dumps({'choices': [c]})}\n\n".encode())
                if outer.mode != "nousage":
                    usage = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": k}}
                    send(f"data: {json.dumps(usage)}\n\n".encode())
                send(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _tokenizer(self, req):
                if outer.tokenize == "hang":
                    outer._stop.wait(outer.hang_s)
                    return
                if self.path == "/tokenize":
                    answer = ({"tokens": "not a list"} if outer.tokenize == "bad"
                              else {"tokens": [ord(ch) for ch in req.get("prompt", "")]})
                else:
                    answer = {"prompt": "".join(chr(t) for t in req.get("tokens", []))}
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Quiet(http.server.ThreadingHTTPServer):
            request_queue_size = 128        # the default 5 makes a 6th simultaneous connection wait for TCP retries

            def handle_error(self, request, client_address):
                pass        # a client that hangs up mid-stream is what the tests do on purpose

        self.httpd = Quiet(("127.0.0.1", port), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        """Stop like a crashed server: the listening socket and every open connection go."""
        self._stop.set()
        # the listening socket first, as a crash closes it: shutdown() below waits up to serve_forever's poll
        # interval, and a connection queued in that time would be left half-open, never answered
        try:
            self.httpd.socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.httpd.socket.close()
        self._drop_connections()       # at once, for the same reason
        self.httpd.shutdown()
        self.httpd.server_close()
        self._drop_connections()

    def _drop_connections(self):
        for c in list(self._conns):
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def start_process(ttft: float = 0.0, gap: float = 0.01, model: str = "fake-model", timeout: float = 60.0):
    """A fake server in a process of its own (``python -m rocmlab.serve.fakeserver``), started and
    healthy: a :class:`rocmlab.serve.process.Server` that ``kill()`` ends like a crash."""
    import sys

    from rocmlab.paths import repo_root
    from rocmlab.serve.process import Server, free_port

    port = free_port()
    cmd = [sys.executable, "-m", "rocmlab.serve.fakeserver", "--port", str(port), "--ttft", str(ttft),
           "--gap", str(gap), "--model", model]
    server = Server(cmd, port, cwd=str(repo_root()), name="fake-server").start()
    try:
        server.wait_healthy(timeout, poll=0.1)
    except BaseException:
        server.stop()
        raise
    return server


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rocmlab.serve.fakeserver",
                                description="A scripted OpenAI-compatible streaming server, until killed.")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ttft", type=float, default=0.0, help="seconds to the first chunk")
    p.add_argument("--gap", type=float, default=0.01, help="seconds between chunks")
    p.add_argument("--model", default="fake-model")
    a = p.parse_args(argv)
    server = FakeServer(ttft=a.ttft, gap=a.gap, model=a.model, port=a.port)
    print(f"fake server at {server.url}: first chunk after {a.ttft:g} s, then one every {a.gap:g} s", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
