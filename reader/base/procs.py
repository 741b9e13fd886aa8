"""Ending the small helper processes karuta starts (the terminal and X stampers, the audio
process): they end when their stdin closes; one that lingers is killed."""
from __future__ import annotations

import subprocess


def end_helper(proc: subprocess.Popen, timeout: float = 1.0) -> None:
    """Close ``proc``'s stdin (its signal to end), wait up to ``timeout`` s, then kill it."""
    try:
        proc.stdin.close()
    except OSError:  # a broken pipe: it is gone already
        pass
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
