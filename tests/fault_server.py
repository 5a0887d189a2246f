"""A fault-injecting OpenAI-compatible chat server for tests, on 127.0.0.1 only.

Each request draws at most one fault with the configured probabilities. The draw is a function of
(the request's content, how many times this same content has been sent, the server seed), so a
retried request meets a fresh draw and a test's outcome does not depend on thread timing.

Faults: ``429`` (with Retry-After), ``500``, ``503``, ``hang`` (sleep past the client timeout),
``close`` (drop the connection without answering), ``truncated_body`` (HTTP body cut short),
``malformed`` (model text that is not JSON), ``truncated`` (model JSON cut at max_tokens),
``refusal`` (the model declines), ``off_list`` (a choice that was not offered).
"""

from __future__ import annotations

import hashlib
import json
import random
import socket
import time
from collections import Counter

from fake_openai import FakeOpenAIServer, default_answer

TRANSPORT = ("429", "500", "503", "hang", "close", "truncated_body")
CONTENT = ("malformed", "truncated", "refusal", "off_list")


class FaultServer(FakeOpenAIServer):
    def __init__(self, faults: dict[str, float], seed: int = 0, hang_s: float = 1.5, retry_after: str = "0.05"):
        unknown = set(faults) - set(TRANSPORT + CONTENT)
        assert not unknown, f"unknown faults {unknown}"
        assert sum(faults.values()) <= 1
        self.faults, self.seed, self.hang_s, self.retry_after = faults, seed, hang_s, retry_after
        self.seen: Counter = Counter()
        self.injected: Counter = Counter()
        super().__init__(behaviour=self._behaviour)
        install_connection_faults(self)
        # A client that timed out on a hang closes its socket; the late write's BrokenPipe is expected.
        self.httpd.handle_error = lambda request, client_address: None

    def _draw(self, body: dict) -> str | None:
        key = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
        key += str(body.get("seed"))
        with self.lock:
            self.seen[key] += 1
            n = self.seen[key]
        u = random.Random(f"{self.seed}|{key}|{n}").random()
        acc = 0.0
        for fault, p in self.faults.items():
            acc += p
            if u < acc:
                with self.lock:
                    self.injected[fault] += 1
                return fault
        return None

    def _behaviour(self, n, prompt, body):
        fault = self._draw(body)
        if fault is None:
            return None
        if fault == "429":
            return 429, {"error": {"message": "Rate limit reached", "type": "requests"}}, {
                "Retry-After": self.retry_after}
        if fault in ("500", "503"):
            return int(fault), {"error": {"message": "server error", "type": "server_error"}}, {}
        if fault == "hang":
            time.sleep(self.hang_s)
            return None
        if fault in ("close", "truncated_body"):
            return fault, None, None  # handled by the request handler below
        answer = default_answer(prompt, body.get("seed", 0))
        if fault == "malformed":
            return "Sure! My decision: " + answer.replace("{", "").replace('"', "")
        if fault == "truncated":
            return answer[: max(1, len(answer) // 2)]
        if fault == "refusal":
            return "I'm sorry, but I can't make decisions on behalf of a persona."
        if fault == "off_list":
            obj = json.loads(answer)
            for field in ("decision", "answer"):
                if field in obj:
                    obj[field] = "Maybe"
            return json.dumps(obj)
        raise AssertionError(fault)


def install_connection_faults(server: FaultServer) -> None:
    """Teach the server's handler to drop connections and cut bodies short."""
    handler = server.httpd.RequestHandlerClass
    original = handler._send

    def _drop(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send(self, status, payload, headers=None):
        if status == "close":
            return _drop(self)
        if status == "truncated_body":
            data = json.dumps({"id": "x", "object": "chat.completion", "choices": [{"index": 0}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data) + 50))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            return _drop(self)
        return original(self, status, payload, headers)

    handler._send = _send
