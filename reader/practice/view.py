"""What a practice table shows, as plain data: the typed view every front end draws (the
pygame board window, a browser board) and the events it animates — no pygame, no strings
to parse.  ``reader.practice.table`` makes them (``Table.tick``); ``to_json`` turns any of
them into JSON-ready dicts (a browser front end gets them as they are).

The status line is typed: one ``Line`` (what the line says now: the arrangement, the
memorisation, the read counter, the last read's outcome, a send owed, a note from the
network) and at most one ``Verdict`` under it (the latest judgement).  ``words`` below says
them in English for the window; a front end in another language says them its own way.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from reader.practice.board import Territory

__all__ = ["Arrange", "Memorize", "Counter", "ReadOver", "Owes", "Notice", "Waiting",
           "Verdict", "SeatView", "BoardState", "TableView", "Phase", "Read", "Judged",
           "Closed", "Done", "Moved", "Line", "Event", "line_text", "status_text",
           "verdict_text", "panel_texts", "to_json"]


# ------------------------------------------------------------------------------- the line
@dataclass(frozen=True)
class Arrange:
    """Before the memorisation: the player arranges their cards."""
    kind: str = "arrange"


@dataclass(frozen=True)
class Memorize:
    """The memorisation's countdown: ``left_s`` seconds; ``resumed_before``: a resumed
    match's next read (1-based), else ``None``; ``online``: both machines start together
    (nothing to skip)."""
    left_s: float
    resumed_before: int | None = None
    online: bool = False
    kind: str = "memorize"


@dataclass(frozen=True)
class Counter:
    """A read is on: ``read`` of ``due`` (1-based)."""
    read: int
    due: int
    kind: str = "counter"


@dataclass(frozen=True)
class ReadOver:
    """A read is over: what it was and who took it (said only once it is over)."""
    read: int
    poem: int
    kimariji: str
    took: str | None  # "A", "B", "both" (simultaneous: to the owner) or None
    karafuda: bool
    sent: tuple[int, ...] = ()
    kind: str = "read-over"


@dataclass(frozen=True)
class Owes:
    """``sender`` owes ``count`` cards; ``you``: the one player at this screen."""
    sender: str
    count: int
    you: bool
    kind: str = "owes"


@dataclass(frozen=True)
class Notice:
    """A line from elsewhere: the network (a wrong code, a silent link), the sound."""
    text: str
    kind: str = "notice"


@dataclass(frozen=True)
class Waiting:
    """Online: waiting for ``what`` — ``"start"`` (the clocks being measured), ``"send"`` (the
    other player's send), ``"host"`` (this player's send, until the host makes it)."""
    what: str
    kind: str = "waiting"


Line = Arrange | Memorize | Counter | ReadOver | Owes | Notice | Waiting


@dataclass(frozen=True)
class Verdict:
    """The latest judgement, under the line: ``you``: by the one player at this screen."""
    player: str
    verdict: str  # take, fault, miss, late
    reaction_ms: float | None
    you: bool


# ------------------------------------------------------------------------------- the view
@dataclass(frozen=True)
class SeatView:
    """A seat: ``kind`` human / bot / none; ``you``: this screen's only player; ``here``:
    played at this screen; ``count``: its cards left (kyogi) or taken (goshiki)."""
    player: str
    kind: str
    level: int | None
    you: bool
    here: bool
    count: int


@dataclass(frozen=True)
class BoardState:
    """Where every card lies (``reader.practice.boardstate``): kyogi, each player's
    territory (``board.Territory.to_json``: rows of [left, right] groups, 0 an empty place);
    goshiki, each player's ten as laid out and the ones still on the board, and the 場 (ba);
    what is dimmed (``--hints``) and each marked card's mark (take / fault / send)."""
    territories: dict[str, Territory] = field(default_factory=dict)
    hands: dict[str, tuple[int, ...]] = field(default_factory=dict)
    on_board: dict[str, tuple[int, ...]] = field(default_factory=dict)
    ba: tuple[int, ...] = ()
    dim: frozenset[int] = frozenset()
    marks: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TableView:
    """The match as one screen shows it.  ``viewer``: whose side is drawn near; ``phase``:
    arrange, memorize, reading, over; ``count_word``: "left" (kyogi) or "taken";
    ``solo``: (taken, missed, faults, left) alone, else ``None``; ``owed``: (sender, count,
    the highlighted default) while a send is owed; ``countdown``: the "get ready" numeral;
    ``version``: moves when the cards' places change (a front end lays them out again)."""
    phase: str
    viewer: str
    board: BoardState
    seats: tuple[SeatView, ...]
    count_word: str
    line: Line
    verdict: Verdict | None = None
    solo: tuple[int, int, int, int] | None = None
    owed: tuple[str, int, tuple[int, ...]] | None = None
    countdown: str = ""
    version: int = 0


