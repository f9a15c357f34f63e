"""A FAKE OpenAI-style JSON server, for fault injection only: a real vLLM cannot be told to
return NaN for the third window or HTTP 500 for the second. Everything else in the quality
and canary tests runs against the real vLLM CPU server.

`answer(path, body) -> (status, payload)` scripts each POST; payloads are written with
Python's json, which writes NaN and -Infinity as bare literals, as a server that lets them
through would.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, dict], tuple[int, Any]]


def prompt_logprobs(values: list[float]) -> dict:
    """A completions answer whose prompt scored `values` (the first token has none)."""
    entries = [None] + [{str(100 + i): {"logprob": v, "rank": 1}} for i, v in enumerate(values)]
    return {"choices": [{"index": 0, "text": "x", "finish_reason": "length", "prompt_logprobs": entries}]}


class FakeServer:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[tuple[str, dict]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.startswith("/v1/models"):
                    self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
                else:
                    self._send(404, {"error": f"no route {self.path}"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                outer.requests.append((self.path, body))
                self._send(*outer.answer(self.path, body))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)
