"""The bots are models of players: their reaction, faults, slowness on moved cards, sends.

Statistics over seeded headless matches (a real plan with the tone voice's exact mora onsets).
The full-size figures (1,000 matches a pair) are in scripts/bench_practice.py.
"""
from __future__ import annotations

import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audio.voice import ToneVoice
from poems.kimariji import shared_opening
from reader.base.errors import KarutaError
from reader.practice import bot, headless
from reader.practice.games import KYOGI
from reader.practice.match import Seat

VOICE = ToneVoice()
RATE = 48000


def observe(levels, seeds):
    """Per level: right-card reactions (ms from the decisive onset), frames relative to the
    上の句's end, fault chances and faults made — over whole matches."""
    seen = {lv: {"reaction": [], "after_kami": [], "chances": 0, "faults": 0, "fault_touches": []}
            for lv in set(levels)}
    for seed in seeds:
        m = headless.new_match("kyogi", {"A": Seat("bot", levels[0]), "B": Seat("bot", levels[1])},
                               seed, VOICE)
        while (cur := m.current()) is not None:
            opp = m.fault_opportunity()
            touches = m.bot_touches()
            for p, card, frame in touches:
                lv = m.seats[p].level
                if card == cur.poem:
                    seen[lv]["reaction"].append((frame - cur.decisive) * 1000 / RATE)
                    seen[lv]["after_kami"].append(frame - cur.kami.end)
                else:
                    seen[lv]["fault_touches"].append((m.board, cur, card))
            if opp is not None:
                for p in "AB":
                    lv = m.seats[p].level
                    seen[lv]["chances"] += 1
                    seen[lv]["faults"] += any(t[0] == p and t[1] != cur.poem for t in touches)
            for p, card, frame in touches:
                if cur.closes is None or frame < cur.closes:
                    m.touch(p, card, frame)
            m.close_read(cur.closes)
    return seen


@pytest.fixture(scope="module")
def stats():
    return observe((1, 5), range(12)) | observe((2, 4), range(12)) | observe((3, 3), range(8))


def test_reaction_medians_rise_level_by_level(stats):
    med = {lv: statistics.median(stats[lv]["reaction"]) for lv in (2, 3, 4, 5)}
    assert med[5] < med[4] < med[3] < med[2]
    assert 100 <= med[5] <= 220  # level 5: ~0.1-0.2 s after the kimariji


def test_level_5_sometimes_goes_on_the_consonant(stats):
    early = [r for r in stats[5]["reaction"] if r < 0]
    assert 0.05 < len(early) / len(stats[5]["reaction"]) < 0.3
    assert min(early) >= -bot.LEVELS[5].early_ms - 1


def test_level_1_waits_for_the_end_of_the_kami(stats):
    assert min(stats[1]["after_kami"]) >= 0


@pytest.mark.parametrize("lv", [1, 2, 3, 4, 5])
def test_every_level_faults_sometimes_near_its_setting(stats, lv):
    s = stats[lv]
    assert s["faults"] > 0  # never zero
    rate = s["faults"] / s["chances"]
    # a few hundred chances: the binomial spread allows ~±4 points here (the bench: ±2 over 1,000s)
    assert abs(rate - bot.LEVELS[lv].fault_rate) < 0.045, (rate, s["chances"])


def test_faults_are_on_a_card_sharing_a_shorter_prefix_in_a_faulting_place(stats):
    checked = 0
    for lv in stats:
        for board, cur, card in stats[lv]["fault_touches"]:
            k = shared_opening(cur.poem, card)
            owner = next(p for p, cards in board.items() if card in cards)
            assert k >= 1
            assert owner != cur.where  # kyogi: a territory without the read card (or karafuda)
            checked += 1
    assert checked > 20


def view(poem=37, moved=frozenset(), board=None):
    return bot.ReadView(game=KYOGI, poem=poem, where="A",
                        board=board or {"A": (poem, 1, 2), "B": (3, 4)}, start=0,
                        decisive=48000, kami_end=5 * 48000,
                        morae=tuple(i * 14400 for i in range(17)), kimariji_len=2, moved=moved)


@pytest.mark.parametrize("lv", [1, 3, 5])
def test_a_card_just_sent_is_slower_by_the_levels_penalty(lv):
    spec = bot.LEVELS[lv]
    for seed in range(20):
        plain = bot.plan_touches("A", spec, view(), random.Random(seed))
        moved = bot.plan_touches("A", spec, view(moved=frozenset({37})), random.Random(seed))
        if plain and moved and plain[-1][0] == 37:
            assert moved[-1][1] - plain[-1][1] == round(spec.moved_penalty_ms * 48)


def test_the_moved_cards_of_a_match_are_the_ones_sent_in_the_last_reads():
    m = headless.new_match("kyogi", {"A": Seat("bot", 1), "B": Seat("bot", 5)}, 2, VOICE)
    while m.current() is not None:
        cur = m.current()
        v = m._view(cur)
        sent = {c for r in m.state.results[-3:] for c in r.sent}
        assert v.moved == frozenset(sent)
        headless_step(m)


def headless_step(m):
    cur = m.current()
    for p, card, frame in m.bot_touches():
        if cur.closes is None or frame < cur.closes:
            m.touch(p, card, frame)
    m.close_read(cur.closes)


