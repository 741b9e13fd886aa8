"""Keep C libraries' diagnostics off the user's screen (one line per error is the promise).

libmpg123 (inside libsndfile) prints ``Note: Illegal Audio-MPEG-Header ...``, ``Warning: Xing
stream size off ...`` and ``[src/libmpg123/parse.c:...] error: ...`` for damaged mp3 files
(karuta reports the file in its own words); PortAudio's ALSA host API prints lines such as ``Expression '...' failed in
'src/hostapi/alsa/pa_linux_alsa.c', line: 3665`` straight to file descriptor 2 when a device
goes away, and ALSA prints ``ALSA lib ...`` lines; karuta already reports the failure in its
own one line.  ``filter_native_stderr()`` (idempotent, process-wide) puts a pipe (a pty when
stderr is a terminal, so ``isatty`` answers as before) in front of descriptor 2 and forwards
everything except those lines, in order.  Python's own writes to ``sys.stderr`` go through
the same descriptor, so nothing is reordered; ``atexit`` drains the pipe before the process
ends: up to an end mark it writes last (not up to the pipe's end: a child inherits descriptor
2, and one that outlives the drain, such as ``multiprocessing``'s resource tracker, which ends
only after this process, would hold the pipe open).
"""
from __future__ import annotations

import atexit
import os
import re
import sys
import threading

#: lines dropped (matched at the start of a line)
NOISE = re.compile(rb"^(Expression '.*' failed in 'src/|ALSA lib |PaAlsaStream|"
                   rb"Cannot connect to server socket|jack server is not running|"
                   rb"Note: |Warning: |\[src/libmpg123/|\[[^\]]*libmpg123)")

#: what the drain writes last: the forwarder stops there (bytes no program prints)
_END = b"\x00karuta: end of stderr\x00"

_state: dict = {}
_lock = threading.Lock()
#: set by the ``karuta`` command (``reader.cli.main``); library use and in-process tests keep
#: their descriptor 2 as it is
ENABLED = False


def filter_native_stderr() -> bool:
    """Install the filter (once, when ``ENABLED``); False when it is not installed."""
    with _lock:
        if not ENABLED:
            return False
        if _state:
            return True
        try:
            original = os.dup(2)
        except OSError:
            return False
        try:
            if os.isatty(original):
                read_fd, write_fd = os.openpty()
                import termios

                attrs = termios.tcgetattr(write_fd)
                attrs[1] &= ~termios.OPOST  # bytes pass unchanged (no \n -> \r\n)
                termios.tcsetattr(write_fd, termios.TCSANOW, attrs)
            else:
                read_fd, write_fd = os.pipe()
            try:
                sys.stderr.flush()
            except (AttributeError, ValueError, OSError):
                pass
            os.dup2(write_fd, 2)
            os.close(write_fd)
        except OSError:
            os.close(original)
            return False
        t = threading.Thread(target=_forward, args=(read_fd, original), name="karuta-stderr",
                             daemon=True)
        _state.update(original=original, thread=t, pipe=_identity(2), pid=os.getpid())
        t.start()
        atexit.register(_drain)
        return True


def _forward(read_fd: int, out_fd: int) -> None:
    pending = b""
    dropped = False
    while True:
        try:
            chunk = os.read(read_fd, 4096)
        except OSError:  # a pty's master reads EIO once the slave is closed
            chunk = b""
        if not chunk:
            break
        pending += chunk
        end = pending.find(_END)
        if end >= 0:
            pending = pending[:end]
        *lines, pending = pending.split(b"\n")
        out = b""
        for ln in lines:
            # ALSA follows its message with an empty line
            if NOISE.match(ln) or (not ln and dropped):
                dropped = bool(ln)
                continue
            dropped = False
            out += ln + b"\n"
        # a partial line that cannot be noise is shown now (a prompt without a newline), up
        # to what may be the start of the end mark
        if pending and not any(p.startswith(pending[:len(p)]) or pending.startswith(p)
                               for p in _PREFIXES):
            k = pending.find(b"\x00")
            k = k if k >= 0 and _END.startswith(pending[k:]) else len(pending)
            out, pending = out + pending[:k], pending[k:]
        _write_all(out_fd, out)
        if end >= 0:
            break
    if pending and not NOISE.match(pending):
        _write_all(out_fd, pending)
    os.close(read_fd)


_PREFIXES = (b"Expression '", b"ALSA lib ", b"PaAlsaStream", b"Cannot connect", b"jack server",
             b"Note: ", b"Warning: ", b"[")


def _write_all(fd: int, data: bytes) -> None:
    while data:
        try:
            n = os.write(fd, data)
        except OSError:
            return
        data = data[n:]


def _identity(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _drain() -> None:
    """Put the real descriptor back and let the forwarder write what is still in the pipe."""
    original, t = _state.get("original"), _state.get("thread")
    if original is None:
        return
    try:
        sys.stderr.flush()
    except (AttributeError, ValueError, OSError):
        pass
    if os.getpid() == _state["pid"] and _identity(2) == _state["pipe"]:
        # (not when something else has put its own descriptor 2 back, as a test harness
        # catching output does; if it cannot be written, the forwarder ends at the pipe's end)
        _write_all(2, _END)
    os.dup2(original, 2)  # closes our write end: the forwarder sees the end of the pipe
    t.join(timeout=2.0)
