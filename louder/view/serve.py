"""Running ``louder view``'s Solara server as a child process that never outlives ``louder view``."""

from __future__ import annotations

import signal
import subprocess
import time


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
