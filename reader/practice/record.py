"""A practice match's results into the stats database, so ``karuta stats`` and the memory
drill learn from matches.

For each human player, after each closed read (``record_read``):

- **a tap** (``StatsDB.record_tap``, the speed drill's table) for the player's first counted
  touch of the read: a take of the read card (``correct``; its reaction from the decisive
  onset, as the grab timer measures), or a fault (``fault``: a wrong territory, a karafuda, a
  wrong card).  The tap is filed under the poem read, with its kimariji at read time.
- **a memory review** of the poem read (``MemoryDeck.review``, FSRS, mode ``kimariji``: the
  player heard the kimariji and had to find the card): a take is right (the reaction is the
  response time), a fault is wrong (Again).  A card the player never touched teaches nothing
  (they may simply have been slower) and is not reviewed.  A review of a poem the memory drill
  has not introduced yet introduces it.

Time is passed in (``ts``, an aware datetime); nothing here reads a clock.
"""
from __future__ import annotations

from datetime import datetime

__all__ = ["record_read", "first_counted", "MODE"]

#: the memory-drill mode a match answer counts as
MODE = "kimariji"


def first_counted(closed, player: str):
    """The player's first touch of the read that the rules counted (take or fault), or None."""
    for j in closed.touches:
        if j.player == player and j.verdict in ("take", "fault"):
            return j
    return None


def record_read(db, session: str, m, closed, ts: datetime, players=None, deck=None) -> int:
    """Record one closed read for ``players`` (default: the match's human seats).  ``deck``: a
    ``reader.memory.deck.MemoryDeck`` to update (default: loaded from ``db``).  Returns the number
    of players recorded."""
    from reader.memory.deck import MemoryDeck, state_name

    if players is None:
        players = [p for p, s in m.seats.items() if s.kind == "human"]
    kami = m.plan.find("kami", closed.poem)
    start = kami[0].start if kami else None
    done = 0
    for p in players:
        j = first_counted(closed, p)
        if j is None:
            continue
        took = j.verdict == "take" and _got_it(closed, p)
        from_kami = None if start is None else round((j.frame - start) * 1000.0 / m.plan.sample_rate, 3)
        db.record_tap(session, closed.poem, ts, kimariji=closed.timing.get("kimariji", ""),
                      reaction_ms=j.reaction_ms, from_kami_ms=from_kami, correct=took,
                      anticipation=j.reaction_ms is not None and j.reaction_ms < 100.0,
                      fault=j.verdict == "fault")
        if deck is None:
            deck = MemoryDeck.from_json(db.memory_cards())
        response = None if j.reaction_ms is None else max(0.0, j.reaction_ms)
        card, rating = deck.review(closed.poem, took, response, MODE, ts)
        db.record_review(session, closed.poem, ts, mode=MODE, correct=took, response_ms=response,
                         rating=int(rating), chosen=j.card, state=state_name(card.state),
                         due=card.due, stability=card.stability, card_json=card.to_json())
        done += 1
    return done


def _got_it(closed, player: str) -> bool:
    """The rules gave the read card to ``player`` (a simultaneous touch goes to the owner)."""
    r = closed.result
    if r is None:  # a send still owed: the event says who took it
        return closed.event.took == player
    return (r.taker if hasattr(r, "taker") else r.took) == player
