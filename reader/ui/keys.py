"""Single-key input from the terminal, without blocking the caller for long.

``KeyReader`` puts a tty into cbreak mode (keys arrive one at a time, no echo) and restores it
on exit, also on Ctrl-C.  On a pipe (tests, scripts) it reads characters as they come.  Each key
is stamped with ``time.perf_counter_ns()`` as it is taken in (grab timing needs that).

    with KeyReader() as keys:
        key = keys.get(timeout=0.02)   # -> Key(char, ns) or None
"""
from __future__ import annotations

import os
import select
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Key:
    char: str
    ns: int  # time.perf_counter_ns() when taken in


class KeyReader:
    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stdin
        self.fd: int | None = None
        self._saved = None
        self.closed = False
        self._pending = b""

    def __enter__(self) -> "KeyReader":
        try:
            self.fd = self.stream.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None
            self.closed = True
            return self
        if os.isatty(self.fd):
            import termios
            import tty

            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        return self

    def __exit__(self, *exc) -> None:
        if self._saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def get(self, timeout: float = 0.0) -> Key | None:
        """The next key, or None after ``timeout`` seconds (0 = just look)."""
        if self.closed or self.fd is None:
            if timeout:
                time.sleep(timeout)
            return None
        if not self._pending:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return None
            data = os.read(self.fd, 64)
            if not data:  # end of input (a pipe closed): no more keys
                self.closed = True
                return None
            self._pending = data
        ns = time.perf_counter_ns()
        # decode one UTF-8 character
        for n in range(1, 5):
            try:
                ch = self._pending[:n].decode("utf-8")
            except UnicodeDecodeError:
                continue
            self._pending = self._pending[n:]
            return Key(ch, ns)
        self._pending = self._pending[1:]
        return None
