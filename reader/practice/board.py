"""The practice board's geometry: where every card lies, in millimetres and in pixels.

Pure: no pygame, no clock; randomness (which side a group goes to) from the
``random.Random`` passed in.  The window (``reader.practice.window``) draws what this returns
and asks it which card a touch hit.

Kyogi (rules.md §3), seen from player A (the bottom of the screen)::

    ┌──────────────────────── 870 mm ────────────────────────┐
    │ B 下段  (B's left is the screen's right; cards upside down)
    │ B 中段                                   rows 10 mm apart, cards 52 x 73 mm
    │ B 上段
    │                 30 mm between the territories
    │ A 上段
    │ A 中段
    │ A 下段  (the row nearest the player)
    └────────────────────────────────────────────────────────┘   870 x 508 mm ≈ 1.71 : 1

A territory (``Territory``) is three rows, 0 上段 (jōdan, nearest the middle), 1 中段, 2 下段
(gedan, nearest its player); each row has a left and a right group, from the player's own
view, packed from that edge inwards (players lay cards against the ends of the 87 cm and leave
the middle open).  ``place`` lays a hand out the way players do: most cards on 下段, fewest
on 上段; the 1字決まり on 下段, split into the groups す/さ/せ, む/め and ふ/ほ, each group wholly
on the left or the right; 友札 (cards whose kimariji share all but the last sound, なげき/なげけ)
side by side.  ``move`` is a drag (before memorisation), ``add`` / ``remove`` follow sends and
takes.

Places: a card stays where it lies until its owner moves it.  A group is a list of *places*
from its edge inwards; a card taken or sent away leaves an empty place (``HOLE``) and no other
card moves (a player's next touch at the place they memorised finds the card still there).
A card sent in goes into a free place (``add``); only a drag (``move``, the owner's own side)
shifts cards, and then only within the group it is dropped into.  ``follow`` applies a read's
takes and sends to both territories; ``Territory.to_json`` / ``from_json`` write a territory
into a match log (``reader.practice.match`` keeps the layout and logs it).

Goshiki (rules.md §4): each player has 2 rows of 5, and the two players' front rows touch
head to head in the middle.

Pixels: ``Viewport`` fits the board into a 16:9 window (designed for 1280 x 720, any size up
to full screen), with side panels for the score.  ``hit`` is generous: a touch within
``HIT_MARGIN_MM`` of a card counts, the nearest card winning where margins overlap (players
of other apps complain "I touched it but it missed").
"""
from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property

__all__ = [
    "CARD_W", "CARD_H", "TERRITORY_W", "ROW_GAP", "MIDDLE_GAP", "TERRITORY_D", "BOARD_W",
    "BOARD_D", "CARD_GAP", "HIT_MARGIN_MM", "ROW_NAMES", "ONE_SOUND_GROUPS", "Territory",
    "Rect", "place", "move", "add", "remove", "friend_groups", "row_targets",
    "kyogi_rects", "goshiki_rects", "goshiki_board", "kyogi_board", "Viewport",
    "kyogi_viewport", "goshiki_viewport", "hit",
    "drop_target", "CardBox", "HOLE", "follow", "free_places",
]

# ---------------------------------------------------------------------------- real sizes, mm
CARD_W, CARD_H = 52.0, 73.0
TERRITORY_W = 870.0
ROW_GAP = 10.0
MIDDLE_GAP = 30.0
TERRITORY_D = 3 * CARD_H + 2 * ROW_GAP  # 239
BOARD_W = TERRITORY_W
BOARD_D = 2 * TERRITORY_D + MIDDLE_GAP  # 508 -> 870 / 508 = 1.713
#: between two neighbouring cards of a group (players lay them nearly touching)
CARD_GAP = 2.0
#: goshiki: between a player's two rows (their front rows touch head to head: 0)
GOSHIKI_ROW_GAP = 4.0
GOSHIKI_COL_GAP = 3.0
#: a touch this far outside a card still touches it (the nearest card wins)
HIT_MARGIN_MM = 12.0

