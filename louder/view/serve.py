"""Running ``louder view``'s Solara server as a child process that never outlives ``louder view``, and the
request handler its plain HTTP views (agents, conventions) share."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from http.server import BaseHTTPRequestHandler


def serve_child(cmd: list[str], env: dict) -> int:
    """Run a server as a child and stop it with us: SIGTERM, SIGINT or SIGHUP sent to this process
    (a script's `kill`, a service manager, a closed terminal) is passed on to the child, which gets
    10 s to shut down before it is killed. Returns the child's exit code."""
    proc = subprocess.Popen(cmd, env=env)
    stopping: list[float] = []

    def forward(signum, _frame):
        stopping.append(time.monotonic())
        if proc.poll() is None:
            proc.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    while True:
        try:
            return proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            if stopping and time.monotonic() - stopping[0] > 10:
                proc.kill()


class JSONHandler(BaseHTTPRequestHandler):
    """A view's request handler: JSON and bytes sent uncached, no request log."""

    def _json(self, data) -> None:
        self._send(json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

    def _send(self, body: bytes, kind: str, code: int = 200) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:  # quiet: the terminal shows louder's own line
        pass
