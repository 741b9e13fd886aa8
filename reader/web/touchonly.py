"""The touch-only mode's clock (issue 36: the laptop's speaker reads, the device only takes
touches): the page measures the laptop's clock against its own over the WebSocket with the
two-laptop match's ping and pong (``online.SCHEMAS``' messages, answered as the match answers
them) and its ``static/clocksync.js`` (``online.ClockSync``'s rule, tested equal on the same
round trips), so a touch's ``timeStamp`` has an instant on the laptop's clock, within half the
sync's width.  The board page pings every 100 ms (which also keeps a phone's Wi-Fi awake).

Not yet: the laptop playing the match itself and judging a touch by that instant on its
output's timeline (``karuta practice --web`` still plays the reading on the device).
"""
from __future__ import annotations

from reader.practice import online

__all__ = ["SCHEMAS", "pong"]

#: the match's own ping (the page's clock, s) and pong (ours: received, replied)
SCHEMAS = {"ping": online.SCHEMAS["ping"], "pong": online.SCHEMAS["pong"]}


def pong(msg: dict, received: float, replied: float) -> dict:
    """The answer to the page's ``ping``: its time, ours when it came and when we reply."""
    return {"t": "pong", "id": msg["id"], "a": msg["a"], "b": received, "c": replied}