ROW_NAMES = ("上段", "中段", "下段")
UPPER, MIDDLE, LOWER = 0, 1, 2
#: the 1字決まり in the groups players lay together (by sound: s, m, h rows)
ONE_SOUND_GROUPS = (("す", "さ", "せ"), ("む", "め"), ("ふ", "ほ"))
#: cards a row holds at CARD_GAP spacing; beyond this (more than 48 a side) they overlap a little
ROW_CAPACITY = int((TERRITORY_W + CARD_GAP) // (CARD_W + CARD_GAP))


@dataclass(frozen=True)
class Rect:
    """x, y (top left), w, h; millimetres on the board or pixels on the screen."""

    x: float
    y: float
    w: float
    h: float

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    def contains(self, px: float, py: float, margin: float = 0.0) -> bool:
        return (self.x - margin <= px < self.x + self.w + margin
                and self.y - margin <= py < self.y + self.h + margin)

    def distance(self, px: float, py: float) -> float:
        """0 inside, else the distance to the nearest edge."""
        dx = max(self.x - px, 0.0, px - (self.x + self.w))
        dy = max(self.y - py, 0.0, py - (self.y + self.h))
        return math.hypot(dx, dy)

    def int_tuple(self) -> tuple[int, int, int, int]:
        return (round(self.x), round(self.y), round(self.x + self.w) - round(self.x),
                round(self.y + self.h) - round(self.y))


@dataclass(frozen=True)
class CardBox:
    """A card on the screen: its rect, whose it is, and whether it is drawn upside down."""

    poem: int
    rect: Rect
    owner: str
    upside_down: bool


# ---------------------------------------------------------------------------- the territory
#: an empty place in a group (a card was taken or sent away from it): the cards beyond it stay
HOLE = 0


@dataclass(frozen=True)
class Territory:
    """Three rows (0 上段, 1 中段, 2 下段), each ``(left, right)``: the places of each group
    listed from that edge inwards, left/right as the territory's own player sees them; a place
    holds a card or is empty (``HOLE``)."""

    rows: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = (((), ()),) * 3

    @property
    def cards(self) -> tuple[int, ...]:
        return tuple(c for left, right in self.rows for c in (*left, *right) if c != HOLE)

    def counts(self) -> tuple[int, int, int]:
        """Cards (not places) on each row."""
        return tuple(sum(1 for c in (*left, *right) if c != HOLE)  # type: ignore[return-value]
                     for left, right in self.rows)

    def places(self, row: int) -> int:
        """Places (cards and empty ones) on a row: they set its spacing."""
        left, right = self.rows[row]
        return len(left) + len(right)

    def to_json(self) -> list:
        """``[[left, right] per row]``, each a list of poems from the edge inwards, 0 an empty
        place."""
        return [[list(left), list(right)] for left, right in self.rows]

    @classmethod
    def from_json(cls, obj) -> Territory:
        """The territory ``to_json`` wrote (``ValueError`` if it is not one)."""
        if not isinstance(obj, list) or len(obj) != 3:
            raise ValueError("a territory is 3 rows")
        rows = []
        for row in obj:
            if not isinstance(row, list) or len(row) != 2:
                raise ValueError("a row is [left, right]")
            groups = []
            for g in row:
                if not isinstance(g, list) or not all(
                        isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 100
                        for c in g):
                    raise ValueError("a group is a list of poems 1-100 (0: an empty place)")
                groups.append(tuple(g))
            rows.append(tuple(groups))
        t = cls(tuple(rows))
        if len(set(t.cards)) != len(t.cards):
            raise ValueError("a card lies in two places")
        return t

    def where(self, poem: int) -> tuple[int, int, int] | None:
        """(row, side 0 left / 1 right, index from the edge), or None."""
        for r, groups in enumerate(self.rows):
            for s, g in enumerate(groups):
                if poem in g:
                    return r, s, g.index(poem)
        return None

    def __contains__(self, poem: int) -> bool:
        return self.where(poem) is not None


def _sounds(universe: Iterable[int], read: Iterable[int]) -> dict[int, tuple[str, int]]:
    """poem -> (kimariji as heard, its length in morae), among ``universe`` minus ``read``."""
    from poems.kimariji import kimariji

    return {n: (k.sound, k.length) for n, k in kimariji(universe, read).items()}


def one_sound_group(first: str) -> int | None:
    for i, g in enumerate(ONE_SOUND_GROUPS):
        if first in g:
            return i
    return None


def friend_groups(cards: Iterable[int], universe: Iterable[int] = range(1, 101),
                  read: Iterable[int] = ()) -> list[tuple[int, ...]]:
    """The hand's cards in groups laid together: 友札 (kimariji sharing all but their last
    sound with another card of the hand: なげき/なげけ, あさぼらけあ/う), and the 1字決まり in
    ``ONE_SOUND_GROUPS``; every other card alone.  Groups in no particular order."""
    cards = sorted(set(cards))
    info = _sounds(universe, read)
    parent = {c: c for c in cards}

    def find(c):
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    from poems.kimariji import kami_heard

    openings = {c: kami_heard(c) for c in cards}
    for i, a in enumerate(cards):
        for b in cards[i + 1:]:
            ka = info.get(a, ("", 6))[1]
            kb = info.get(b, ("", 6))[1]
            if ka == 1 and kb == 1:
                ga, gb = one_sound_group(openings[a][0]), one_sound_group(openings[b][0])
                same = ga is not None and ga == gb
            else:
                need = max(ka, kb) - 1
                common = 0
                for x, y in zip(openings[a], openings[b]):
                    if x != y:
                        break
                    common += 1
                same = need >= 1 and common >= need
            if same:
                parent[find(a)] = find(b)
    groups: dict[int, list[int]] = {}
    for c in cards:
        groups.setdefault(find(c), []).append(c)
    return [tuple(g) for g in groups.values()]


def row_targets(n: int) -> tuple[int, int, int]:
    """How many cards on 上段 / 中段 / 下段 for a hand of ``n``: most on 下段, fewest on 上段
    (25 -> 5 / 8 / 12)."""
    upper = n // 5
    middle = n * 8 // 25
    lower = n - upper - middle
    # a row holds ROW_CAPACITY at the usual spacing; beyond that the extra cards go up a row
    # (and past 3 full rows, rows share evenly and overlap a little)
    even = -(-n // 3)
    if lower > max(ROW_CAPACITY, even):
        lower = max(ROW_CAPACITY, even)
        middle = n - upper - lower
    if middle > max(ROW_CAPACITY, even):
        middle = max(ROW_CAPACITY, even)
    upper = n - middle - lower
    if upper > middle:  # (only when rows overlap: keep 上段 the fewest)
        upper, middle = middle, upper
    return upper, middle, lower


def place(cards: Iterable[int], rng: random.Random, *, universe: Iterable[int] = range(1, 101),
          read: Iterable[int] = ()) -> Territory:
    """Lay a hand out as players do (see the module docstring)."""
    universe = tuple(universe)
    read = tuple(read)
    cards = sorted(set(cards))
    if not cards:
        return Territory()
    info = _sounds(universe, read)
    groups = friend_groups(cards, universe, read)

    def klen(g):
        return min(info.get(c, ("", 6))[1] for c in g)

    ones = [g for g in groups if klen(g) == 1]
    rest = [g for g in groups if klen(g) != 1]
    rng.shuffle(rest)  # equal keys keep a random order: two hands never look alike
    rest.sort(key=lambda g: (klen(g), -len(g)))
    targets = row_targets(len(cards))
    rows: list[list[tuple[int, ...]]] = [[], [], []]
    count = [0, 0, 0]
    for g in ones:
        rows[LOWER].append(g)
        count[LOWER] += len(g)
    for g in rest:  # short kimariji first: they fill 下段, then 中段; the longest go to 上段
        for r in (LOWER, MIDDLE, UPPER):
            if count[r] + len(g) <= targets[r] or r == UPPER:
                rows[r].append(g)
                count[r] += len(g)
                break
    # most on 下段, fewest on 上段, whatever the group sizes did
    for hi, lo in ((UPPER, MIDDLE), (MIDDLE, LOWER), (UPPER, MIDDLE)):
        while count[hi] > count[lo] and rows[hi]:
            g = min(rows[hi], key=len)
            rows[hi].remove(g)
            rows[lo].append(g)
            count[hi] -= len(g)
            count[lo] += len(g)
    out = []
    for r in range(3):
        sides: list[list[int]] = [[], []]
        gs = rows[r]
        firsts = [g for g in gs if klen(g) == 1]
        others = [g for g in gs if klen(g) != 1]
        # the 1字 groups at the outer ends, each wholly on one side, balanced by count
        for g in sorted(firsts, key=len, reverse=True) + sorted(others, key=len, reverse=True):
            a, b = len(sides[0]), len(sides[1])
            s = 0 if a < b else 1 if b < a else rng.randrange(2)
            sides[s].extend(g)
        out.append((tuple(sides[0]), tuple(sides[1])))
    return Territory(tuple(out))


def remove(t: Territory, poem: int) -> Territory:
    """The territory without ``poem``: its place is left empty, every other card stays where
    it lies."""
    rows = tuple(tuple(tuple(HOLE if c == poem else c for c in g) for g in groups)
                 for groups in t.rows)
    return replace(t, rows=rows)


def move(t: Territory, poem: int, row: int, side: int, index: int) -> Territory:
    """Move ``poem`` to ``row`` / ``side`` at place ``index`` from that edge (a drag by the
    territory's owner).  Its old place is left empty; dropped on an empty place (or beyond the
    group's end) it lies there, on a card it pushes that group's cards inwards up to the next
    empty place (cards elsewhere stay where they lie)."""
    if poem not in t:
        raise KeyError(f"card {poem} is not in this territory")
    if row not in (0, 1, 2) or side not in (0, 1):
        raise ValueError(f"no row {row} / side {side}")
    t = remove(t, poem)
    rows = [list(map(list, groups)) for groups in t.rows]
    g = rows[row][side]
    index = max(0, index)
    if index >= len(g):
        # beyond the group's end: there, with empty places between (as far as the row holds)
        room = max(len(g), ROW_CAPACITY - len(rows[row][1 - side]) - 1)
        g.extend([HOLE] * (min(index, room) - len(g)))
        g.append(poem)
    elif g[index] == HOLE:
        g[index] = poem
    else:
        g.insert(index, poem)
        nxt = next((i for i in range(index + 1, len(g)) if g[i] == HOLE), None)
        if nxt is not None:
            del g[nxt]  # (the push stops at the first empty place)
    return Territory(tuple((tuple(a), tuple(b)) for a, b in rows))


def free_places(t: Territory, row: int, side: int) -> list[int]:
    """The places of a group a card may be put in without moving any other card: its empty
    places, then the next one beyond its end (if the row has room for one more at its
    spacing)."""
    g = t.rows[row][side]
    out = [i for i, c in enumerate(g) if c == HOLE]
    if _row_positions(t.places(row) + 1) == _row_positions(t.places(row)):
        out.append(len(g))
    return out


def add(t: Territory, poem: int, rng: random.Random, *, universe: Iterable[int] = range(1, 101),
        read: Iterable[int] = ()) -> Territory:
    """``poem`` arrives (a send) and goes into a free place (``free_places``: no card already
    there moves): beside a 友札 already there if a place next to it is free, else a 1字決まり
    on 下段 (on the side with fewer cards), else in the row furthest below its share; within a
    group the free place nearest the edge."""
    if poem in t:
        return t
    universe, read = tuple(universe), tuple(read)
    cards = (*t.cards, poem)
    for g in friend_groups(cards, universe, read):
        if poem in g and len(g) > 1:
            mate = next(c for c in g if c != poem)
            r, s, i = t.where(mate)
            free = free_places(t, r, s)
            for j in (i + 1, i - 1):
                if j >= 0 and j in free:
                    return Territory(_put(t.rows, r, s, poem, j))
    info = _sounds(universe, read)
    counts = t.counts()
    if info.get(poem, ("", 6))[1] == 1:
        order = [LOWER, MIDDLE, UPPER]
    else:
        targets = row_targets(len(cards))
        order = sorted((LOWER, MIDDLE, UPPER), key=lambda r: counts[r] - targets[r])
    for row in order:
        sides = [s for s in (0, 1) if free_places(t, row, s)]
        if not sides:
            continue
        n = [sum(1 for c in g if c != HOLE) for g in t.rows[row]]
        if len(sides) == 2:
            side = 0 if n[0] < n[1] else 1 if n[1] < n[0] else rng.randrange(2)
        else:
            side = sides[0]
        return Territory(_put(t.rows, row, side, poem, free_places(t, row, side)[0]))
    # every row full at its spacing (a hand of more than 48): the row with the fewest places
    row = min(order, key=t.places)
    side = 0 if len(t.rows[row][0]) <= len(t.rows[row][1]) else 1
    return Territory(_put(t.rows, row, side, poem, len(t.rows[row][side])))


def _put(rows, row, side, poem, index):
    """``rows`` with ``poem`` in place ``index`` of a group (an empty place, or its end)."""
    out = [list(map(list, groups)) for groups in rows]
    g = out[row][side]
    if index < len(g):
        g[index] = poem
    else:
        g.extend([HOLE] * (index - len(g)))
        g.append(poem)
    return tuple((tuple(a), tuple(b)) for a, b in out)


def follow(territories: Mapping[str, Territory], board: Mapping[str, Iterable[int]],
           rng: random.Random, *, universe: Iterable[int] = range(1, 101),
           read: Iterable[int] = (), placed: Mapping[int, tuple[str, int, int, int]] | None = None
           ) -> tuple[dict[str, Territory], dict[int, tuple[str, int, int, int]]]:
    """The territories after a read: ``board`` is each player's cards now (the match's).  A
    card no longer on its side leaves its place empty; a card that arrived (a send) goes into
    a free place (``add``), or into ``placed[card]`` = (player, row, side, index) when that is
    a free place (a resumed log's record).  Returns (territories, where each arrived card
    went)."""
    universe, read = tuple(universe), tuple(read)
    out = dict(territories)
    went: dict[int, tuple[str, int, int, int]] = {}
    for p, t in out.items():
        now = set(board.get(p, ()))
        for c in t.cards:
            if c not in now:
                t = remove(t, c)
        out[p] = t
    for p in out:
        for c in board.get(p, ()):
            t = out[p]
            if c in t:
                continue
            want = (placed or {}).get(c)
            if (want is not None and want[0] == p and want[1] in (0, 1, 2)
                    and want[2] in (0, 1) and want[3] in free_places(t, want[1], want[2])):
                out[p] = Territory(_put(t.rows, want[1], want[2], c, want[3]))
            else:
                out[p] = add(t, c, rng, universe=universe, read=read)
            r, s, i = out[p].where(c)
            went[c] = (p, r, s, i)
    return out, went


# ---------------------------------------------------------------------------- rectangles, mm
def _row_positions(n: int, span: float = TERRITORY_W) -> float:
    """The step between neighbouring cards' left edges for ``n`` cards on one row side: the
    usual spacing, or less (overlapping) when a row holds more than fits."""
    if n <= 1:
        return CARD_W + CARD_GAP
    return min(CARD_W + CARD_GAP, (span - CARD_W) / (n - 1))


def kyogi_rects(t: Territory, near: bool) -> dict[int, Rect]:
    """Board rectangles (mm, the viewer's frame: x right, y down) of a territory; ``near`` for
    the viewer's own (the bottom), else the opponent's (the top, facing the viewer)."""
    out: dict[int, Rect] = {}
    for r, (left, right) in enumerate(t.rows):
        # the row's y: 上段 nearest the middle of the board
        depth_from_player = (2 - r) * (CARD_H + ROW_GAP)  # 下段 0, 中段 83, 上段 166
        y = BOARD_D - CARD_H - depth_from_player if near else depth_from_player
        step = _row_positions(len(left) + len(right))
        for s, group in enumerate((left, right)):
            for i, poem in enumerate(group):
                if poem == HOLE:
                    continue
                from_left_edge = s == 0  # the player's own left
                if not near:  # facing the viewer: their left is the viewer's right
                    from_left_edge = not from_left_edge
                x = i * step if from_left_edge else TERRITORY_W - CARD_W - i * step
                out[poem] = Rect(x, y, CARD_W, CARD_H)
    return out


def kyogi_board(territories: Mapping[str, Territory], viewer: str = "A") -> list[CardBox]:
    """Every card of both territories, in board mm: the viewer's at the bottom, the
    opponent's at the top upside down."""
    out: list[CardBox] = []
    for player, t in territories.items():
        near = player == viewer
        for poem, r in kyogi_rects(t, near).items():
            out.append(CardBox(poem, r, player, not near))
    return out


def goshiki_size() -> tuple[float, float]:
    w = 5 * CARD_W + 4 * GOSHIKI_COL_GAP
    d = 4 * CARD_H + 2 * GOSHIKI_ROW_GAP
    return w, d


def goshiki_rects(rows: tuple[tuple[int, ...], tuple[int, ...]], near: bool) -> dict[int, Rect]:
    """A goshiki player's two rows (``rows[0]`` the front row, heads touching the other
    player's front row in the middle; ``rows[1]`` behind it), 5 a row, left to right as the
    player sees them."""
    w, d = goshiki_size()
    out: dict[int, Rect] = {}
    mid = d / 2
    for r, row in enumerate(rows):
        off = r * (CARD_H + GOSHIKI_ROW_GAP)
        y = mid + off if near else mid - CARD_H - off
        n = len(row)
        left0 = (w - (n * CARD_W + (n - 1) * GOSHIKI_COL_GAP)) / 2
        for i, poem in enumerate(row):
            k = i if near else n - 1 - i
            out[poem] = Rect(left0 + k * (CARD_W + GOSHIKI_COL_GAP), y, CARD_W, CARD_H)
    return out


def goshiki_board(hands: Mapping[str, Iterable[int]], viewer: str = "A") -> list[CardBox]:
    """Both goshiki players' cards (2 rows of 5 each, the first 5 in the front row)."""
    out: list[CardBox] = []
    for player, cards in hands.items():
        cards = tuple(cards)
        near = player == viewer
        for poem, r in goshiki_rects((cards[:5], cards[5:10]), near).items():
            out.append(CardBox(poem, r, player, not near))
    return out


# ---------------------------------------------------------------------------- pixels
@dataclass(frozen=True)
class Viewport:
    """Board millimetres -> window pixels.

    The window is 16:9 (``DESIGN`` 1280 x 720, scaled to any size; a window of another shape
    is letterboxed); the board sits in the middle with ``PANEL`` design px on either side for
    the score, scaled to fit.  ``board_mm``: the board's size (kyogi 870 x 508); ``origin_mm``:
    the board point shown at its top left (a match alone shows only the near territory or
    rows: ``kyogi_viewport``, ``goshiki_viewport``); ``fit_mm``: the size the scale is fitted
    to (default ``board_mm``; goshiki alone keeps the cards as large as on the whole board).
    """

    window: tuple[int, int]
    board_mm: tuple[float, float] = (BOARD_W, BOARD_D)
    origin_mm: tuple[float, float] = (0.0, 0.0)
    fit_mm: tuple[float, float] | None = None

    DESIGN = (1280, 720)
    PANEL = 96  # design px each side
    MARGIN = 10  # design px top and bottom

    @cached_property
    def area(self) -> Rect:
        """The 16:9 area used inside the window (letterboxed)."""
        ww, wh = self.window
        s = min(ww / 16, wh / 9)
        w, h = s * 16, s * 9
        return Rect((ww - w) / 2, (wh - h) / 2, w, h)

    @cached_property
    def design_scale(self) -> float:
        return self.area.w / self.DESIGN[0]

    @cached_property
    def scale(self) -> float:
        """px per mm."""
        a, k = self.area, self.design_scale
        bw, bd = self.fit_mm or self.board_mm
        return min((a.w - 2 * self.PANEL * k) / bw, (a.h - 2 * self.MARGIN * k) / bd)

    @cached_property
    def board(self) -> Rect:
        a, s = self.area, self.scale
        bw, bd = self.board_mm
        return Rect(a.x + (a.w - bw * s) / 2, a.y + (a.h - bd * s) / 2, bw * s, bd * s)

    def to_px(self, r: Rect) -> Rect:
        b, s = self.board, self.scale
        ox, oy = self.origin_mm
        return Rect(b.x + (r.x - ox) * s, b.y + (r.y - oy) * s, r.w * s, r.h * s)

    def to_mm(self, px: float, py: float) -> tuple[float, float]:
        b, s = self.board, self.scale
        ox, oy = self.origin_mm
        return (px - b.x) / s + ox, (py - b.y) / s + oy

    def card_px(self) -> tuple[int, int]:
        """The size cards are drawn at (one size for the whole board)."""
        return round(CARD_W * self.scale), round(CARD_H * self.scale)

    def boxes(self, cards: Iterable[CardBox]) -> list[CardBox]:
        """The same cards with their rects in pixels."""
        return [replace(c, rect=self.to_px(c.rect)) for c in cards]

    @property
    def territories(self) -> bool:
        """A board of territories (kyogi: both, or the one of a match alone), not goshiki's
        rows."""
        return self.board_mm[0] == BOARD_W

    @property
    def solo(self) -> bool:
        """Only the near territory is shown (a match alone)."""
        return self.origin_mm != (0.0, 0.0)

    def middle_strip(self) -> Rect:
        """The gap between the territories, in px (for messages); alone, the same strip just
        above the one territory."""
        bw, bd = self.board_mm
        if self.solo:
            return self.to_px(Rect(0, self.origin_mm[1] - MIDDLE_GAP, bw, MIDDLE_GAP))
        return self.to_px(Rect(0, (bd - MIDDLE_GAP) / 2, bw, MIDDLE_GAP))

    def half_of(self, py: float) -> str:
        """Which player's half of the screen a point is on: "near" (bottom) or "far"."""
        b = self.board
        return "near" if py >= b.y + b.h / 2 else "far"


def kyogi_viewport(window: tuple[int, int], solo: bool = False) -> Viewport:
    """The kyogi board in a window: both territories, or alone (``solo``) only the near one
    (with room above it for the messages), at the same scale, in the middle of the window."""
    if not solo:
        return Viewport(window)
    return Viewport(window, (BOARD_W, TERRITORY_D), (0.0, BOARD_D - TERRITORY_D))


def goshiki_viewport(window: tuple[int, int], solo: bool = False) -> Viewport:
    """The goshiki rows in a window: both players', or alone (``solo``) only the near two rows,
    the cards as large as on the whole board, in the middle of the window."""
    w, d = goshiki_size()
    if not solo:
        return Viewport(window, (w, d))
    return Viewport(window, (w, d / 2), (0.0, d / 2), fit_mm=(w, d))


def hit(cards: Iterable[CardBox], px: float, py: float, margin: float) -> CardBox | None:
    """The card a touch at (px, py) touched: inside a card, or within ``margin`` of one (the
    nearest wins), else None.  ``cards`` and the point in the same units."""
    best, best_d = None, math.inf
    for c in cards:
        if c.rect.contains(px, py, margin):
            d = c.rect.distance(px, py)
            if d < best_d or (d == best_d and best is not None
                              and math.hypot(c.rect.cx - px, c.rect.cy - py)
                              < math.hypot(best.rect.cx - px, best.rect.cy - py)):
                best, best_d = c, d
    return best


def drop_target(t: Territory, x_mm: float, y_mm: float) -> tuple[int, int, int]:
    """Where a card dropped at board point (x, y) mm in the viewer's own territory goes:
    (row, side, index from that edge), for ``move``.  The nearest row; the side of the
    territory's half the point is in; the index by where it lands among that group."""
    row_y = {r: BOARD_D - CARD_H - (2 - r) * (CARD_H + ROW_GAP) + CARD_H / 2 for r in range(3)}
    row = min(row_y, key=lambda r: abs(row_y[r] - y_mm))
    side = 0 if x_mm < TERRITORY_W / 2 else 1
    step = _row_positions(t.places(row) + 1)
    from_edge = x_mm if side == 0 else TERRITORY_W - x_mm
    index = max(0, int(from_edge // step))
    return row, side, index
