"""Where the practice window draws a card: the window tests click it
(tests/test_practice_window.py, test_online_window.py), as does scripts/bench_online.py
--windows."""
from __future__ import annotations

import random


def card_px(m, seed, poem, viewer="A"):
    """Where the window draws ``poem`` (1280x720 window; ``viewer``'s side near): the same
    placement and viewport."""
    from reader.practice import board as B

    rng = random.Random(f"{seed}/place")
    terr = {p: B.place(m.board[p], rng, universe=m.plan.universe) for p in ("A", "B")}
    boxes = B.kyogi_viewport((1280, 720), m.state.solo).boxes(B.kyogi_board(terr, viewer))
    c = next(b for b in boxes if b.poem == poem)
    return round(c.rect.cx), round(c.rect.cy), c