def test_bot_touches_are_drawn_once_per_read():
    m = headless.new_match("kyogi", {"A": Seat("bot", 3), "B": Seat("bot", 3)}, 5, VOICE)
    assert m.bot_touches() == m.bot_touches()


def test_stronger_levels_win_seeded_matches():
    wins = 0
    for seed in range(10):
        a, b = (5, 1) if seed % 2 else (1, 5)
        m = headless.play(headless.new_match("kyogi", {"A": Seat("bot", a), "B": Seat("bot", b)},
                                             100 + seed, VOICE))
        wins += m.outcome().winner == ("A" if a == 5 else "B")
    assert wins >= 9


# --- sends -------------------------------------------------------------------------------

def test_early_send_splits_a_tomofuda_pair():
    # 31/64 あさぼらけ share 5 sounds (友札); 17 ちは, 33 ひさ, 87 む, 57 め have no partner here
    own = (31, 64, 87, 57, 17, 33)
    picks = {bot.choose_send(own, (10, 20, 30), 1, range(1, 101), random.Random(s))[0]
             for s in range(10)}
    assert picks <= {31, 64}


def test_early_send_prefers_an_opening_the_other_side_lacks():
    own = (17, 33, 11, 12, 39, 41)  # ち ひ わた あま あさぢ こひ: no 友札 pair among them
    for s in range(10):
        pick = bot.choose_send(own, (20, 30, 4, 10), 1, range(1, 101), random.Random(s))
        assert pick[0] in (17, 33)


def test_late_send_keeps_one_sound_kimariji():
    own = (87, 57, 22, 40)  # む, め are 1字決まり among all 100
    for s in range(10):
        pick = bot.choose_send(own, (10, 20), 1, range(1, 101), random.Random(s))
        assert pick[0] in (22, 40)


def test_sending_more_than_you_have_sends_everything():
    assert bot.choose_send((5, 6), (1,), 3, range(1, 101), random.Random(0)) == (5, 6)


@pytest.mark.parametrize("bad", ["0", "6", "x", "", "3.5", "-1"])
def test_unknown_levels_are_refused(bad):
    with pytest.raises(KarutaError, match="levels are 1-5"):
        bot.parse_level(bad)


def test_a_card_in_the_bots_own_territory_is_reached_sooner():
    spec = bot.LEVELS[3]
    v = view()  # the card lies in A's territory
    for seed in range(20):
        # (a skill that recognises every card: both go from the decisive onset)
        mine = bot.plan_touches("A", spec, v, random.Random(seed), skill=4.0)
        theirs = bot.plan_touches("B", spec, v, random.Random(seed), skill=4.0)
        if mine and mine[-1][0] == 37 and theirs[-1][0] == 37:
            reaction = (theirs[-1][1] - v.decisive) / bot.OTHER_SIDE
            assert mine[-1][1] - v.decisive == pytest.approx(reaction * bot.OWN_SIDE, abs=2)
            assert mine[-1][1] < theirs[-1][1]


def test_form_varies_from_match_to_match_and_a_weaker_bot_wins_some_matches():
    """A bot's skill for a match (its form) is drawn once per match from the match's seed:
    the same seed, the same form (a resumed match plays on as the whole one would); over
    seeds it spreads around the level, and the weaker of two adjacent levels wins some whole
    matches — but fewer than the stronger (the full figures: scripts/bench_practice.py)."""
    def match(seed):
        return headless.new_match("kyogi", {"A": Seat("bot", 3), "B": Seat("bot", 2)}, seed, VOICE)

    assert match(5).skill == match(5).skill
    skills = [match(s).skill for s in range(40)]
    a = [k["A"] for k in skills]
    assert min(a) < 2.5 and max(a) > 3.5 and 2.5 < statistics.mean(a) < 3.5
    assert all(bot.LOW_SKILL <= x <= bot.TOP_SKILL for k in skills for x in k.values())
    weak_wins = sum(headless.play(match(s)).outcome().winner == "B" for s in range(40))
    assert 1 <= weak_wins < 20, weak_wins
    lv1 = [headless.new_match("kyogi", {"A": Seat("bot", 1), "B": Seat("bot", 2)}, s,
                              VOICE).skill["A"] for s in range(40)]
    assert max(lv1) <= bot.TOP_SKILL_1  # (and whatever its form, it waits for the 上の句: above)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**62), level=st.integers(1, 5))
def test_a_bots_form_stays_within_one_level_of_its_number(seed, level):
    """A level feels like its number: whatever the match's draw, a bot plays at most one level
    above or below its own (a level-2 bot once "played like a 4.1" and won 0-17)."""
    skill = bot.match_skill(bot.level(level), random.Random(seed))
    assert abs(skill - level) <= bot.FORM_MAX == 1.0
    assert bot.LOW_SKILL <= skill <= bot.TOP_SKILL


def test_each_matchs_form_is_within_one_level_over_seeds():
    for seed in range(60):
        m = headless.new_match("kyogi", {"A": Seat("bot", 2), "B": Seat("bot", 5)}, seed, VOICE,
                               cards=5)
        assert abs(m.skill["A"] - 2) <= 1.0 and abs(m.skill["B"] - 5) <= 1.0, (seed, m.skill)
