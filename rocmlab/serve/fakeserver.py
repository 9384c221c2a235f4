"""A fake OpenAI-compatible streaming server with exact, scripted timing (tests, client checks).

``FakeServer(ttft=0.05, gap=0.01)`` answers ``/v1/completions`` and ``/v1/chat/completions``
with ``max_tokens`` chunks: the first after ``ttft`` seconds, then one every ``gap`` seconds,
a ``usage`` chunk and ``[DONE]``, in server-sent events with chunked transfer encoding, as
vLLM does. Every request runs in its own thread, so the timing does not depend on load or
concurrency: two clients measuring it must agree. ``mode`` scripts failures: ``malformed``
(the second chunk is not JSON), ``die`` (the connection drops after two chunks),
``pings`` (an SSE comment before every chunk), ``cut`` (the body ends after two chunks, without ``[DONE]``), ``error500``, ``nousage``
(no usage chunk). Bad servers for the client's tests are scripted too: ``replace={i: b"..."}`` sends
those raw bytes instead of chunk ``i``; ``hang_after=k`` stops after ``k`` chunks and holds the
connection open (until ``close()`` or ``hang_s`` seconds); ``bad_from=n`` applies ``replace`` and
``hang_after`` only from the n-th completion request on (the earlier ones are good); ``models=[]`` lists no models; and
``tokenize`` = ok (one token per character) | hang | bad (``{"tokens": "not a list"}``) scripts
vLLM's ``/tokenize`` and ``/detokenize``. It listens on 127.0.0.1 only, and ``close()`` ends
every connection, hanging ones included.
"""

from __future__ import annotations

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
                 hang_after=None, hang_s=30.0, models=None, tokenize="ok", bad_from=1):
        self.mode, self.tokens, self.gap, self.model, self.ttft = mode, tokens, gap, model, ttft
        self.replace, self.hang_after, self.hang_s, self.tokenize = dict(replace or {}), hang_after, hang_s, tokenize
        self.models = [model] if models is None else list(models)
        self.bad_from = bad_from
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
        self._drop_connections()       # at once: shutdown() below waits up to serve_forever's poll interval
        self.httpd.shutdown()
        self.httpd.server_close()
        self._drop_connections()

    def _drop_connections(self):
        for c in list(self._conns):
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
