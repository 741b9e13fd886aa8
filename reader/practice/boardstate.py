"""Where every card of a practice match lies, whose side it is on and what is dimmed: pure
(no pygame), beside ``board`` (the geometry).  The board window lays these places out in
pixels (``paint.Scene``); a browser board does the same with its own sizes.

``board_state(m)`` reads it off a ``PracticeMatch`` (its places follow every take and send:
``PracticeMatch.layout``); ``done_event`` says what moved when a read was over, for a front
end that animates it.
"""
from __future__ import annotations

from reader.practice.view import BoardState, Done

__all__ = ["board_state", "done_event"]


def board_state(m, *, dim: frozenset[int] = frozenset(),
                marks: dict[int, str] | None = None) -> BoardState:
    """The board of match ``m`` now: kyogi, each territory as it lies (a taken card's place
    left empty); goshiki, each player's ten as laid out, those still on the board, the 場."""
    marks = dict(marks or {})
    if m.game.territories:
        return BoardState(territories=dict(m.layout()), on_board=dict(m.board), dim=dim,
                          marks=marks)
    return BoardState(hands=dict(m.layout()), on_board=dict(m.board), ba=tuple(m.state.ba),
                      dim=dim, marks=marks)


def done_event(m, closed, before: BoardState) -> Done:
    """What moved when read ``closed`` was over (its sends made), from the board ``before``:
    the read card to its taker's pile (a simultaneous touch: to the side it lay on, or in
    goshiki its owner's), sent cards across, goshiki's 場 cards."""
    took = closed.event.took
    taker = took if took in ("A", "B") else None
    if took == "both":
        if m.game.territories:
            taker = next((p for p, t in before.territories.items() if closed.poem in t), None)
        else:
            taker = m.deal.owner(closed.poem)
    res = None if m.game.territories else closed.result
    return Done(read=closed.index, poem=closed.poem, took=took, taker=taker,
                sent=tuple(m.game.sent(closed.event)),
                from_ba=None if res is None or res.took is None or res.from_ba is None
                else (res.took, res.from_ba),
                into_ba=tuple((p, c) for p, c in res.into_ba) if res is not None else ())
