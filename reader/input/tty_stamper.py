"""The terminal stamping process (``reader.input.taps.TerminalTaps``), run as a program:
``python -S tty_stamper.py FD POLL_S``.  It ``select()``s the tty ``FD`` every ``POLL_S`` and
stamps each read with ``time.perf_counter_ns()`` as it wakes.  Standard library only (it runs
with ``-S``); asks for realtime priority (SCHED_FIFO) where allowed, else a better nice value.
Frames to the parent: kind (K keys, E end of input, P poll intervals as float32 ms),
perf_counter_ns, payload length, payload.
"""

import os
import select
import struct
import sys
import time

from priority import raise_priority  # a sibling: this runs as a program, by path


def main() -> None:
    fd, poll_s = int(sys.argv[1]), float(sys.argv[2])
    raise_priority()
    out, head = sys.stdout.fileno(), struct.Struct("<cqI")

    def send(kind, ns, payload=b""):
        os.write(out, head.pack(kind, ns, len(payload)) + payload)

    polls, last, flushed = [], None, time.perf_counter_ns()
    try:
        while True:
            ready, _, _ = select.select([fd, 0], [], [], poll_s)
            ns = time.perf_counter_ns()
            if last is not None:
                polls.append((ns - last) / 1e6)
            last = ns
            if fd in ready:
                try:
                    data = os.read(fd, 256)
                except OSError:
                    data = b""
                send(b"E" if not data else b"K", ns, data)
                if not data:
                    break
            if 0 in ready:
                break
            if ns - flushed > 250_000_000 and polls:
                send(b"P", ns, struct.pack(f"<{len(polls)}f", *polls))
                polls, flushed = [], ns
        if polls:
            send(b"P", last, struct.pack(f"<{len(polls)}f", *polls))
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
