"""The practice board's geometry (reader.practice.board): real proportions, placement the way
players lay their cards, drags, sends, and generous hit areas.  Pure: no pygame."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import poems
from reader.practice import board as B

ONE = {n for n in range(1, 101) if len(poems.poem(n).kimariji) == 1}


def _hand(seed, n=25):
    return random.Random(seed).sample(range(1, 101), n)


# ---------------------------------------------------------------------------- proportions
def test_real_proportions_mm():
    assert (B.CARD_W, B.CARD_H) == (52, 73)
    assert B.TERRITORY_W == 870 and B.ROW_GAP == 10 and B.MIDDLE_GAP == 30
    assert B.BOARD_W / B.BOARD_D == pytest.approx(1.71, abs=0.01)


def test_rows_are_1_cm_apart_and_territories_3_cm():
    t = B.place(_hand(1), random.Random(1))
    near = B.kyogi_rects(t, near=True)
    far = B.kyogi_rects(B.place(_hand(2), random.Random(2)), near=False)
    ys = sorted({r.y for r in near.values()})
    assert len(ys) == 3
    assert ys[1] - (ys[0] + B.CARD_H) == pytest.approx(10) and ys[2] - (ys[1] + B.CARD_H) == pytest.approx(10)
    assert ys[2] + B.CARD_H == pytest.approx(B.BOARD_D)  # 下段 at the player's edge
    far_bottom = max(r.y + r.h for r in far.values())
    assert min(ys) - far_bottom == pytest.approx(30)
    for r in [*near.values(), *far.values()]:
        assert 0 <= r.x and r.x + r.w <= B.TERRITORY_W + 1e-9
    # no two cards overlap
    rects = list(near.values())
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            assert a.x + a.w <= b.x or b.x + b.w <= a.x or a.y != b.y


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080), (3840, 2160), (1280, 800), (1000, 1000)])
def test_viewport_16_9_scales_and_keeps_the_board_proportions(size):
    v = B.Viewport(size)
    a = v.area
    assert a.w / a.h == pytest.approx(16 / 9)
    assert a.w <= size[0] + 1e-6 and a.h <= size[1] + 1e-6
    b = v.board
    assert b.w / b.h == pytest.approx(B.BOARD_W / B.BOARD_D)
    assert a.x <= b.x and b.x + b.w <= a.x + a.w and a.y <= b.y and b.y + b.h <= a.y + a.h
    # at 1280x720 a card is about 69 x 97 px; full HD 1.5 times that
    cw, ch = v.card_px()
    assert ch / cw == pytest.approx(73 / 52, abs=0.03)
    base = B.Viewport((1280, 720)).card_px()
    assert cw == pytest.approx(base[0] * a.w / 1280, abs=1)
    assert base[0] >= 65


def test_the_opponent_faces_the_viewer():
    t = B.place(_hand(3), random.Random(3))
    boxes = B.kyogi_board({"A": t, "B": t}, viewer="A")
    for c in boxes:
        assert c.upside_down == (c.owner == "B")
    # B's 下段 is at the top of the board, its left group on the viewer's right
    far = B.kyogi_rects(t, near=False)
    lower_left = t.rows[2][0]
    if lower_left:
        r = far[lower_left[0]]
        assert r.y == 0 and r.x + r.w == pytest.approx(B.TERRITORY_W)


# ---------------------------------------------------------------------------- placement
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 50))
def test_placement_rules_hold_for_any_hand(seed, n):
    hand = _hand(seed, n)
    t = B.place(hand, random.Random(seed))
    assert sorted(t.cards) == sorted(hand)
    up, mid, low = t.counts()
    assert low >= mid >= up  # most on 下段, fewest on 上段
    for c in ONE & set(hand):  # 1字決まり on 下段
        assert t.where(c)[0] == 2
    # each 1字 group wholly on one side of 下段
    for group in B.ONE_SOUND_GROUPS:
        sides = {t.where(c)[1] for c in hand if poems.poem(c).kimariji in group}
        assert len(sides) <= 1
    # 友札 lie side by side: same row, same side, adjacent
    for g in B.friend_groups(hand):
        if len(g) > 1 and not set(g) <= ONE:
            where = [t.where(c) for c in g]
            assert len({(r, s) for r, s, _ in where}) == 1
            idx = sorted(i for _, _, i in where)
            assert idx == list(range(idx[0], idx[0] + len(idx)))


def test_a_usual_hand_of_25_is_5_8_12():
    assert B.row_targets(25) == (5, 8, 12)
    counts = B.place(_hand(11), random.Random(11)).counts()
    assert counts[2] >= 10 and counts[0] <= 6


def test_friends_found_by_their_shared_opening():
    groups = {frozenset(g) for g in B.friend_groups([15, 50, 31, 64, 11, 76, 1, 2])}
    assert frozenset({15, 50}) in groups  # きみがためは / を
    assert frozenset({31, 64}) in groups  # あさぼらけあ / う
    assert frozenset({11, 76}) in groups  # わたのはらや / こ
    groups = {frozenset(g) for g in B.friend_groups([87, 18, 57, 77])}  # む す め せ
    assert frozenset({87, 57}) in groups and frozenset({18, 77}) in groups


# ---------------------------------------------------------------------------- drag, sends
def test_drag_moves_a_card_to_where_it_is_dropped():
    t = B.place(_hand(5), random.Random(5))
    card = t.rows[0][0][0]
    # drop it at the right end of 下段
    y = B.BOARD_D - B.CARD_H / 2
    row, side, index = B.drop_target(t, B.TERRITORY_W - 10, y)
    assert (row, side, index) == (2, 1, 0)
    t2 = B.move(t, card, row, side, index)
    assert t2.where(card) == (2, 1, 0)
    assert sorted(t2.cards) == sorted(t.cards)
    r = B.kyogi_rects(t2, near=True)[card]
    assert r.x + r.w == pytest.approx(B.TERRITORY_W) and r.y + r.h == pytest.approx(B.BOARD_D)
    with pytest.raises(KeyError):
        B.move(t, 999, 0, 0, 0)


def test_a_sent_card_joins_its_friend_or_the_emptiest_row():
    t = B.place([15, 3, 4, 5, 6, 7], random.Random(0))
    t2 = B.add(t, 50, random.Random(0))  # きみがためを joins きみがためは
    r15, s15, i15 = t2.where(15)
    r50, s50, i50 = t2.where(50)
    assert (r15, s15) == (r50, s50) and abs(i15 - i50) == 1
    t3 = B.add(t, 87, random.Random(0))  # む: a 1字決まり goes to 下段
    assert t3.where(87)[0] == 2
    t4 = B.remove(t3, 87)
    assert 87 not in t4 and sorted(t4.cards) == sorted(t.cards)


# ---------------------------------------------------------------------------- places kept
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(2, 50), data=st.data())
def test_a_taken_card_leaves_its_place_empty_and_no_other_card_moves(seed, n, data):
    """Takes (pure board state): after any takes, every card left lies in exactly the
    rectangle it lay in before — on a real board nothing slides along to close a gap."""
    t = B.place(_hand(seed, n), random.Random(seed))
    before = {near: B.kyogi_rects(t, near) for near in (True, False)}
    taken = data.draw(st.lists(st.sampled_from(t.cards), unique=True, max_size=n - 1))
    for c in taken:
        t = B.remove(t, c)
    assert sorted(t.cards) == sorted(set(before[True]) - set(taken))
    for near in (True, False):
        after = B.kyogi_rects(t, near)
        assert after == {c: r for c, r in before[near].items() if c not in taken}


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 30), data=st.data())
def test_a_sent_card_goes_into_a_free_place_and_no_card_already_there_moves(seed, n, data):
    """Sends: the card arrives in a free place (an empty one, or beyond a group's end), never
    on another card, and the cards already there keep their rectangles; a card sent away
    leaves its place empty."""
    hand = _hand(seed, n + 5)
    t = B.place(hand[:n], random.Random(seed))
    for c in data.draw(st.lists(st.sampled_from(t.cards), unique=True, max_size=n - 1)):
        t = B.remove(t, c)
    for c in hand[n:]:
        before = B.kyogi_rects(t, True)
        t = B.add(t, c, random.Random(seed))
        after = B.kyogi_rects(t, True)
        assert {k: v for k, v in after.items() if k != c} == before
        new = after[c]
        assert not any(new.x < r.x + r.w and r.x < new.x + new.w and new.y == r.y
                       for r in before.values())  # (no card under it)


def test_follow_keeps_both_sides_places_through_a_take_and_a_send():
    a = B.place(_hand(1, 12), random.Random(1))
    b = B.place([x for x in _hand(2, 30) if x not in a.cards][:12], random.Random(2))
    took, sent = a.cards[3], a.cards[7]  # one of A's cards is taken, another sent to B
    board = {"A": tuple(c for c in a.cards if c not in (took, sent)), "B": (*b.cards, sent)}
    after, went = B.follow({"A": a, "B": b}, board, random.Random(0))
    ra, rb = B.kyogi_rects(a, True), B.kyogi_rects(b, True)
    assert B.kyogi_rects(after["A"], True) == {c: r for c, r in ra.items()
                                                if c not in (took, sent)}
    assert {c: r for c, r in B.kyogi_rects(after["B"], True).items() if c != sent} == rb
    assert went == {sent: ("B", *after["B"].where(sent))}
    # a resumed log's record of where the sent card went is honoured
    p, row, side, idx = went[sent]
    again, _ = B.follow({"A": a, "B": b}, board, random.Random(99), placed=went)
    assert again == after
    t = B.Territory.from_json(after["A"].to_json())
    assert t == after["A"] and B.HOLE in [c for r in t.rows for g in r for c in g]


# ---------------------------------------------------------------------------- hits
def test_hit_areas_are_generous_and_the_nearest_card_wins():
    t = B.place(_hand(7), random.Random(7))
    boxes = B.kyogi_board({"A": t}, viewer="A")
    c = boxes[0]
    r = c.rect
    m = B.HIT_MARGIN_MM
    assert B.hit(boxes, r.cx, r.cy, m).poem == c.poem
    # a touch 10 mm beside a card (outside it, nothing else near) still touches it
    lone = min(boxes, key=lambda b: b.rect.x)  # a card at the left edge
    assert B.hit(boxes, lone.rect.x - 10, lone.rect.cy, m).poem == lone.poem
    assert B.hit(boxes, lone.rect.x - 10, lone.rect.cy, 0) is None
    # between two neighbours of a group: the nearer one
    row = sorted((b for b in boxes if b.rect.y == r.y), key=lambda b: b.rect.x)
    for a, b in zip(row, row[1:]):
        if b.rect.x - (a.rect.x + a.rect.w) < 5:
            gap_mid = (a.rect.x + a.rect.w + b.rect.x) / 2
            assert B.hit(boxes, gap_mid - 0.3, a.rect.cy, m).poem == a.poem
            assert B.hit(boxes, gap_mid + 0.3, a.rect.cy, m).poem == b.poem
            break
    # the middle line between the territories touches nothing
    assert B.hit(B.kyogi_board({"A": t, "B": t}), B.TERRITORY_W / 2, B.BOARD_D / 2, m) is None


def test_hit_in_pixels_through_the_viewport():
    t = B.place(_hand(8), random.Random(8))
    v = B.Viewport((1920, 1080))
    boxes = v.boxes(B.kyogi_board({"A": t, "B": B.place(_hand(9), random.Random(9))}))
    for c in boxes[:10]:
        assert B.hit(boxes, c.rect.cx, c.rect.cy, B.HIT_MARGIN_MM * v.scale).poem == c.poem
        x, y = v.to_mm(c.rect.cx, c.rect.cy)
        assert (v.half_of(c.rect.cy) == "near") == (c.owner == "A")
        assert 0 <= x <= B.BOARD_W and 0 <= y <= B.BOARD_D


def test_goshiki_two_rows_of_five_heads_touching():
    hands = {"A": tuple(poems.COLORS["blue"][:10]), "B": tuple(poems.COLORS["blue"][10:])}
    boxes = B.goshiki_board(hands)
    a = [c.rect for c in boxes if c.owner == "A"]
    b = [c.rect for c in boxes if c.owner == "B"]
    assert len({r.y for r in a}) == 2 and len({r.y for r in b}) == 2
    assert sum(1 for r in a if r.y == min(r.y for r in a)) == 5
    # the front rows touch in the middle
    assert min(r.y for r in a) == pytest.approx(max(r.y + r.h for r in b))
    assert all(c.upside_down for c in boxes if c.owner == "B")


def test_goshiki_alone_shows_only_your_rows_at_the_whole_boards_card_size():
    hands = {"A": tuple(poems.COLORS["blue"][:10]), "B": ()}
    whole = B.goshiki_viewport((1280, 720))
    alone = B.goshiki_viewport((1280, 720), solo=True)
    assert alone.solo and not alone.territories and not whole.territories
    assert alone.card_px() == whole.card_px()  # the cards as large as with an opponent
    boxes = alone.boxes(B.goshiki_board(hands))
    a, area = alone.area, alone.board
    # your two rows, in the middle of the window (no empty rows of an opponent above them)
    top, bottom = min(c.rect.y for c in boxes), max(c.rect.y + c.rect.h for c in boxes)
    assert abs((top - a.y) - (a.y + a.h - bottom)) < 2
    assert top == pytest.approx(area.y) and bottom == pytest.approx(area.y + area.h)
    # the strip for messages lies just above them, inside the window
    strip = alone.middle_strip()
    assert a.y <= strip.y and strip.y + strip.h == pytest.approx(top)
    # a touch on each card's centre finds it
    for c in boxes:
        assert B.hit(boxes, c.rect.cx, c.rect.cy, 0).poem == c.poem