# ------------------------------------------------------------------------------- events
@dataclass(frozen=True)
class Phase:
    phase: str
    kind: str = "phase"


@dataclass(frozen=True)
class Read:
    """A new read began (its poem is not told: that would give it away)."""
    read: int
    kind: str = "read"


@dataclass(frozen=True)
class Judged:
    player: str
    card: int
    frame: int
    verdict: str
    reaction_ms: float | None = None
    kind: str = "judged"


@dataclass(frozen=True)
class Closed:
    """A read closed; ``owes``: (sender, count) of a send still to be picked, or ``None``."""
    read: int
    poem: int
    owes: tuple[str, int] | None
    kind: str = "closed"


@dataclass(frozen=True)
class Done:
    """A read is over, sends made: the cards move.  ``taker``: whose pile the read card goes
    to (a simultaneous touch: its owner's); ``sent``: cards that went across; goshiki:
    ``from_ba`` ((taker, card): a card taken from the 場) and ``into_ba`` ((player, card) each)."""
    read: int
    poem: int
    took: str | None
    taker: str | None
    sent: tuple[int, ...] = ()
    from_ba: tuple[str, int] | None = None
    into_ba: tuple[tuple[str, int], ...] = ()
    kind: str = "done"


@dataclass(frozen=True)
class Moved:
    """A card was dragged to a place (arranging)."""
    poem: int
    row: int
    side: int
    index: int
    kind: str = "moved"


Event = Phase | Read | Judged | Closed | Done | Moved


def to_json(obj):
    """A view or an event as JSON-ready data (dicts, lists, numbers, strings)."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (frozenset, set)):
        return sorted(to_json(x) for x in obj)
    if isinstance(obj, (list, tuple)):
        return [to_json(x) for x in obj]
    return obj


# ------------------------------------------------------------------------------- in English
def line_text(line: Line) -> str:
    """The status line, in English (the board window's)."""
    if isinstance(line, Arrange):
        return "drag your cards · space or click here: start"
    if isinstance(line, Memorize):
        left = line.left_s
        if line.online:
            return f"memorise: {left:.0f} s, then the reading starts on both machines"
        resumed = "" if line.resumed_before is None else f"resumed before read {line.resumed_before} · "
        return f"{resumed}暗記 memorisation {int(left) // 60}:{int(left) % 60:02d} · s: skip"
    if isinstance(line, Counter):
        return f"read {line.read}/{line.due}"
    if isinstance(line, ReadOver):
        who = {"A": "A took it", "B": "B took it", "both": "simultaneous: to the owner"}.get(
            line.took, "空札 (karafuda)" if line.karafuda else "nobody took it")
        sent = f" · sent {', '.join(map(str, line.sent))}" if line.sent else ""
        return f"read {line.read}: {line.poem} {line.kimariji} · {who}{sent}"
    if isinstance(line, Owes):
        who = "you owe" if line.you else f"{line.sender} owes"
        return (f"{who} {line.count} card{'s' if line.count > 1 else ''}: pick on your side "
                "(Enter: the highlighted one)")
    if isinstance(line, Notice):
        return line.text[:120]
    if isinstance(line, Waiting):
        return {"start": "waiting for the other machine: the reading starts once the clocks "
                         "are measured",
                "send": "waiting for the other player's send",
                "host": "sent: waiting for the host"}[line.what]
    return ""


def verdict_text(v: Verdict) -> str:
    who = "you" if v.you else v.player
    react = "" if v.reaction_ms is None else f" {v.reaction_ms / 1000:+.2f} s"
    return f"{who}: {v.verdict}{react}"


def status_text(line: Line, verdict: Verdict | None) -> str:
    """The line with the latest judgement under it: "read 3/50 · you: take +0.42 s"."""
    text = line_text(line)
    if verdict is None:
        return text
    return f"{text.split(' · ')[0]} · {verdict_text(verdict)}"


def panel_texts(view: TableView) -> dict[str, str]:
    """The side panels' text: ``near`` (the viewer's seat) and ``far``."""
    out = {}
    if view.solo is not None:
        taken, missed, faults, left = view.solo
        out["near"] = (f"alone\n{left} left\n{taken} taken\n{missed} missed\n"
                       f"{faults} fault{'s' if faults != 1 else ''}")
        return out
    seats = {s.player: s for s in view.seats}
    other = next((p for p in seats if p != view.viewer), None)
    for name, p in (("near", view.viewer), ("far", other)):
        s = seats.get(p)
        if s is None:
            continue
        if s.kind == "human":
            who = "you" if s.you else ("the other machine" if not s.here else f"player {p}")
        else:
            who = {"bot": f"bot {s.level}", "none": "(empty)"}.get(s.kind, s.kind)
        out[name] = f"{p} · {who}\n{s.count} {view.count_word}"
    return out
