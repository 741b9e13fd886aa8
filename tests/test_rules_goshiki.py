"""Goshiki scoring (rules.md §4): takes, faults into the ba, sitting out, the end, three players."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from poems import COLORS
from reader.match.rules import BadDeal, IllegalEvent, MatchOver
from reader.match.rules import goshiki
from reader.match.rules.goshiki import GoshikiMatch, GoshikiState, Read, Settings, apply

BLUE = COLORS["blue"]
A_HAND, B_HAND = BLUE[:10], BLUE[10:]


def fresh(**kw) -> GoshikiState:
    return goshiki.new_state("blue", [A_HAND, B_HAND], Settings(**kw))


def play(state, *events):
    for ev in events:
        state = apply(state, ev)
    return state


def total(s: GoshikiState) -> int:
    return sum(s.count(p) for p in s.players) + len(s.ba) + len(s.board)


# --- takes ------------------------------------------------------------------------------------

def test_any_card_on_the_board_can_be_taken():
    s = play(fresh(), Read(B_HAND[0], "A"), Read(A_HAND[0], "B"))
    assert s.cards("A") == (B_HAND[0],) and s.cards("B") == (A_HAND[0],)
    assert len(s.board) == 18


def test_a_card_nobody_takes_stays_on_the_board_and_cannot_be_read_again():
    s = apply(fresh(), Read(3, None))
    assert 3 in s.board and s.count("A") == s.count("B") == 0
    with pytest.raises(IllegalEvent, match="already read"):
        apply(s, Read(3, "A"))


def test_reading_a_card_not_on_the_board_is_refused():
    with pytest.raises(IllegalEvent, match="not on the board"):
        apply(fresh(), Read(1, "A"))          # 1 is pink


@pytest.mark.parametrize("n", [0, 101])
def test_poem_number_outside_1_100_is_refused(n):
    with pytest.raises(IllegalEvent, match="outside 1-100"):
        apply(fresh(), Read(n, None))


def test_simultaneous_both_does_not_exist_in_goshiki():
    with pytest.raises(IllegalEvent, match="referee decides"):
        Read(3, "both")


@pytest.mark.parametrize("ev", [Read(3, "C"), Read(3, None, ("Z",)), Read(3, None, (), "Q")])
def test_unknown_players_are_refused(ev):
    with pytest.raises(IllegalEvent, match="unknown player"):
        apply(fresh(), ev)


# --- faults and the ba ------------------------------------------------------------------------

def test_fault_puts_one_taken_card_into_the_ba():
    s = play(fresh(), Read(3, "A"), Read(5, "A"), Read(6, "B", ("A",)))
    assert s.count("A") == 1 and len(s.ba) == 1
    assert s.ba == (5,)  # the most recently taken card


def test_one_fault_per_read():
    s = play(fresh(), Read(3, "A"), Read(5, "A"))
    with pytest.raises(IllegalEvent, match="twice"):
        apply(s, Read(6, "B", ("A", "A")))


def test_the_next_taker_receives_one_ba_card():
    s = play(fresh(), Read(3, "A"), Read(5, None, ("A",)))  # A's 3 into the ba
    assert s.ba == (3,) and s.count("A") == 0
    s = apply(s, Read(6, "B"))
    assert s.cards("B") == (3, 6) and s.ba == ()
    assert s.results[-1].from_ba == 3


def test_the_ba_feeds_one_card_per_take_while_it_lasts():
    s = play(fresh(), Read(3, "A"), Read(5, "B"), Read(6, None, ("A", "B")))
    assert len(s.ba) == 2
    s = apply(s, Read(12, "A"))
    assert s.count("A") == 2 and len(s.ba) == 1
    s = apply(s, Read(14, "A"))
    assert s.count("A") == 4 and len(s.ba) == 0
    s = apply(s, Read(24, "A"))
    assert s.count("A") == 5


def test_a_fault_on_the_same_read_does_not_feed_that_reads_taker():
    s = play(fresh(), Read(3, "A"))
    s = apply(s, Read(5, "B", ("A",)))    # A faults, B takes: A's card goes to the ba
    assert s.cards("B") == (5,)           # not 3
    assert s.ba == (3,)
    s = apply(s, Read(6, "B"))            # ...it feeds the next taker
    assert s.cards("B") == (3, 5, 6)


def test_fault_with_nothing_taken_sits_out_the_next_card():
    s = apply(fresh(), Read(3, "B", ("A",)))
    assert s.ba == () and s.sitting_out == {"A"}
    with pytest.raises(IllegalEvent, match="sit out"):
        apply(s, Read(5, "A"))
    with pytest.raises(IllegalEvent, match="sit out"):
        apply(s, Read(5, "B", ("A",)))
    s = apply(s, Read(5, "B"))            # B may take it
    assert s.sitting_out == frozenset()
    s = apply(s, Read(6, "A"))            # and A is back the read after
    assert s.cards("A") == (6,)


def test_fault_after_the_right_card_loses_the_right_card():
    s = play(fresh(), Read(3, "A"))
    # A touched 5 then a wrong card: a fault, and the card is not A's; B takes it
    s = apply(s, Read(5, "B", ("A",), lost="A"))
    assert s.cards("B") == (5,) and s.count("A") == 0 and s.ba == (3,)
    # or nobody takes it: it stays on the board
    s2 = apply(play(fresh(), Read(3, "A")), Read(5, None, ("A",), lost="A"))
    assert 5 in s2.board and s2.count("A") == 0


def test_taking_and_faulting_on_one_read_is_refused_with_a_hint():
    with pytest.raises(IllegalEvent, match="lost"):
        apply(fresh(), Read(3, "A", ("A",)))


def test_lost_must_be_a_fault():
    with pytest.raises(IllegalEvent, match="faults"):
        apply(fresh(), Read(3, "B", (), lost="A"))


# --- the end ----------------------------------------------------------------------------------

def run_reads(state, takers):
    """Read the blue cards in order; ``takers[i]`` takes read i (or None)."""
    for card, who in zip(BLUE, takers):
        state = apply(state, Read(card, who))
    return state


def test_more_cards_after_17_reads_wins():
    s = run_reads(fresh(), ["A"] * 9 + ["B"] * 8)
    o = s.outcome()
    assert o is not None and o.winner == "A"
    assert len(s.results) == 17


def test_no_outcome_before_the_17th_read():
    s = run_reads(fresh(), ["A"] * 16)
    assert s.outcome() is None


def test_no_read_after_the_end():
    s = run_reads(fresh(), ["A"] * 17)
    with pytest.raises(MatchOver):
        apply(s, Read(BLUE[17], "B"))


def test_equal_counts_is_a_draw():
    s = run_reads(fresh(), ["A", "B"] * 8 + [None])
    o = s.outcome()
    assert o.winner == "draw" and o.winners == () and set(o.drawn) == {"A", "B"}


def test_reads_is_a_setting():
    s = run_reads(fresh(reads=3), ["A", "B", "B"])
    assert s.outcome().winner == "B"


def test_finals_read_one_more_card_on_a_tie():
    s = run_reads(fresh(finals=True), ["A", "B"] * 8 + [None])
    assert s.outcome() is None          # tied after 17: read the 18th
    s = apply(s, Read(BLUE[17], "B"))
    assert s.outcome().winner == "B"


def test_finals_still_tied_after_all_20_is_a_draw():
    s = run_reads(fresh(finals=True), ["A", "B"] * 8 + [None, None, None, None])
    assert len(s.results) == 20
    assert s.outcome().winner == "draw"


def test_cards_from_the_ba_count_as_taken():
    # A faults twice with cards, B takes the ba cards: 8 reads each way would tie without them
    takers = ["A", "A"] + ["B"] * 8 + ["A"] * 7
    s = fresh()
    for i, (card, who) in enumerate(zip(BLUE, takers)):
        faults = ("A",) if i == 2 else ()
        s = apply(s, Read(card, who, faults))
    # A: 2 taken, 1 into the ba, +7 = 8; B: 8 + 1 from the ba = 9
    assert (s.count("A"), s.count("B"), len(s.ba)) == (8, 9, 0)
    assert s.outcome().winner == "B"


# --- three players ----------------------------------------------------------------------------

def three(**kw) -> GoshikiState:
    return goshiki.new_state("blue", [BLUE[:7], BLUE[7:14], BLUE[14:]], Settings(**kw))


def test_three_players_top_two_win():
    s = run_reads(three(), ["A"] * 7 + ["B"] * 6 + ["C"] * 4)
    o = s.outcome()
    assert o.winners == ("A", "B") and o.drawn == ()


def test_three_players_tie_for_second_first_wins_others_draw():
    s = run_reads(three(), ["A"] * 7 + ["B"] * 5 + ["C"] * 5)
    o = s.outcome()
    assert o.winners == ("A",) and o.drawn == ("B", "C")


def test_three_players_tie_for_first_both_win():
    s = run_reads(three(), ["A"] * 7 + ["B"] * 7 + ["C"] * 3)
    assert s.outcome().winners == ("A", "B")


def test_three_players_deal_uses_all_20():
    s = goshiki.deal(random.Random(1), "pink", players=3)
    assert sorted(sum(s.deal, ())) == sorted(COLORS["pink"])
    assert s.players == ("A", "B", "C")


# --- deals and settings -----------------------------------------------------------------------

def test_seeded_deal_is_reproducible_and_leaves_global_random_alone():
    before = random.getstate()
    d = goshiki.deal(random.Random(9), "green")
    assert random.getstate() == before
    assert d == goshiki.deal(random.Random(9), "green")
    assert len(d.deal[0]) == len(d.deal[1]) == 10
    assert sorted(d.deal[0] + d.deal[1]) == sorted(COLORS["green"])


@pytest.mark.parametrize("hands, color, why", [
    ([BLUE[:10], BLUE[10:19]], "blue", "leaves out"),
    ([BLUE[:10], BLUE[10:19] + (1,)], "blue", "not a blue card"),
    ([BLUE[:11], BLUE[11:]], "blue", "10 cards each"),
    ([BLUE[:10], BLUE[9:19]], "blue", "dealt twice"),
    ([BLUE[:10], BLUE[10:]], "purple", "unknown colour"),
])
def test_bad_deals_are_refused(hands, color, why):
    with pytest.raises(BadDeal, match=why):
        goshiki.new_state(color, hands)


def test_colour_is_inferred_from_the_cards():
    assert goshiki.new_state(None, [A_HAND, B_HAND]).color == "blue"


@pytest.mark.parametrize("reads", [0, 21, True])
def test_bad_reads_setting(reads):
    with pytest.raises(BadDeal):
        Settings(reads=reads)


# --- undo -------------------------------------------------------------------------------------

def test_undo_restores_ba_and_sitting_out():
    m = GoshikiMatch(fresh())
    m.push(Read(3, "A"))
    m.push(Read(5, None, ("A",)))
    m.push(Read(6, "B", ("A",)))           # A has nothing: sits out
    assert m.state.sitting_out == {"A"} and m.state.cards("B") == (3, 6)
    m.pop()
    assert m.state.ba == (3,) and m.state.sitting_out == frozenset()
    m.pop()
    assert m.state.ba == () and m.state.cards("A") == (3,)


# --- properties -------------------------------------------------------------------------------

def random_match(seed: int, rng: random.Random) -> GoshikiMatch:
    players = rng.choice([2, 3])
    sets = Settings(reads=rng.randint(1, 20), finals=rng.random() < 0.3)
    m = GoshikiMatch(goshiki.deal(random.Random(seed), None, players, sets))
    order = list(COLORS[m.state.color])
    rng.shuffle(order)
    for poem in order:
        if m.outcome() is not None:
            break
        able = [p for p in m.state.players if p not in m.state.sitting_out]
        took = rng.choice(able + [None])
        faults = tuple(p for p in able if p != took and rng.random() < 0.25)
        lost = rng.choice(faults) if faults and rng.random() < 0.3 else None
        m.push(Read(poem, took, faults, lost))
    return m


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.randoms(use_true_random=False))
def test_taken_plus_ba_plus_board_is_always_20(seed, rng):
    m = random_match(seed, rng)
    colour = set(COLORS[m.state.color])
    for s in m._states:
        assert total(s) == 20
        places = [set(s.taken[i]) for i in range(len(s.players))] + [set(s.ba), set(s.board)]
        assert set().union(*places) == colour
        assert sum(len(p) for p in places) == 20   # no card in two places


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.randoms(use_true_random=False))
def test_a_match_ends_after_the_set_number_of_reads(seed, rng):
    m = random_match(seed, rng)
    s = m.state
    o = m.outcome()
    assert o is not None
    n = len(s.results)
    if not s.settings.finals:
        assert n == s.settings.reads
    else:
        assert s.settings.reads <= n <= 20
    counts = {p: s.count(p) for p in s.players}
    for w in o.winners:
        assert all(counts[w] > counts[p] for p in s.players
                   if p not in o.winners and p not in o.drawn)
    if len(s.players) == 2 and o.winners:
        loser = "B" if o.winner == "A" else "A"
        assert counts[o.winner] > counts[loser]
