"""Realtime priority for the stamping processes (``tty_stamper.py``, ``x_stamper.py``), which
import it as their sibling (they run as programs, by path): SCHED_FIFO where allowed (root,
CAP_SYS_NICE, an rtprio limit), else a better nice value, else as it is."""
import os


def raise_priority(fifo_level: int = 10) -> None:
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(fifo_level))
    except (AttributeError, OSError):
        try:
            os.nice(-10)
        except OSError:
            pass
