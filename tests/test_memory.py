"""Memory drill logic: confusables, questions (property tests), FSRS scheduling, progression."""
from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest
from fsrs import Rating, State
from hypothesis import given, settings
from hypothesis import strategies as st

from poems import COLOR_CARD_ORDER, COLORS, poem
from poems.kimariji import kami_heard, kimariji, shared_opening
from reader.memory.deck import (
    ALL, COLOR_ORDER, FAST_MS, MODES, UNLOCK_LEARNED, MemoryDeck, confusable_groups, group_order,
    make_question, rank_distractors, rating_for, tomofuda,
)

NOW = datetime(2025, 4, 1, 9, 0, tzinfo=timezone.utc)


# -- confusables -------------------------------------------------------------------------------

def test_tomofuda_pairs():
    assert tomofuda(53) == (86,) and tomofuda(86) == (53,)        # なげき / なげけ
    assert tomofuda(31) == (64,) and tomofuda(64) == (31,)        # あさぼらけあ / う
    assert set(tomofuda(15)) == {50} and set(tomofuda(11)) == {76}
    assert set(tomofuda(39)) == {31, 64}                          # あさじ: hear past あさ
    assert tomofuda(87) == ()                                     # む: one sound


def test_tomofuda_within_a_colour():
    # in a universe without its partner a poem has no 友札 left
    assert tomofuda(53, universe=[53, 1, 2]) == ()
    with pytest.raises(KeyError):
        tomofuda(53, universe=[1, 2])


def test_confusable_groups():
    groups = confusable_groups()
    assert (53, 86) in groups and (31, 64) in groups
    assert all(len(g) >= 2 for g in groups)
    for g in groups:  # every member shares the group's opening with the first
        assert all(shared_opening(g[0], m) >= 1 for m in g)


def test_shared_opening_is_by_sound():
    assert shared_opening(53, 86) == 2
    assert shared_opening(31, 64) == 5
    assert kami_heard(44)[:3] == ("お", "お", "こ")


# -- questions ---------------------------------------------------------------------------------

universes = st.one_of(st.just(ALL), st.sampled_from([COLORS[c] for c in COLOR_ORDER]))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), universe=universes, mode=st.sampled_from(MODES),
       n=st.integers(2, 9), seed=st.integers(0, 2**32))
def test_question_properties(data, universe, mode, n, seed):
    no = data.draw(st.sampled_from(sorted(universe)))
    q = make_question(no, mode, random.Random(seed), universe=universe, n_choices=n)
    assert q.choices[q.answer] == no                       # the right answer is there
    assert len(set(q.choices)) == len(q.choices) == min(n, len(universe))  # no duplicates
    assert set(q.choices) <= set(universe)
    assert len(q.choice_texts) == len(q.choices)
    # distractors prefer confusables: none left out shares a longer opening than one chosen
    chosen = [c for c in q.choices if c != no]
    left = [m for m in universe if m not in q.choices]
    if chosen and left:
        assert min(shared_opening(no, c) for c in chosen) >= max(shared_opening(no, m) for m in left)
    # every 友札 is offered when there is room for it
    if len(tomofuda(no, universe)) <= n - 1:
        assert set(tomofuda(no, universe)) <= set(q.choices)


@pytest.mark.parametrize("mode", MODES)
def test_question_texts(mode):
    q = make_question(53, mode, random.Random(1))
    p = poem(53)
    if mode == "reverse":
        assert q.prompt == p.torifuda
        assert q.choice_texts[q.answer] == "　".join(p.kami_kanji)
    else:
        assert q.prompt == ("　".join(p.kami_kanji) if mode == "kami" else "なげき")
        assert q.choice_texts[q.answer] == p.torifuda
        assert 86 in q.choices  # なげけ is always among the distractors


def test_kimariji_question_uses_the_colour_kimariji():
    blue = COLORS["blue"]
    dyn = kimariji(blue)
    no = next(n for n in blue if len(dyn[n].card) < len(poem(n).kimariji))
    q = make_question(no, "kimariji", random.Random(0), universe=blue)
    assert q.prompt == dyn[no].card != poem(no).kimariji


def test_questions_are_reproducible():
    a = [make_question(n, "kami", random.Random(7)) for n in (1, 50, 99)]
    b = [make_question(n, "kami", random.Random(7)) for n in (1, 50, 99)]
    assert a == b


def test_bad_question_arguments():
    with pytest.raises(ValueError):
        make_question(1, "nope", random.Random())
    with pytest.raises(ValueError):
        make_question(1, "kami", random.Random(), n_choices=1)
    with pytest.raises(KeyError):
        make_question(1, "kami", random.Random(), universe=[2, 3])


