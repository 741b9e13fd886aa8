"""Match logs: a JSON Lines file written as a match goes, read back, validated and replayed.

Format (one JSON object per line; blank lines are ignored; line numbers count every line):

First line, the deal and the settings::

    {"rules": "kyogi", "A": [25 poem numbers], "B": [25 poem numbers]}
    {"rules": "goshiki", "color": "blue", "A": [10], "B": [10], "reads": 17, "finals": false}

- kyogi: the 50 poems not in A or B are karafuda.  ``"B": []`` is a match alone (solo: A has
  all the cards on the board; ``reader.match.rules.kyogi``).
- goshiki (extension): ``A``/``B`` are the 10 + 10 cards dealt; ``"C"`` (optional) makes a
  three-player match (A + B + C must then be the 20 cards of the colour, e.g. 7 + 7 + 6);
  ``"color"`` is optional when the cards show it; ``"reads"`` (default 17) and ``"finals"``
  (default false: a tie is a draw; true: a deciding tie reads one more card) are optional.
  ``"B": []`` is a match alone (solo: A's 10, the colour's other 10 are karafuda;
  ``reader.match.rules.goshiki``).
- both: an optional ``"seed"`` (a number) records the seed the deal was drawn from.
  Any other key is refused (a typo would otherwise be silently ignored).
- practice logs (``karuta practice``, reader/match/rules/README.md): kyogi ``"cards"`` (cards a side,
  when not 25) and ``"practice"`` (seats, reading settings) in the header, and an optional
  ``"timing"`` object on each read line; scoring ignores ``practice`` and ``timing``.

Then one line per read, in order:

    kyogi:   {"read": N, "took": "A"|"B"|"both"|null,
              "touched": {"A": ["own"|"opp", ...], "B": [...]}, "send": [cards]}
    goshiki: {"read": N, "took": "A"|"B"|"C"|null, "faults": ["A", ...], "lost": "A"}

``read`` is the poem read and ``took`` is required; ``touched``, ``send``, ``faults`` and
``lost`` are optional (absent = nobody touched / the default send / no faults).  See
``reader.match.rules.kyogi`` and ``reader.match.rules.goshiki`` for what each field means, the default send
(the sender's lowest-numbered cards) and ``lost`` (a fault after touching the right card).

A bad log raises ``LogError("FILE line N: reason")`` — one line, naming the first bad line.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from reader.base.errors import KarutaError, LogError
from reader.match.rules import Outcome
from reader.match.rules import goshiki, kyogi
from reader.match.rules.games import GAMES, NAMES, Rules, named, of_state, player_field
from reader.base.statefiles import decode_json

__all__ = ["LoadedLog", "load", "loads", "header_of", "dumps", "save", "summary", "report",
           "parse_header", "parse_read"]

AnyMatch = Union[kyogi.KyogiMatch, goshiki.GoshikiMatch]

@dataclass
class LoadedLog:
    #: the game's name, as in the header (``game`` is its object)
    rules: str
    match: AnyMatch
    #: extra header keys worth keeping when the log is rewritten (``seed``)
    extra: dict = field(default_factory=dict)

    @property
    def game(self) -> Rules:
        return named(self.rules)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def parse_header(obj: Any) -> LoadedLog:
    """The match a first line describes (``KarutaError`` with a reason if it is bad)."""
    if not isinstance(obj, dict):
        raise KarutaError("the first line must be a JSON object with \"rules\", \"A\" and \"B\"")
    rules = obj.get("rules")
    if not isinstance(rules, str) or rules not in GAMES:
        raise KarutaError(f"\"rules\" must be {' or '.join(json.dumps(n) for n in NAMES)}, "
                          f"not {json.dumps(rules)}")
    game = GAMES[rules]
    unknown = sorted(set(obj) - game.header_keys)
    if unknown:
        raise KarutaError(f"unknown key \"{unknown[0]}\" in the header")
    extra = {}
    if "seed" in obj:
        if not _is_int(obj["seed"]):
            raise KarutaError("\"seed\" must be a whole number")
        extra["seed"] = obj["seed"]
    if "practice" in obj:  # written by karuta practice (reader.practice); scoring ignores it
        if not isinstance(obj["practice"], dict):
            raise KarutaError("\"practice\" must be an object")
        extra["practice"] = obj["practice"]
    match: AnyMatch = game.match_from_header(obj, extra)
    return LoadedLog(rules, match, extra)


def parse_read(rules: str, obj: Any) -> kyogi.Read | goshiki.Read:
    """The event one read line describes (``KarutaError`` with a reason if it is bad)."""
    if not isinstance(obj, dict):
        raise KarutaError("a read line must be a JSON object with \"read\" and \"took\"")
    game = named(rules)
    unknown = sorted(set(obj) - game.read_keys)
    if unknown:
        raise KarutaError(f"unknown key \"{unknown[0]}\" in a {rules} read line")
    if "timing" in obj and not isinstance(obj["timing"], dict):
        raise KarutaError("\"timing\" must be an object (per-read timing; scoring ignores it)")
    if "read" not in obj:
        raise KarutaError("missing \"read\" (the poem number read)")
    if not _is_int(obj["read"]):
        raise KarutaError(f"\"read\" must be a poem number, not {json.dumps(obj['read'])}")
    if "took" not in obj:
        raise KarutaError("missing \"took\" (a player, or null)")
    took = player_field(obj["took"], "took")
    return game.read_from_json(obj, took)


def loads(text: str, name: str = "<log>") -> LoadedLog:
    """Parse and replay a whole log; ``LogError("NAME line N: reason")`` on the first bad line."""
    loaded: LoadedLog | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = decode_json(line)
        except ValueError as e:
            raise LogError(f"{name} line {lineno}: not JSON ({getattr(e, 'msg', e)})") from None
        try:
            if loaded is None:
                loaded = parse_header(obj)
            else:
                loaded.match.push(parse_read(loaded.rules, obj))  # type: ignore[arg-type]
        except LogError:
            raise
        except KarutaError as e:
            raise LogError(f"{name} line {lineno}: {e}") from None
    if loaded is None:
        raise LogError(f"{name} line 1: empty log (the first line names the rules and the deal)")
    return loaded


def load(path: str | os.PathLike) -> LoadedLog:
    path = Path(path)
    try:
        from reader.base.files import read_bounded

        text = read_bounded(path).decode("utf-8-sig")
    except FileNotFoundError:
        raise LogError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise LogError(f"{path} line 1: not JSON (not UTF-8 text)") from None
    except OSError as e:
        raise LogError(f"{path}: cannot read ({e.strerror})") from None
    return loads(text, str(path))


# --- writing --------------------------------------------------------------------------------

def header_of(match: AnyMatch, extra: dict | None = None) -> dict:
    out = of_state(match.initial).header_of(match.initial)
    out.update(extra or {})
    return out


def dumps(match: AnyMatch, extra: dict | None = None) -> str:
    lines = [json.dumps(header_of(match, extra), ensure_ascii=False)]
    lines += [json.dumps(ev.to_json(), ensure_ascii=False) for ev in match.events]
    return "\n".join(lines) + "\n"


def save(path: str | os.PathLike, match: AnyMatch, extra: dict | None = None) -> None:
    """Write the whole log atomically (``reader.base.files.atomic_write_text``): after it returns
    the log is on disk, so a crash or Ctrl-C a moment later loses nothing."""
    from reader.base.files import atomic_write_text

    atomic_write_text(path, dumps(match, extra))


# --- replay output --------------------------------------------------------------------------

def _winner_json(st, outcome: Outcome | None):
    if isinstance(st, goshiki.GoshikiState) and len(st.players) == 3:
        if outcome is None:
            return None, None
        return list(outcome.winners), list(outcome.drawn)
    return (None if outcome is None else outcome.winner), None


def summary(match: AnyMatch) -> dict:
    """The ``--json`` result: per player count and cards, the winner (null while running)."""
    st = match.state
    outcome = st.outcome()
    out: dict = {}
    if isinstance(st, kyogi.KyogiState):
        out["rules"] = of_state(st).name
        for p in kyogi.PLAYERS:
            out[p] = {"count": st.count(p), "cards": list(st.cards(p))}
        if st.solo:  # alone (B dealt nothing): what A did
            out["solo"] = dict(zip(("taken", "missed", "faults"), st.solo_score()))
    else:
        out["rules"] = of_state(st).name
        out["color"] = st.color
        for p in st.players:
            out[p] = {"taken": st.count(p), "cards": list(st.cards(p))}
        out["ba"] = len(st.ba)
        if st.solo:  # alone (B dealt nothing): what A did
            out["solo"] = dict(zip(("taken", "missed", "faults"), st.solo_score()))
    out["reads"] = len(st.results)
    winner, drawn = _winner_json(st, outcome)
    out["winner"] = winner
    if drawn is not None:
        out["draw"] = drawn
    out["reason"] = None if outcome is None else outcome.reason
    return out


def _kimariji_at_read(results, color: str | None) -> list[str]:
    """Each read poem's kimariji as it was when it was read: among the cards in play (all
    100, or a goshiki colour's 20), less those read before it.  The board shows the same
    (76 is わたのはらこ among the 100, わ among the blue 20)."""
    from poems import COLORS
    from poems.kimariji import kimariji_of

    universe = tuple(COLORS[color]) if color is not None else tuple(range(1, 101))
    out, read = [], []
    for r in results:
        try:
            out.append(kimariji_of(r.poem, universe, read).card)
        except KeyError:  # (a poem read twice, or not of the set: the rules refuse both)
            from poems import poem
            out.append(poem(r.poem).kimariji)
        read.append(r.poem)
    return out


def report(match: AnyMatch, last: int | None = None) -> str:
    """A readable summary and a per-read table (the last ``last`` reads, or all)."""
    st = match.state
    outcome = st.outcome()
    lines = []
    n = len(st.results)
    if isinstance(st, kyogi.KyogiState):
        head = f"{of_state(st).name}{' alone' if st.solo else ''}, {n} read{'s' if n != 1 else ''}"
        if st.solo:
            taken, missed, faults = st.solo_score()
            lines.append(head + (f": {outcome.reason}" if outcome else
                                 f": in progress ({taken} taken, {missed} missed, {faults} "
                                 f"fault{'s' if faults != 1 else ''})"))
        else:
            lines.append(head + (f": {outcome.winner} wins ({outcome.reason})" if outcome
                                 else ": in progress"))
        for p in kyogi.PLAYERS:
            cards = " ".join(str(c) for c in st.cards(p))
            lines.append(f"  {p}: {st.count(p):2d} card{'s' if st.count(p) != 1 else ' '}  {cards}"
                         .rstrip())
        rows = [("read", "poem", "kimariji", "lies", "took", "faults", "sent", "A", "B", "case")]
        kim = _kimariji_at_read(st.results, None)
        for i, r in enumerate(st.results, 1):
            faults = " ".join(f"{p}{'×2' if r.fault_count(p) == 2 else ''}"
                              for p in kyogi.PLAYERS if r.fault_count(p)) or "-"
            sent = (f"{r.sender}→{kyogi.other(r.sender)} " + ",".join(map(str, r.sent))
                    if r.sent else "-")
            took = {"both": "both→" + (r.taker or "")}.get(r.took or "", r.took or
                                                          (f"-→{r.taker}" if r.taker else "-"))
            rows.append((str(i), str(r.poem), kim[i - 1], r.where or "karafuda", took,
                         faults, sent, str(r.counts[0]), str(r.counts[1]), " ".join(r.cases)))
    else:
        players = st.players
        head = (f"{of_state(st).name} ({st.color}){' alone' if st.solo and not outcome else ''}, {n} of "
                f"{st.settings.reads} reads")
        if st.solo:
            taken, missed, faults = st.solo_score()
            head += (f": {outcome.reason}" if outcome else
                     f": in progress ({taken} taken, {missed} missed, {faults} "
                     f"fault{'s' if faults != 1 else ''})")
        elif outcome is None:
            head += ": in progress"
        elif outcome.winners and not outcome.drawn and len(outcome.winners) == 1:
            head += f": {outcome.winners[0]} wins ({outcome.reason})"
        elif outcome.winners:
            head += f": {' and '.join(outcome.winners)} win ({outcome.reason})"
        else:
            head += f": {outcome.reason}"
        lines.append(head)
        for p in players:
            cards = " ".join(str(c) for c in st.cards(p))
            lines.append(f"  {p}: {st.count(p):2d} taken  {cards}".rstrip())
        lines.append(f"  ba: {len(st.ba)}" + (f"  ({' '.join(map(str, st.ba))})" if st.ba else ""))
        if st.sitting_out:
            lines.append(f"  sits out the next read: {', '.join(sorted(st.sitting_out))}")
        rows = [("read", "poem", "kimariji", "took", "faults", "ba moves") + players + ("ba",)]
        kim = _kimariji_at_read(st.results, st.color)
        for i, r in enumerate(st.results, 1):
            faults = " ".join(p + ("(lost)" if r.lost == p else "") for p in r.faults) or "-"
            moves = []
            if r.from_ba is not None:
                moves.append(f"{r.took}+{r.from_ba}")
            moves += [f"{p}→ba {c}" for p, c in r.into_ba]
            moves += [f"{p} sits out" for p in r.sit_out]
            rows.append((str(i), str(r.poem), kim[i - 1], r.took or "-", faults,
                         ", ".join(moves) or "-") + tuple(str(c) for c in r.counts) + (str(r.ba),))
    if last is not None:
        rows = rows[:1] + rows[1:][-last:] if last > 0 else rows[:1]
    if len(rows) > 1:
        from reader.ui.term import table

        lines.append("")
        lines += table(rows)  # (columns by display width: kana and kanji are two columns)
    return "\n".join(lines)
