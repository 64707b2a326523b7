"""A stand-in for an OpenAI-compatible `/v1/embeddings` server on 127.0.0.1 that computes real
embeddings with the bundled model (issue 25), for the endpoint provider's tests: in process (the
`stand_in` fixture, its URL) or beside a server process."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from notewarden.embeddings.bundled import WordLlamaStatic


class StandIn(BaseHTTPRequestHandler):
    """`POST /v1/embeddings` as OpenAI-compatible servers answer it, with the bundled model."""

    model: ClassVar[WordLlamaStatic] = WordLlamaStatic()
    seen: ClassVar[list[dict[str, Any]]] = []
    fail: ClassVar[bool] = False

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        StandIn.seen.append({"body": body, "authorization": self.headers.get("Authorization")})
        if StandIn.fail or self.path != "/v1/embeddings":
            self.send_response(500)
            self.end_headers()
            return
        vectors = self.model.embed(body["input"]) * 3.0  # not unit length: the client normalizes
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        answer = json.dumps({"object": "list", "data": data[::-1], "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stand_in() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    StandIn.seen.clear()
    StandIn.fail = False
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/embeddings"
    server.shutdown()
    server.server_close()