@given(seed=st.integers(0, 2**32), nos=st.sets(st.integers(1, 100), min_size=1, max_size=40))
def test_group_order_keeps_confusables_together(seed, nos):
    order = group_order(nos, random.Random(seed))
    assert sorted(order) == sorted(nos)
    firsts = [kami_heard(n)[0] for n in order]
    # each first sound is one contiguous block
    seen = []
    for f in firsts:
        if not seen or seen[-1] != f:
            assert f not in seen
            seen.append(f)


def test_rank_distractors_puts_tomofuda_first():
    ranked = rank_distractors(31, ALL, random.Random(3))
    assert ranked[0] == 64 and set(ranked[1:3]) >= {39}
    assert 31 not in ranked and len(ranked) == 99


# -- rating and FSRS ---------------------------------------------------------------------------

def test_rating_for():
    f = FAST_MS["kami"]
    assert rating_for(False, 100, "kami") == Rating.Again
    assert rating_for(True, f, "kami") == Rating.Easy
    assert rating_for(True, f + 1, "kami") == Rating.Good
    assert rating_for(True, 3 * f + 1, "kami") == Rating.Hard
    assert rating_for(True, None, "kami") == Rating.Good


def test_review_schedules_with_fsrs():
    deck = MemoryDeck()
    assert not deck.introduced(5)
    card, rating = deck.review(5, True, 4000.0, "kami", NOW)  # Good
    assert rating == Rating.Good and deck.introduced(5)
    assert card.state == State.Learning and card.due == NOW + timedelta(minutes=10)
    assert deck.due(NOW) == [] and deck.due(NOW + timedelta(minutes=10)) == [5]
    card, rating = deck.review(5, False, 500.0, "kami", NOW + timedelta(minutes=10))
    assert rating == Rating.Again and card.due == NOW + timedelta(minutes=11)
    # deterministic (no fuzzing): the same answers give the same card
    again = MemoryDeck()
    again.review(5, True, 4000.0, "kami", NOW)
    again.review(5, False, 500.0, "kami", NOW + timedelta(minutes=10))
    assert again.cards[5] == deck.cards[5]
    with pytest.raises(ValueError):
        deck.review(5, True, 1.0, "kami", datetime(2025, 1, 1))


def test_deck_round_trips_through_json():
    deck = MemoryDeck()
    deck.review(7, True, 100.0, "kimariji", NOW)
    back = MemoryDeck.from_json({7: deck.cards[7].to_json()})
    assert back.cards[7] == deck.cards[7]


def _learn(deck, nos, now=NOW):
    for n in nos:
        deck.review(n, True, 100.0, "kimariji", now)  # Easy: straight to Review
        assert deck.learned(n)


def test_goshiki_progression():
    deck = MemoryDeck()
    assert deck.open_colors() == ("blue",)
    assert deck.new_candidates() == list(COLOR_CARD_ORDER["blue"])
    blue = COLOR_CARD_ORDER["blue"]
    _learn(deck, blue[: UNLOCK_LEARNED - 1])
    assert deck.open_colors() == ("blue",)
    _learn(deck, blue[UNLOCK_LEARNED - 1: UNLOCK_LEARNED])
    assert deck.open_colors() == ("blue", "pink")
    # the rest of blue first, then pink in card order
    assert deck.new_candidates() == list(blue[UNLOCK_LEARNED:]) + list(COLOR_CARD_ORDER["pink"])
    # a lapse in blue does not close pink once pink has begun
    _learn(deck, COLOR_CARD_ORDER["pink"][:1])
    for n in blue[:5]:
        deck.review(n, False, 100.0, "kami", NOW + timedelta(days=30))
    assert deck.open_colors() == ("blue", "pink")
    counts = deck.due_counts(NOW + timedelta(days=30))
    assert counts.introduced == UNLOCK_LEARNED + 1
    assert "青" in counts.describe() and "桃" in counts.describe()


def test_plan_session_due_first_then_new():
    deck = MemoryDeck()
    first = deck.plan_session(NOW, random.Random(1), count=20, max_new=8)
    assert (first.due, first.new) == (0, 8)
    assert set(first.poems) == set(COLOR_CARD_ORDER["blue"][:8])
    for n in first.poems:
        deck.review(n, True, 4000.0, "kami", NOW)  # Good: due again in 10 minutes
    later = NOW + timedelta(minutes=15)
    plan = deck.plan_session(later, random.Random(1), count=10, max_new=8)
    assert (plan.due, plan.new) == (8, 2)
    assert set(COLOR_CARD_ORDER["blue"][8:10]) <= set(plan.poems)
    due_only = deck.plan_session(later, random.Random(1), count=10, due_only=True)
    assert (due_only.due, due_only.new) == (8, 0)
    assert deck.plan_session(NOW, random.Random(1), due_only=True).poems == ()


def test_plan_session_for_one_colour():
    deck = MemoryDeck()
    plan = deck.plan_session(NOW, random.Random(2), count=5, color="orange")
    assert set(plan.poems) == set(COLOR_CARD_ORDER["orange"][:5])  # asked for: open or not
    assert deck.due_counts(NOW, "orange").new_available == 20
