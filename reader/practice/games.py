"""The games a practice match can be: ``KYOGI`` and ``GOSHIKI`` (``game(name)``).

The rules' object of each game (``reader.match.rules.games``: the deal, the reading preset,
the event, where cards lie, what a count means) with what practice adds: how touches are
judged, whether a take settles the read, the read's event from the judged touches, and the
board's layout.  The rest of practice (``match``, ``session``, ``bot``, ``window``, ``report``)
asks the game; its name (``game.name``, as in a log's ``"rules"``) is only read and written at
the edges.

Nothing here reads a clock or the global random generator.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reader.base.errors import KarutaError
from reader.match.rules import games as rules
from reader.match.rules.games import MAX_KYOGI_CARDS

__all__ = ["MAX_KYOGI_CARDS", "Game", "Kyogi", "Goshiki", "KYOGI", "GOSHIKI", "GAMES", "game", "Judged"]


@dataclass(frozen=True)
class Judged:
    """The current read's touches judged in frame order: ``judgements``; ``took``: who has the
    card so far; ``extra``: what the game's event needs besides (kyogi: the sides each player
    touched; goshiki: (faults, lost)); ``take_frame``: the frame of the standing take."""

    judgements: tuple
    took: str | None
    extra: Any
    take_frame: int | None


class Game(rules.Rules):
    """What practice adds to a game's rules; ``Kyogi`` and ``Goshiki`` fill it in."""

    def __repr__(self) -> str:
        return f"<practice game {self.name}>"

    def reading_settings(self, deal, over: dict):
        """The reading settings of a match of this deal (``over``: overrides, e.g. ``ma_ms``)."""
        from reader.reading.settings import preset

        return preset(self.name, **self.reading_poems(deal), **over)

    # -- a read ------------------------------------------------------------------------------
    def judge(self, touches, cur, *, where, window: int, owner, sitting, players,
              judgement) -> Judged:
        """Judge ``touches`` (frame order) of read ``cur``: ``where(card)`` the side a card
        lies on, ``window`` the simultaneous window (frames), ``owner(card)`` whose rows,
        ``judgement(touch, verdict, reason)`` makes a ``Judgement``."""
        raise NotImplementedError

    def settled_at(self, take_frame: int | None, window: int) -> int | None:
        """The frame from which a read may close because its take is settled, or ``None``
        (no take yet, or a game where a take does not end the read)."""
        return None

    def read_event(self, poem: int, judged: Judged, players):
        """The rules event of a read (before any send)."""
        raise NotImplementedError

    # -- the board ---------------------------------------------------------------------------
    def viewport(self, size, solo: bool):
        raise NotImplementedError


class Kyogi(Game, rules.Kyogi):

    def judge(self, touches, cur, *, where, window, owner, sitting, players, judgement):
        out = []
        take_frame: int | None = None
        takers: list[str] = []
        touched = {p: set() for p in players}
        for t in touches:
            p, c, f = t.player, t.card, t.frame
            terr = where(c)
            early_late = _early_late_out(cur, f, terr, c)
            if early_late:
                out.append(judgement(t, *early_late))
                continue
            if take_frame is not None and f > take_frame + window:
                out.append(judgement(t, "dead", "the card was already taken"))
                continue
            touched[p].add("own" if terr == p else "opp")
            if c == cur.poem:
                if take_frame is None:
                    take_frame = f
                if p not in takers:
                    takers.append(p)
                out.append(judgement(t, "take", "took it" if len(takers) == 1
                                     else "simultaneous touch"))
            elif cur.where is None or terr != cur.where:
                out.append(judgement(t, "fault", "karafuda: お手つき" if cur.where is None
                                     else "wrong territory: お手つき"))
            else:
                out.append(judgement(t, "miss", "another card of the right territory (no fault)"))
        took = None if not takers else ("both" if len(takers) == 2 else takers[0])
        return Judged(tuple(out), took, touched, take_frame)

    def settled_at(self, take_frame, window):
        return None if take_frame is None else take_frame + window

    def read_event(self, poem, judged, players):
        from reader.match.rules import kyogi

        return kyogi.Read(poem, judged.took, {p: sorted(judged.extra[p], key=kyogi.SIDES.index)
                                              for p in players})

    def viewport(self, size, solo):
        from reader.practice import board as B

        return B.kyogi_viewport(size, solo=solo)


class Goshiki(Game, rules.Goshiki):

    def judge(self, touches, cur, *, where, window, owner, sitting, players, judgement):
        out = []
        take_frame: int | None = None
        faults: list[str] = []
        lost = None
        holder: str | None = None
        for t in touches:
            p, c, f = t.player, t.card, t.frame
            early_late = _early_late_out(cur, f, where(c), c)
            if early_late:
                out.append(judgement(t, *early_late))
                continue
            if p in sitting:
                out.append(judgement(t, "out", f"{p} sits out this read (1回休み)"))
                continue
            if c == cur.poem:
                if p in faults:
                    out.append(judgement(t, "dead", "faulted on this read: cannot take it"))
                elif holder is None:
                    holder, take_frame = p, f
                    out.append(judgement(t, "take", "took it"))
                elif p != holder and f <= take_frame + window:
                    if owner(c) == p:
                        holder = p
                    out.append(judgement(t, "take" if holder == p else "dead",
                                         "simultaneous touch: to the player in whose rows it lies"))
                else:
                    out.append(judgement(t, "dead", "the card was already taken"))
            else:
                if p not in faults:
                    faults.append(p)
                if holder == p:
                    lost, holder, take_frame = p, None, None
                    out.append(judgement(t, "fault", "a wrong card after the right one: お手つき, "
                                         "the card is lost"))
                else:
                    out.append(judgement(t, "fault", "karafuda: お手つき" if cur.where is None
                                         else "a wrong card: お手つき"))
        return Judged(tuple(out), holder, (tuple(faults), lost), take_frame)

    def read_event(self, poem, judged, players):
        from reader.match.rules import goshiki

        faults, lost = judged.extra
        return goshiki.Read(poem, judged.took, faults, lost)

    def viewport(self, size, solo):
        from reader.practice import board as B

        return B.goshiki_viewport(size, solo=solo)


def _early_late_out(cur, frame: int, where: str | None, card: int) -> tuple[str, str] | None:
    """The verdicts every game gives alike: before the 上の句, after the next one starts, a
    card not on the board."""
    if frame < cur.start:
        return "early", "the 上の句 has not started"
    if cur.closes is not None and frame >= cur.closes:
        return "late", "the next 上の句 has started"
    if where is None:
        return "out", f"poem {card} is not on the board"
    return None


KYOGI = Kyogi()
GOSHIKI = Goshiki()
GAMES: dict[str, Game] = {g.name: g for g in (KYOGI, GOSHIKI)}


def game(name: str) -> Game:
    """The game called ``name`` (``KarutaError`` for another name)."""
    try:
        return GAMES[name]
    except (KeyError, TypeError):
        raise KarutaError(f"unknown rules {name!r}: practice plays "
                          f"{' or '.join(GAMES)}") from None
