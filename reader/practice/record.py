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

A match played on a phone's or tablet's page (``record_web``) is filed per player: a session
for each player's name and the calibration their device had, and a touch whose device was not
calibrated (its log ``note``'s ``calibration_ms`` null: the touch panel's 10-30 ms are in it)
is a take or a fault with no reaction time -- ``karuta stats`` leaves it out of the reaction
figures and says how many it left out.

Time is passed in (``ts``, an aware datetime); nothing here reads a clock.
"""
from __future__ import annotations

from datetime import datetime

__all__ = ["record_read", "record_web", "first_counted", "timed", "MODE"]

#: the memory-drill mode a match answer counts as
MODE = "kimariji"


def first_counted(closed, player: str):
    """The player's first touch of the read that the rules counted (take or fault), or None."""
    for j in closed.touches:
        if j.player == player and j.verdict in ("take", "fault"):
            return j
    return None


def timed(j) -> bool:
    """The touch has a reaction time to learn from: not one of a device that was not
    calibrated (a page's touch notes its device's ``calibration_ms``; null: none), nor one
    made after the page's sound had a gap (its ``gap_ms``)."""
    if not j.note:
        return True
    return not (("calibration_ms" in j.note and j.note["calibration_ms"] is None)
                or "gap_ms" in j.note)


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
        reaction = j.reaction_ms if timed(j) else None
        db.record_tap(session, closed.poem, ts, kimariji=closed.timing.get("kimariji", ""),
                      reaction_ms=reaction, from_kami_ms=from_kami if timed(j) else None,
                      correct=took, anticipation=reaction is not None and reaction < 100.0,
                      fault=j.verdict == "fault")
        if deck is None:
            deck = MemoryDeck.from_json(db.memory_cards())
        response = None if reaction is None else max(0.0, reaction)
        card, rating = deck.review(closed.poem, took, response, MODE, ts)
        db.record_review(session, closed.poem, ts, mode=MODE, correct=took, response_ms=response,
                         rating=int(rating), chosen=j.card, state=state_name(card.state),
                         due=card.due, stability=card.stability, card_json=card.to_json())
        done += 1
    return done


def record_web(db, m, ts: datetime, players, names: dict | None = None,
               settings: dict | None = None) -> int:
    """The reads of ``m`` closed here (a resumed match's logged reads were filed when they were
    played) into the stats database, for each of ``players``: its first counted touch of each
    read under a ``practice`` session of that player's name (the touch's ``note``, else
    ``names``, else "player A") and the calibration its device had.  ``settings``: more for
    each session's settings (the device).  The number of taps recorded."""
    from reader.memory.deck import MemoryDeck

    sessions: dict[tuple, str] = {}
    deck = MemoryDeck.from_json(db.memory_cards())
    done = 0
    for closed in m.closed:
        for p in players:
            j = first_counted(closed, p)
            if j is None:
                continue
            note = j.note or {}
            name = note.get("name") or (names or {}).get(p) or f"player {p}"
            cal = note.get("calibration_ms")
            key = (p, name, cal)
            if key not in sessions:
                sessions[key] = db.start_session("practice", ts, {
                    **(settings or {}), "rules": m.rules,
                    "seats": {q: s.kind for q, s in m.seats.items()},
                    "seed": m.extra.get("seed"), "web": True, "player": name, "seat": p,
                    "calibration_ms": cal})
            done += record_read(db, sessions[key], m, closed, ts, players=[p], deck=deck)
    return done


def _got_it(closed, player: str) -> bool:
    """The rules gave the read card to ``player`` (a simultaneous touch goes to the owner)."""
    r = closed.result
    if r is None:  # a send still owed: the event says who took it
        return closed.event.took == player
    return (r.taker if hasattr(r, "taker") else r.took) == player
