"""Moved to ``louder.probes.bai_runner``; this old import path stays for one release."""

from louder.probes.bai_runner import FILES, count_test_calls, run_test, selected, test_task  # noqa: F401
