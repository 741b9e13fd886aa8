"""The games as objects: ``KYOGI`` and ``GOSHIKI`` (``named(name)``, ``of_state(state)``).

One object per game holds everything that differs between them below the practice board —
the state and its deal, what a read's event is in a log line, the log header, the keeper's
entry grammar, the reading preset, where cards lie, what a count on a panel means — the way
python-chess keeps each variant in a ``Board`` subclass instead of testing a variant's name
everywhere.  A game's name (``game.name``, as in a log's ``"rules"`` and on the command line)
is written only here: every other module asks the object (``tests/test_conventions.py``).

Practice adds only its judge and board layout (``reader.practice.games``); the reading engine
asks ``game.reading`` (a ``ReadingPreset``) how a reading is shaped.

This room sits on the reading's floor (``tests/test_layers.py``): it imports ``poems`` and
``reader.base`` only, so ``reader.reading`` may ask it.  Nothing here reads a clock or the
global random generator.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

from reader.base.errors import KarutaError
from reader.match.rules import EntryError, goshiki, kyogi

__all__ = ["ReadingPreset", "Rules", "Kyogi", "Goshiki", "KYOGI", "GOSHIKI", "GAMES", "NAMES",
           "named", "of_state", "player_field", "MAX_KYOGI_CARDS"]

#: kyogi: the most cards a side can hold (50 + 50 = all 100, no karafuda)
MAX_KYOGI_CARDS = 50


@dataclass(frozen=True)
class ReadingPreset:
    """How a reading for a game sounds (``reader.reading.settings`` makes its settings from
    it; ``reader.reading.engine`` builds the plan's shape from it).

    ``values``: the settings that differ from the reading's defaults (``ma_ms`` ...);
    ``opening``: what comes before the first card — ``"joka"`` (上の句 · 下の句 · 下の句 again
    with its 余韻), ``"announce"`` (「ご用意よければ 空札一枚」 and a karafuda poem) or
    ``"joka-once"`` (上の句 · 下の句 with its 余韻); ``waits_for_take``: each 上の句 waits for the
    take before its 下の句 (and the last 下の句 may be left out); ``one_colour``: the reading
    needs a selection (a colour) and a card count larger than it reads it all;
    ``memorize_min``: the memorisation a club reading leaves before the first card."""

    name: str
    values: tuple[tuple[str, Any], ...] = ()
    opening: str = "joka"
    waits_for_take: bool = True
    one_colour: bool = False
    memorize_min: float = 15.0


class Rules:
    """What a game is; ``Kyogi`` and ``Goshiki`` fill it in."""

    #: the name in logs and on the command line
    name: str = ""
    #: the reading preset of a match of this game
    reading: ReadingPreset
    #: memorisation, minutes (rules.md: kyogi 15 min; goshiki about 30 s, seed 004)
    memorize_min: float = 0.0
    #: kyogi: cards lie in territories that the players arrange and that sends change
    territories: bool = False
    #: goshiki: a player may sit out a read (1回休み)
    sits_out: bool = False
    #: what a player's count on the panels and the end screen is ("left" / "taken")
    count_word: str = ""
    #: goshiki: the cards' backs show the 上の句 (the window turns them over on u)
    card_backs: bool = False
    #: what a deal of this game may be given besides a seed ("cards" a side, a "color")
    deal_options: frozenset[str] = frozenset()
    #: the state's type (``of_state``)
    state_type: type = object
    #: a log's header keys and a read line's keys (any other is refused)
    header_keys: frozenset[str] = frozenset()
    read_keys: frozenset[str] = frozenset()
    #: the keeper's help text (``karuta match keep``, '?')
    keeper_help: str = ""

    def __repr__(self) -> str:
        return f"<rules {self.name}>"

    # -- the log -----------------------------------------------------------------------------
    def match_from_header(self, obj: dict, extra: dict):
        """The undoable match a log's header describes (``extra`` gets keys worth keeping)."""
        raise NotImplementedError

    def header_of(self, st) -> dict:
        """The log header of a match from ``st`` (its first state)."""
        raise NotImplementedError

    def read_from_json(self, obj: dict, took):
        """The event of a read line (``obj`` checked for its keys, ``took`` a player or None)."""
        raise NotImplementedError

    # -- the keeper ---------------------------------------------------------------------------
    def seeded(self, rng: random.Random, *, color: str | None, players: int,
               settings: goshiki.Settings):
        """A new undoable match dealt from ``rng`` (``karuta match keep --seed``)."""
        raise NotImplementedError

    def deal_header(self, obj: dict, color: str | None, settings: goshiki.Settings) -> dict:
        """A log header from a deal file's object (``karuta match keep --deal``)."""
        raise NotImplementedError

    def parse_entry(self, poem: int, words: list[str]):
        """The keeper's entry words after the poem number -> an event (``EntryError``)."""
        raise NotImplementedError

    def complete_entry(self, state, ev):
        """An entered event with what the referee need not type added."""
        return ev

    def counts_line(self, state) -> str:
        """The keeper's status counts."""
        raise NotImplementedError

    def players_of(self, state) -> tuple[str, ...]:
        return state.players

    # -- the deal and the plan ---------------------------------------------------------------
    def readable(self, deal) -> range | tuple[int, ...]:
        """The cards this game's plan may read."""
        raise NotImplementedError

    def deal_hands(self, rng: random.Random, cards: int | None, color: str | None,
                   solo: bool) -> tuple[tuple, tuple, str | None]:
        """(A's cards, B's cards, colour) drawn from ``rng``."""
        raise NotImplementedError

    def check_hands(self, a: tuple, b: tuple) -> None:
        """``KarutaError`` if hands of these sizes cannot be this game's."""

    def initial_state(self, deal):
        raise NotImplementedError

    def color_of(self, state, given: str | None) -> str | None:
        """The deal's colour once the rules have its state (goshiki: the cards' colour)."""
        return given

    def reading_poems(self, deal) -> dict:
        """The reading settings a match of this deal fixes (goshiki: the colour's 20)."""
        return {}

    def rules_match(self, initial):
        """The rules' undoable match (``reader.match.rules``) from ``initial``."""
        raise NotImplementedError

    def check_order(self, deal, order) -> None:
        """``KarutaError`` if a plan reading ``order`` cannot play this deal."""

    # -- the board ---------------------------------------------------------------------------
    def board(self, state, deal, players) -> dict[str, tuple[int, ...]]:
        raise NotImplementedError

    def where(self, state, deal, card: int) -> str | None:
        raise NotImplementedError

    def sitting_out(self, state) -> frozenset[str]:
        return frozenset()

    def left_alone(self, state, deal) -> int:
        """Alone: A's cards still to be read."""
        raise NotImplementedError

    # -- a read ------------------------------------------------------------------------------
    def owed_send(self, state, event) -> tuple[str, int] | None:
        """(sender, count) of the send the rules want after ``event`` from ``state``, or
        ``None``."""
        return None

    def sent(self, event) -> tuple[int, ...]:
        """The cards an event sent (none in a game without sends)."""
        return ()

    def moved(self, result) -> tuple[int, ...]:
        """The cards a read's result moved across (sends)."""
        return ()

    def reads_due(self, state, order_len: int, index: int) -> int:
        """How many reads the match has, as "read 4/N" counts them (kyogi: the plan's)."""
        return order_len


# --- kyogi ------------------------------------------------------------------------------------

_SIDE = {"o": "own", "own": "own", "p": "opp", "opp": "opp", "x": "opp"}


class Kyogi(Rules):
    name = "kyogi"
    reading = ReadingPreset(name)
    memorize_min = 15.0
    territories = True
    count_word = "left"
    deal_options = frozenset({"cards"})
    state_type = kyogi.KyogiState
    header_keys = frozenset({"rules", "A", "B", "seed", "cards", "practice"})
    read_keys = frozenset({"read", "took", "touched", "send", "timing"})
    keeper_help = (
        "Enter: POEM [a|b|=|-] [ao ap bo bp] [s CARDS]   e.g. '37 a', '12 b ao', '5 ao bp'\n"
        "  a/b took it, '=' both at once (card to its territory's owner), '-' or nothing: nobody\n"
        "  ao/ap: A touched own/opp territory (besides taking); bo/bp likewise for B\n"
        "  s 12,40: the cards sent (default: lowest-numbered)\n"
        "  u undo   q quit (saved)   ? help"
    )

    # -- the log
    def match_from_header(self, obj, extra):
        hand = obj.get("cards", kyogi.HAND)
        if not _is_int(hand) or not 1 <= hand <= 50:
            raise KarutaError("\"cards\" must be a whole number 1-50 (cards a side)")
        if "cards" in obj:
            extra["cards"] = hand
        return kyogi.KyogiMatch(kyogi.new_state(_poem_list(obj, "A"), _poem_list(obj, "B"), hand))

    def header_of(self, st):
        out: dict = {"rules": self.name, "A": list(st.deal[0]), "B": list(st.deal[1])}
        if len(st.deal[0]) != kyogi.HAND:
            out["cards"] = len(st.deal[0])
        return out

    def read_from_json(self, obj, took):
        touched = obj.get("touched", {})
        if touched is None:
            touched = {}
        if not isinstance(touched, dict):
            raise KarutaError("\"touched\" must be an object like {\"A\": [\"own\"], \"B\": []}")
        for p, sides in touched.items():
            if p not in kyogi.PLAYERS:
                raise KarutaError(f"unknown player {json.dumps(p)} in touched")
            if not isinstance(sides, list):
                raise KarutaError(f"touched {p} must be a list of \"own\"/\"opp\"")
        send = obj.get("send")
        if send is not None and (not isinstance(send, list) or not all(_is_int(c) for c in send)):
            raise KarutaError("\"send\" must be a list of poem numbers")
        if took is not None and took not in kyogi.TOOK:
            raise KarutaError(f"unknown player {json.dumps(took)} in took (A, B, both or null)")
        return kyogi.Read(obj["read"], took, touched, None if send is None else tuple(send))

    # -- the keeper
    def seeded(self, rng, *, color, players, settings):
        return kyogi.KyogiMatch(kyogi.deal(rng))

    def deal_header(self, obj, color, settings):
        return {"rules": self.name, **{k: obj[k] for k in ("A", "B") if k in obj}}

    def parse_entry(self, poem, words):
        took = None
        touched: dict[str, list[str]] = {"A": [], "B": []}
        send: list[int] | None = None
        for w in words:
            if send is not None and w.isdigit():
                send.append(int(w))
            elif w in ("a", "b", "=", "both", "-"):
                took = {"a": "A", "b": "B", "=": "both", "both": "both", "-": None}[w]
            elif re.fullmatch(r"s\d*", w):
                send = [int(w[1:])] if w[1:] else []
            elif m := re.fullmatch(r"([ab]):?(o|p|x|own|opp)", w):
                p, side = m.group(1).upper(), _SIDE[m.group(2)]
                if side not in touched[p]:
                    touched[p].append(side)
            else:
                raise EntryError(f"what is {w!r}? ('?' for help)")
        return kyogi.Read(poem, took, touched, None if send is None else tuple(send))

    def complete_entry(self, state, ev):
        """Add the taking touch(es) the referee need not type."""
        where = state.where(ev.poem)
        if where is None or ev.took is None:
            return ev
        touched = {p: set(ev.touches(p)) for p in kyogi.PLAYERS}
        takers = kyogi.PLAYERS if ev.took == "both" else (ev.took,)
        for p in takers:
            touched[p].add("own" if where == p else "opp")
        return kyogi.Read(ev.poem, ev.took, {p: sorted(t, key=kyogi.SIDES.index)
                                             for p, t in touched.items()}, ev.send)

    def counts_line(self, st):
        return f"A {st.count('A')} · B {st.count('B')} cards left"

    def players_of(self, state):
        return kyogi.PLAYERS

    # -- the deal and the plan
    def readable(self, deal):
        return range(1, 101)

    def deal_hands(self, rng, cards, color, solo):
        n = kyogi.HAND if cards is None else cards
        drawn = rng.sample(range(1, 101), 2 * n) if _cards_ok(n) else []
        return tuple(drawn[:n]), () if solo else tuple(drawn[n:]), None

    def check_hands(self, a, b):
        if len(a) != len(b) and b:
            raise KarutaError(f"A has {len(a)} cards and B {len(b)}: kyogi deals the same number")
        _cards_ok(len(a))

    def initial_state(self, deal):
        return kyogi.new_state(deal.hands["A"], deal.hands["B"], hand=deal.cards)

    def rules_match(self, initial):
        return kyogi.KyogiMatch(initial)

    def check_order(self, deal, order):
        unread = sorted(set(deal.hands["A"] + deal.hands["B"]) - set(order))
        if unread:
            raise KarutaError(f"the reading plan never reads poem {unread[0]}, which is "
                              "dealt: a kyogi match must be able to read every card")

    # -- the board
    def board(self, state, deal, players):
        return {p: state.cards(p) for p in players}

    def where(self, state, deal, card):
        return state.where(card)

    def left_alone(self, state, deal):
        return state.count("A")

    # -- a read
    def owed_send(self, state, event):
        trial = kyogi.apply(state, event).results[-1]
        return (trial.sender, len(trial.sent)) if trial.sent else None

    def sent(self, event):
        return tuple(event.send or ())

    def moved(self, result):
        return tuple(result.sent or ())


# --- goshiki ----------------------------------------------------------------------------------

class Goshiki(Rules):
    name = "goshiki"
    reading = ReadingPreset(name, (("ma_ms", 600), ("yoin_ms", 400), ("take_ms", 0),
                                   ("gap_ms", 250), ("speed", 1.8), ("cards", 17)),
                            opening="announce", waits_for_take=False, one_colour=True,
                            memorize_min=0.5)
    memorize_min = 0.5
    sits_out = True
    count_word = "taken"
    card_backs = True
    deal_options = frozenset({"color"})
    state_type = goshiki.GoshikiState
    header_keys = frozenset({"rules", "color", "A", "B", "C", "reads", "finals", "seed",
                             "practice"})
    read_keys = frozenset({"read", "took", "faults", "lost", "timing"})
    keeper_help = (
        "Enter: POEM [a|b|c|-] [fa fb ...] [la]   e.g. '61 a', '61 b fa', '61 b la'\n"
        "  a/b/c took it, '-' or nothing: nobody   fa: A faulted (fab: A and B)\n"
        "  la: A touched the right card, then a wrong one (a fault; the card is not A's)\n"
        "  u undo   q quit (saved)   ? help"
    )

    # -- the log
    def match_from_header(self, obj, extra):
        hands = [_poem_list(obj, "A"), _poem_list(obj, "B")]
        if "C" in obj:
            hands.append(_poem_list(obj, "C"))
        color = obj.get("color")
        if color is not None and not isinstance(color, str):
            raise KarutaError("\"color\" must be a colour name")
        settings = goshiki.Settings(reads=obj.get("reads", goshiki.DEFAULT_READS),
                                    finals=obj.get("finals", False))
        return goshiki.GoshikiMatch(goshiki.new_state(color, hands, settings))

    def header_of(self, st):
        out: dict = {"rules": self.name, "color": st.color}
        for p, hand in zip(st.players, st.deal):
            out[p] = list(hand)
        out["reads"] = st.settings.reads
        out["finals"] = st.settings.finals
        return out

    def read_from_json(self, obj, took):
        faults = obj.get("faults", [])
        if faults is None:
            faults = []
        if not isinstance(faults, list):
            raise KarutaError("\"faults\" must be a list of players")
        for p in faults:
            player_field(p, "faults")
        lost = player_field(obj.get("lost"), "lost")
        return goshiki.Read(obj["read"], took, tuple(faults), lost)

    # -- the keeper
    def seeded(self, rng, *, color, players, settings):
        return goshiki.GoshikiMatch(goshiki.deal(rng, color, players, settings))

    def deal_header(self, obj, color, settings):
        header = {"rules": self.name, **{k: obj[k] for k in ("A", "B", "C", "color") if k in obj}}
        if color and header.get("color", color) != color:
            raise KarutaError(f"a {header['color']} deal, but --color {color}")
        if color:
            header["color"] = color
        header["reads"], header["finals"] = settings.reads, settings.finals
        return header

    def parse_entry(self, poem, words):
        took = None
        faults: list[str] = []
        lost = None
        for w in words:
            if w in ("a", "b", "c", "-"):
                took = None if w == "-" else w.upper()
            elif re.fullmatch(r"f[abc]+", w):
                for ch in w[1:]:
                    if ch.upper() not in faults:
                        faults.append(ch.upper())
            elif re.fullmatch(r"l[abc]", w):
                lost = w[1].upper()
                if lost not in faults:
                    faults.append(lost)
            else:
                raise EntryError(f"what is {w!r}? ('?' for help)")
        return goshiki.Read(poem, took, tuple(faults), lost)

    def counts_line(self, st):
        return " · ".join(f"{p} {st.count(p)}" for p in st.players) + f" taken · ba {len(st.ba)}"

    # -- the deal and the plan
    def readable(self, deal):
        from poems import COLORS

        return COLORS[deal.color]

    def deal_hands(self, rng, cards, color, solo):
        if cards not in (None, 10):
            raise KarutaError("goshiki deals 10 cards each: --cards does not apply")
        st = goshiki.deal(rng, color)  # (alone: A's 10 are the ones A would get)
        a, b = st.deal
        return a, () if solo else b, st.color

    def color_of(self, state, given):
        return state.color

    def initial_state(self, deal):
        return goshiki.new_state(deal.color, [deal.hands["A"], deal.hands["B"]],
                                 goshiki.Settings())

    def reading_poems(self, deal):
        from poems import COLORS

        return {"poems": COLORS[deal.color], "cards": goshiki.CARDS}

    def rules_match(self, initial):
        return goshiki.GoshikiMatch(initial)

    def check_order(self, deal, order):
        from poems import COLORS

        stray = [n for n in order if n not in COLORS[deal.color]]
        if stray:
            raise KarutaError(f"the reading plan reads poem {stray[0]}, not a card of this "
                              "goshiki deal")

    # -- the board
    def board(self, state, deal, players):
        return {p: tuple(c for c in deal.hands[p] if c in state.board) for p in players}

    def where(self, state, deal, card):
        return deal.owner(card) if card in state.board else None

    def sitting_out(self, state):
        return frozenset(state.sitting_out)

    def left_alone(self, state, deal):
        return sum(1 for c in deal.hands["A"] if c not in state.read_poems)

    # -- a read
    def reads_due(self, state, order_len, index):
        # 17 of the colour's 20 (a deciding tie in finals reads on, one card at a time)
        return min(order_len, max(state.reads_due, index + 1))


# --- helpers ----------------------------------------------------------------------------------

def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _poem_list(obj: dict, key: str) -> list[int]:
    v = obj.get(key)
    if not isinstance(v, list) or not all(_is_int(c) for c in v):
        raise KarutaError(f"\"{key}\" must be a list of poem numbers")
    return v


def player_field(v: Any, where: str) -> Any:
    """A log line's player field: a name or null (``KarutaError`` for another value)."""
    if v is not None and not isinstance(v, str):
        raise KarutaError(f"unknown player {json.dumps(v)} in {where}")
    return v


def _cards_ok(n) -> bool:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_KYOGI_CARDS:
        raise KarutaError(f"--cards {n} is out of range: kyogi deals 1-{MAX_KYOGI_CARDS} "
                          "cards a side")
    return True


KYOGI = Kyogi()
GOSHIKI = Goshiki()
#: every game by name, in the order the command line lists them
GAMES: dict[str, Rules] = {g.name: g for g in (KYOGI, GOSHIKI)}
NAMES: tuple[str, ...] = tuple(GAMES)


def named(name: str, what: str = "rules") -> Rules:
    """The game called ``name`` (``KarutaError`` for another name)."""
    try:
        return GAMES[name]
    except (KeyError, TypeError):
        raise KarutaError(f"unknown {what} {name!r}: choose {' or '.join(NAMES)}") from None


def of_state(state) -> Rules:
    """The game whose state ``state`` is."""
    for g in GAMES.values():
        if isinstance(state, g.state_type):
            return g
    raise TypeError(f"not a match state: {state!r}")
