"""現幻 (seed 000): poet categories, the table, judgements, contests, 歌語り, 歌詠み, scoring."""
import copy
import json
import random
from collections import Counter
from importlib import resources

import pytest
from hypothesis import given, settings, strategies as hst

from poems import poem
from reader.table import ActionError
from reader.table import genkan
from reader.table.store import Table

S = genkan.check_settings({})


def state(pile_top=(), players=None, scene=(), s=S):
    """A fresh table with ``pile_top`` on top of the 山札 and ``players`` {name: (kagaku, hand)}."""
    st = genkan.new_state(s, random.Random(0))
    for name, (kagaku, hand) in (players or {}).items():
        for n in hand:
            st["pile"].remove(n)
        st["players"][name] = {"kagaku": kagaku, "hand": list(hand), "won": [], "points": 0}
    for n in reversed(pile_top):
        st["pile"].remove(n)
        st["pile"].insert(0, n)
    for n in scene:
        st["uta_pile"].remove(n)
        st["scene"].append(n)
    return st


def run(st, s=S, **action):
    return genkan.apply(st, action, random.Random(1), s)


def check_conserved(st):
    assert sorted(genkan.yomifuda_places(st)) == list(range(1, 101))
    assert sorted(genkan.torifuda_places(st)) == list(range(1, 101))


# --- 歌人区分 --------------------------------------------------------------------------------------

def test_category_counts_match_the_seed():
    cats = genkan.categories()
    primary = Counter(c[0] for c in cats.values())
    assert primary == {"官": 30, "男": 34, "女": 21, "僧": 15}
    dual = sorted(n for n, c in cats.items() if len(c) == 2)
    assert dual == [2, 89] and all(set(cats[n]) == {"官", "女"} for n in dual)
    assert sum(1 for c in cats.values() if "官" in c) == 32
    assert poem(2).author == "持統天皇" and poem(89).author == "式子内親王"


def test_every_decision_has_a_reason_and_follows_the_name():
    data = json.loads(resources.files("poems").joinpath("data", "poet_categories.json").read_text("utf-8"))
    assert [p["no"] for p in data["poets"]] == list(range(1, 101))
    for p in data["poets"]:
        assert p["author"] == poem(p["no"]).author
        assert p["reason"].strip()
        name = p["author"]
        if "法師" in name or "僧正" in name or "入道" in name:
            assert p["category"] == "僧", name
        if "朝臣" in name:
            assert p["category"] == "男", name   # 朝臣 is an honorific
        if name.endswith("天皇") or name.endswith("院") or name.endswith("親王"):
            assert "官" in (p["category"], p.get("also")), name


def test_attributes_count_kan_and_so_together():
    cats = genkan.categories()
    assert genkan.attributes(8, cats) == {"官僧"}      # 喜撰法師
    assert genkan.attributes(1, cats) == {"官僧"}      # 天智天皇
    assert genkan.attributes(2, cats) == {"女", "官僧"}  # 持統天皇: the judge's choice
    assert genkan.attributes(3, cats) == {"男"}
    n = Counter(a for no in range(1, 101) for a in genkan.attributes(no, cats))
    assert n == {"官僧": 47, "男": 34, "女": 21}


def test_categories_override_for_another_deck():
    s = genkan.check_settings({"categories": {"10": "男", "24": ["官"]}})
    cats = genkan.categories(s["categories"])
    assert cats[10] == ("男",) and cats[24] == ("官",)
    with pytest.raises(ActionError):
        genkan.check_settings({"categories": {"101": "男"}})
    with pytest.raises(ActionError):
        genkan.check_settings({"categories": {"5": "神"}})


# --- the table -------------------------------------------------------------------------------------

def test_players_get_three_and_scenes_turn_up_three_without_key_cards():
    t = Table("genkan", {"keys": [17, 61]}, seed=4)
    t.push({"do": "player", "name": "ka", "kagaku": 4})
    assert len(t.state["players"]["ka"]["hand"]) == 3
    assert 17 not in t.state["uta_pile"] and t.state["keys"] == [17, 61]
    t.push({"do": "scene"})
    first = list(t.state["scene"])
    assert len(first) == 3 and not set(first) & {17, 61}
    t.push({"do": "key", "no": 61})
    assert t.state["scene"][-1] == 61 and t.state["keys"] == [17]
    t.push({"do": "scene"})
    assert set(first + [61]) <= set(t.state["uta_discard"]) and len(t.state["scene"]) == 3
    check_conserved(t.state)


def test_act_counts_the_attribute_and_hand_cards_up_to_the_special():
    # 3 男, 8 僧, 9 女, 1 官, 5 男 (猿丸大夫)
    st = state(pile_top=[3, 8, 9, 1, 5], players={"ka": (3, [4, 57, 40])})
    new, res = run(st, do="act", who="ka", attr="男", dice=4, special=2, difficulty=3, cards=[4, 40])
    j = res["judgement"]
    assert j["turned"] == [3, 8, 9, 1] and j["counted"] == [3, 4, 40]
    assert j["achievement"] == 3 and j["success"] and j["margin"] == 0 and j["degree"] == 1
    # refilled one card (the next of the 山札) back towards the limit of 3
    assert new["players"]["ka"]["hand"] == [57, 5]
    check_conserved(new)
    with pytest.raises(ActionError, match="at most 1"):
        run(st, do="act", who="ka", attr="男", dice=4, special=1, difficulty=3, cards=[4, 40])


def test_act_kanso_counts_officials_and_monks_and_dual_poets():
    st = state(pile_top=[1, 8, 2, 3])
    st["players"]["ka"] = {"kagaku": 3, "hand": [], "won": [], "points": 0}
    _, res = run(st, do="act", who="ka", attr="官僧", dice=4, difficulty=3)
    assert res["judgement"]["achievement"] == 3  # 天智天皇, 喜撰法師, 持統天皇
    _, res = run(st, do="act", who="ka", attr="女", dice=4, difficulty=1)
    assert res["judgement"]["achievement"] == 1  # 持統天皇 as 女


def test_act_failure_and_no_refill_beyond_the_limit():
    st = state(pile_top=[9, 19], players={"ka": (2, [3, 4])})
    new, res = run(st, do="act", who="ka", attr="男", dice=2, special=0, difficulty=1)
    assert not res["judgement"]["success"] and res["judgement"]["degree"] == 0
    assert new["players"]["ka"]["hand"] == [3, 4]  # full: no refill


@pytest.mark.parametrize("k", [1, 2])
def test_scene_card_doubles_per_match_and_is_taken(k):
    matches = [3, 4][:k]
    st = state(pile_top=[3, 4, 5], players={"ka": (3, [])}, scene=[3, 4, 77][:k] + [77])
    new, res = run(st, do="act", who="ka", attr="男", dice=3, difficulty=1)
    j = res["judgement"]
    assert j["scene_matched"] == matches and j["degree"] == (3 - 1 + 1) * 2 ** k
    assert new["players"]["ka"]["won"] == matches and 77 in new["scene"]
    check_conserved(new)


def test_scene_match_hand_only_setting():
    s = genkan.check_settings({"scene_match": "hand"})
    st = state(pile_top=[3, 5], players={"ka": (3, [4])}, scene=[3, 4], s=s)
    new, res = run(st, s=s, do="act", who="ka", attr="男", dice=2, special=1, difficulty=1, cards=[4])
    assert res["judgement"]["scene_matched"] == [4] and res["judgement"]["degree"] == 3 * 2


def test_act_bad_input_changes_nothing():
    st = state(players={"ka": (3, [4, 57, 40])})
    snap = copy.deepcopy(st)
    for action, msg in [
        ({"cards": [99]}, "not in ka's hand"),
        ({"cards": [101]}, "not a card"),
        ({"attr": "神"}, "attribute"),
        ({"who": "zz"}, "no player"),
        ({"difficulty": 0}, "difficulty"),
    ]:
        a = {"do": "act", "who": "ka", "attr": "男", "dice": 3, "special": 1, "difficulty": 2}
        a.update(action)
        with pytest.raises(ActionError, match=msg):
            genkan.apply(st, a, random.Random(1), S)
    assert st == snap


# --- 対決判定 ---------------------------------------------------------------------------------------

def test_contest_rounds_until_one_is_left_with_full_ranking():
    # 男 cards: 3 4 5 ...; 女 card 9 fails
    st = state(pile_top=[3, 4, 9, 19, 5, 7, 22, 23])
    for n, card in (("a", 40), ("b", 41), ("c", 42)):   # full hands: no refill moves the 山札
        st["pile"].remove(card)
        st["players"][n] = {"kagaku": 1, "hand": [card], "won": [], "points": 0}
    st, r = run(st, do="contest", names=["a", "b", "c"], attr="男", dice=2, min=1)
    st, r = run(st, do="turn", difficulty=2)        # a turns 3, 4: 2 男 -> success
    assert r["judgement"]["success"] and "next: b" in r["text"]
    with pytest.raises(ActionError, match="at least 2"):
        run(st, do="turn", difficulty=1)             # below a's declaration
    st, r = run(st, do="turn", difficulty=2)        # b turns 9, 19: 0 男 -> drops out
    assert not r["judgement"]["success"] and st["contest"]["dropped"] == ["b"]
    st, r = run(st, do="turn", difficulty=2)        # c turns 5, 7: success
    st, r = run(st, do="turn", difficulty=2)        # back to a: 22, 23 -> success
    assert st["contest"]["order"][st["contest"]["turn"]] == "c"
    st, r = run(st, do="turn", **{"pass": True})    # c drops out without judging
    assert r["contest_over"]["ranking"] == ["a", "c", "b"] and st["contest"] is None


def test_contest_minimum_difficulty_and_teams():
    st = state(pile_top=[9, 19, 3, 4])
    for n, card in (("a", 40), ("b", 41)):
        st["pile"].remove(card)
        st["players"][n] = {"kagaku": 1, "hand": [card], "won": [], "points": 0}
    st, _ = run(st, do="contest", names=["a", "b", "oni"], attr="男", dice=2, min=2,
                teams={"a": "PC", "b": "PC", "oni": "敵"})
    with pytest.raises(ActionError, match="at least 2 \\(the minimum\\)"):
        run(st, do="turn", difficulty=1)
    st, r = run(st, do="turn", difficulty=2)   # a fails (9, 19)
    st, r = run(st, do="turn", difficulty=2)   # b: 3, 4 succeeds
    st, r = run(st, do="conteststop")
    assert r["contest_over"]["teams_left"] == {"PC": 1, "敵": 1} and r["contest_over"]["team"] is None


# --- 歌語り ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("target,least", [("pc", 1), ("知人", 2), ("contemporary", 3), ("過去", 4),
                                          ("future", 5)])
def test_utagatari_minimum_difficulty(target, least):
    st = state(pile_top=list(range(3, 8)), players={"ka": (3, [])})
    with pytest.raises(ActionError, match=f"at least {least}" if least > 1 else "difficulty"):
        run(st, do="talk", who="ka", target=target, attr="男", dice=5, difficulty=least - 1)
    _, r = run(st, do="talk", who="ka", target=target, attr="男", dice=5)
    assert r["judgement"]["difficulty"] == least


def test_utagatari_keeps_its_attribute_and_asks_for_henka_after_the_first():
    st = state(pile_top=[3, 4, 5, 6], players={"ka": (3, [])})
    st, r = run(st, do="talk", who="ka", target="pc", attr="男", dice=2)
    assert r["next"] == "solo"
    with pytest.raises(ActionError, match="uses 【男】"):
        run(st, do="talk", who="ka", target="pc", attr="女", dice=2)
    st, r = run(st, do="talk", who="ka", target="pc", attr="男", dice=2)
    assert r["next"] == "henka"


# --- 歌詠み ----------------------------------------------------------------------------------------

def test_solo_poem_is_5_7_5_7_7_one_ku_per_poem():
    st = state(pile_top=[1, 2, 3, 4, 5], players={"ka": (3, [6, 7, 8])})
    st0 = st
    st, r = run(st, do="compose", mode="solo", who="ka", hand="官僧")  # 《歌学》 success 【官僧】
    assert st["compose"]["drawn"] == [1, 2, 3, 4, 5]
    with pytest.raises(ActionError, match="does not match"):
        run(st, do="place", ku=["1.1", "2.2", "3.3", "4.4", "7.5"])   # 7 安倍仲麿 is 男
    plain, _ = run(st0, do="compose", mode="solo", who="ka")
    with pytest.raises(ActionError, match="needs a 《歌学》 success"):
        run(plain, do="place", ku=["1.1", "2.2", "3.3", "4.4", "6.5"])
    with pytest.raises(ActionError, match="place 2 needs a 7-sound ku"):
        run(st, do="place", ku=["1.1", "2.3", "3.3", "4.4", "5.5"])
    with pytest.raises(ActionError, match="one ku only"):
        run(st, do="place", ku=["1.1", "1.2", "3.3", "4.4", "5.5"])
    with pytest.raises(ActionError, match="exactly 5"):
        run(st, do="place", ku=["1.1", "2.2"])
    with pytest.raises(ActionError, match="not among"):
        run(st, do="place", ku=["1.1", "2.2", "3.3", "4.4", "50.5"])
    new, r = run(st, do="place", ku=["1.1", "2.2", "3.3", "4.4", "6.5"])
    p = r["poem"]
    assert p["ku"] == [[1, 1], [2, 2], [3, 3], [4, 4], [6, 5]]
    assert new["compose"] is None and 6 not in new["players"]["ka"]["hand"]
    assert {1, 2, 3, 4, 5, 6} <= set(new["discard"])
    assert poem(1).kanji[0] in r["text"] and "(1.1 天智天皇)" in r["text"]
    check_conserved(new)


def test_vertical_writing_reads_right_to_left():
    entry = {"ku": [[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]]}
    rows = genkan.vertical(entry).split("\n")
    assert rows[0].split("　")[-1] == poem(1).kanji[0][0]    # first ku: rightmost column
    assert rows[0].split("　")[0] == poem(5).kanji[4][0]


def test_henka_uses_three_drawn_and_the_answered_poems_cards():
    st = state(pile_top=[1, 2, 3, 4, 5, 10, 11, 12], players={"ka": (3, []), "yo": (3, [])})
    st, _ = run(st, do="compose", mode="solo", who="ka")
    st, _ = run(st, do="place", ku=["1.1", "2.2", "3.3", "4.4", "5.5"])
    st, _ = run(st, do="compose", mode="henka", who="yo", of=1)
    assert st["compose"]["drawn"] == [10, 11, 12]
    new, r = run(st, do="place", ku=["10.1", "1.2", "11.3", "12.4", "5.5"])
    assert r["poem"]["mode"] == "henka" and r["poem"]["of"] == 1
    check_conserved(new)


def test_renga_joins_to_31_sounds_in_either_pattern():
    st = state(pile_top=[1, 2, 3, 10, 11, 12, 13, 14, 15], players={"ka": (3, []), "yo": (3, [])})
    st, _ = run(st, do="compose", mode="solo", who="ka", ku=3)   # a 発句 5-7-5 ... drawn 5
    st, _ = run(st, do="place", ku=["1.1", "2.2", "3.3"])
    with pytest.raises(ActionError, match="needs 2"):
        run(st, do="compose", mode="renga", who="yo", of=1, ku=3)
    st2, _ = run(st, do="compose", mode="renga", who="yo", of=1, ku=2)
    drawn = st2["compose"]["drawn"]
    ok, r = run(st2, do="place", ku=[f"{drawn[0]}.4", f"{drawn[1]}.5"])
    assert [k for _, k in r["poem"]["ku"]] == [1, 2, 3, 4, 5]
    with pytest.raises(ActionError, match="5-7-5-7-7 or 5-7-7-5-7"):
        run(st2, do="place", ku=[f"{drawn[0]}.1", f"{drawn[1]}.5"])
    with pytest.raises(ActionError, match="the earlier ku use it already"):
        run(st2, do="place", ku=["1.4", f"{drawn[1]}.5"])
    # before the earlier 5-7-5: 5-7 + 5-7-5 is not a waka; 7 + ... likewise
    st3 = copy.deepcopy(st2)
    st3["compose"]["before"] = True
    with pytest.raises(ActionError):
        run(st3, do="place", ku=[f"{drawn[0]}.4", f"{drawn[1]}.5"])


def test_renga_5_7_7_5_7():
    st = state(pile_top=[1, 2, 3, 10, 11, 12, 13, 14, 15], players={"ka": (3, []), "yo": (3, [])})
    st, _ = run(st, do="compose", mode="solo", who="ka", ku=3)
    st, _ = run(st, do="place", ku=["1.1", "2.2", "3.4"])   # 5-7-7
    st, _ = run(st, do="compose", mode="renga", who="yo", of=1, ku=2)
    d = st["compose"]["drawn"]
    _, r = run(st, do="place", ku=[f"{d[0]}.3", f"{d[1]}.5"])  # + 5-7
    assert [genkan._sounds(k) for _, k in r["poem"]["ku"]] == [5, 7, 7, 5, 7]


def test_senka_must_use_a_held_scene_card_and_allows_no_advice():
    st = state(pile_top=[1, 2, 3, 4, 5], players={"ka": (3, []), "yo": (3, [40])})
    st["uta_pile"].remove(50)
    st["players"]["ka"]["won"] = [50]
    st, _ = run(st, do="compose", mode="senka", who="ka")
    with pytest.raises(ActionError, match="must use one"):
        run(st, do="place", ku=["1.1", "2.2", "3.3", "4.4", "5.5"])
    with pytest.raises(ActionError, match="not among"):
        run(st, do="place", ku=["1.1", "40.2", "3.3", "4.4", "50.5"])
    new, r = run(st, do="place", ku=["1.1", "2.2", "3.3", "4.4", "50.5"])
    assert r["poem"]["scene_used"] == [50] and new["players"]["ka"]["won"] == [50]
    check_conserved(new)


def test_advice_card_from_another_players_hand_in_solo():
    st = state(pile_top=[1, 2, 3, 4, 5], players={"ka": (3, []), "yo": (3, [40])})
    st, _ = run(st, do="compose", mode="solo", who="ka", advice="男")   # 40 平兼盛 is 男
    new, r = run(st, do="place", ku=["1.1", "40.2", "3.3", "4.4", "5.5"])
    assert r["poem"]["advice"] == {"yo": [40]} and new["players"]["yo"]["hand"] == []
    st2, _ = run(state(pile_top=[1, 2, 3, 4, 5], players={"ka": (3, []), "yo": (3, [40])}),
                 do="compose", mode="solo", who="ka", advice="女")
    with pytest.raises(ActionError, match="does not match"):
        run(st2, do="place", ku=["1.1", "40.2", "3.3", "4.4", "5.5"])


def test_senka_uses_the_hand_without_a_kagaku_judgement():
    st = state(pile_top=[1, 2, 3, 4, 5], players={"ka": (3, [40])})
    st, _ = run(st, do="compose", mode="senka", who="ka")
    new, r = run(st, do="place", ku=["1.1", "40.2", "3.3", "4.4", "5.5"])
    assert 40 in new["discard"]
    with pytest.raises(ActionError, match="no 相談"):
        run(state(players={"ka": (3, [])}), do="compose", mode="senka", who="ka", advice="男")


def test_joining_a_contest_midway_only_when_allowed():
    st = state(players={"a": (3, []), "b": (3, [])})
    closed, _ = run(st, do="contest", names=["a", "b"], attr="男", dice=2)
    with pytest.raises(ActionError, match="no joining midway"):
        run(closed, do="contestjoin", name="c")
    open_, _ = run(st, do="contest", names=["a", "b"], attr="男", dice=2, joinable=True)
    new, _ = run(open_, do="contestjoin", name="c", team="x")
    assert new["contest"]["order"] == ["a", "b", "c"] and new["contest"]["teams"] == {"c": "x"}


def test_scoring_adds_keibo_points():
    st = state(pile_top=[1, 2, 3, 4, 5], players={"ka": (3, []), "yo": (3, []), "mi": (3, [])})
    st["uta_pile"].remove(50)
    st["players"]["ka"]["won"] = [50]
    st, _ = run(st, do="compose", mode="solo", who="ka")
    st, _ = run(st, do="place", ku=["1.1", "2.2", "3.3", "4.4", "50.5"])
    with pytest.raises(ActionError, match="GM's points"):
        run(st, do="score", poem=1, gm=3)
    with pytest.raises(ActionError, match="players' points"):
        run(st, do="score", poem=1, gm=2, players=3)     # two other players: at most 2
    with pytest.raises(ActionError, match="scene cards"):
        run(st, do="score", poem=1, gm=2, players=2, scene=2)
    st, r = run(st, do="score", poem=1, gm=2, players=2, scene=1)
    assert r["score"]["total"] == 5 and st["players"]["ka"]["points"] == 5
    with pytest.raises(ActionError, match="already scored"):
        run(st, do="score", poem=1, gm=1)


# --- conservation over any sequence ----------------------------------------------------------------

ACTIONS = hst.sampled_from(["scene", "act", "compose", "place", "refill", "undo", "key", "contest",
                            "turn", "poem", "henka", "sheet"])


def _place_words(st) -> list[str]:
    """The drawn cards' ku 1, 2, 3 … and, for a 返歌, ku 4 and 5 of the poem answered."""
    cp = st["compose"] or {}
    words = [f"{c}.{k}" for c, k in zip(cp.get("drawn", []), (1, 2, 3, 4, 5))]
    if cp.get("of"):
        words = words[:3] + [f"{n}.{k}" for n, k in st["poems"][cp["of"] - 1]["ku"][3:5]]
    return words


@settings(max_examples=40, deadline=None)
@given(seed=hst.integers(0, 10_000), ops=hst.lists(hst.tuples(ACTIONS, hst.integers(0, 12)),
                                                    max_size=30))
def test_no_card_lost_or_doubled(seed, ops):
    t = Table("genkan", {"keys": [7, 70]}, seed=seed)
    t.push({"do": "player", "name": "a", "kagaku": 4})
    t.push({"do": "player", "name": "b", "kagaku": 2})
    for op, n in ops:
        st = t.state
        hand = st["players"].get("a", {}).get("hand", [])
        action = {
            "scene": {"do": "scene"},
            "act": {"do": "act", "who": "a", "attr": ["男", "女", "官僧"][n % 3], "dice": n,
                    "special": 1, "difficulty": 1 + n % 3, "cards": hand[:1]},
            "compose": {"do": "compose", "mode": "solo", "who": "b"},
            "place": {"do": "place", "ku": _place_words(st)},
            "refill": {"do": "refill", "who": "b"},
            "key": {"do": "key", "no": 7 if n % 2 else 70},
            "contest": {"do": "contest", "names": ["a", "b", "oni"], "attr": "男", "dice": "知",
                        "min": 1, "each": {"b": {"dice": n, "special": 1}, "oni": {"dice": 3}}},
            "poem": {"do": "poem", "who": "oni", "no": 1 + n},
            "henka": {"do": "compose", "mode": "henka", "who": "a", "of": len(st["poems"])},
            "sheet": {"do": "sheet", "who": "a", "values": {"知": n % 5, "男": 1}},
            "turn": {"do": "turn", "difficulty": 1 + n % 4},
        }.get(op)
        try:
            t.pop() if op == "undo" else t.push(action)
        except ActionError:
            pass
        check_conserved(t.state)


def test_empty_pile_reshuffles_the_discards_or_refuses_by_setting():
    st = state(players={"ka": (3, [])})
    st["discard"], st["pile"] = st["pile"][2:], st["pile"][:2]
    top = list(st["pile"])
    new, res = run(st, do="act", who="ka", attr="男", dice=5, difficulty=1)
    assert res["judgement"]["turned"][:2] == top and len(res["judgement"]["turned"]) == 5
    assert "reshuffled" in res["text"]
    check_conserved(new)
    off = genkan.check_settings({"reshuffle": False})
    with pytest.raises(ActionError, match="only 2 yomifuda"):
        run(st, s=off, do="act", who="ka", attr="男", dice=5, difficulty=1)


def test_scene_pile_runs_short_and_the_torifuda_discards_come_back():
    st = state()
    st["uta_discard"], st["uta_pile"] = st["uta_pile"][1:], st["uta_pile"][:1]
    new, res = run(st, do="scene")
    assert len(new["scene"]) == 3 and "shuffled back" in res["text"]
    check_conserved(new)


def test_a_drawn_card_of_a_scene_poem_counts_as_a_scene_card_used():
    st = state(pile_top=[1, 2, 3, 4, 5], players={"ka": (3, [])}, scene=[3])
    st, _ = run(st, do="compose", mode="solo", who="ka")
    new, r = run(st, do="place", ku=["1.1", "2.2", "3.3", "4.4", "5.5"])
    assert r["poem"]["scene_used"] == [3]
    _, r = run(new, do="score", poem=1, gm=1, scene=1)
    assert r["score"]["total"] == 2


@settings(max_examples=60, deadline=None)
@given(seed=hst.integers(0, 10_000), n=hst.integers(2, 5), minimum=hst.integers(1, 3),
       raises=hst.lists(hst.integers(0, 2), min_size=60, max_size=60),
       passes=hst.lists(hst.booleans(), min_size=60, max_size=60))
def test_contest_properties(seed, n, minimum, raises, passes):
    """Declarations never go below the previous one, failed or not (「直前の人が宣言した以上の
    難易度で判定します」); each failure drops exactly that participant; the ranking is everyone
    once, the last one standing first, then the reverse order of dropping out."""
    t = Table("genkan", {}, seed=seed)
    names = [f"p{i}" for i in range(n)]
    t.push({"do": "contest", "names": names, "attr": "男", "dice": 6, "min": minimum})
    last, dropped = None, []
    for step in range(60):
        c = t.state["contest"]
        if c is None:
            break
        who = c["order"][c["turn"]]
        floor = max(minimum, last or 0)
        if passes[step] and step % 3 == 0:
            r = t.push({"do": "turn", "pass": True})
            dropped.append(who)
        else:
            with pytest.raises(ActionError):
                t.push({"do": "turn", "difficulty": floor - 1}) if floor > 1 else \
                    t.push({"do": "turn", "difficulty": 0})
            r = t.push({"do": "turn", "difficulty": floor + raises[step]})
            j = r["judgement"]
            assert j["who"] == who and j["difficulty"] >= floor
            last = j["difficulty"]
            if not j["success"]:
                dropped.append(who)
        if "contest_over" in r:
            ranking = r["contest_over"]["ranking"]
            assert sorted(ranking) == sorted(names)
            assert ranking[1:] == list(reversed(dropped))
            break
    check_conserved(t.state)


VALUES = hst.one_of(hst.none(), hst.booleans(), hst.integers(-3, 120), hst.text(max_size=4),
                    hst.lists(hst.integers(0, 101), max_size=6),
                    hst.lists(hst.text(max_size=5), max_size=4), hst.dictionaries(hst.text(max_size=3),
                                                                                   hst.integers(), max_size=2))
KEYS = ["who", "name", "kagaku", "attr", "dice", "special", "difficulty", "cards", "no", "names",
        "min", "teams", "pass", "target", "mode", "of", "ku", "before", "hand", "advice", "poem", "gm",
        "players", "scene", "each", "values"]


@settings(max_examples=150, deadline=None)
@given(actions=hst.lists(hst.tuples(hst.sampled_from(sorted(genkan._ACTIONS)),
                                    hst.dictionaries(hst.sampled_from(KEYS), VALUES, max_size=6)),
                         max_size=8))
def test_any_malformed_action_is_refused_cleanly(actions):
    """Whatever a hand-edited save holds: applied, or refused with ActionError, never a crash."""
    t = Table("genkan", {}, seed=1)
    t.push({"do": "player", "name": "a", "kagaku": 3})
    for do, args in actions:
        try:
            t.push(dict(args, do=do))
        except ActionError:
            pass
        check_conserved(t.state)


# --- rules 2 (issue 24) ---------------------------------------------------------------------------

def _contest_state(*names, pile_top=()):
    st = state(pile_top=pile_top)
    for n, card in zip(names, (40, 41, 42, 43)):   # full hands: no refill moves the 山札
        st["pile"].remove(card)
        st["players"][n] = {"kagaku": 1, "hand": [card], "won": [], "points": 0}
    return st


def test_contest_each_participant_turns_up_their_own_dice():
    """「判定値＝能力値＋文化値」 is each participant's own: a turns up 2 cards, b 3, oni 1."""
    st = _contest_state("a", "b", pile_top=[3, 4, 5, 6, 7, 9])
    st, r = run(st, do="contest", names=["a", "b", "oni"], attr="男", min=1,
                each={"a": {"dice": 2}, "b": {"dice": 3, "special": 1}, "oni": {"dice": 1}})
    c = st["contest"]
    assert c["dice"] == {"a": 2, "b": 3, "oni": 1} and c["special"] == {"a": 0, "b": 1, "oni": 0}
    st, r = run(st, do="turn", difficulty=1)
    assert r["judgement"]["turned"] == [3, 4]
    st, r = run(st, do="turn", difficulty=1, cards=[41])          # b: 特技 1 allows one hand card
    assert r["judgement"]["turned"] == [5, 6, 7] and r["judgement"]["hand_used"] == [41]
    assert r["judgement"]["refilled"] == [9]
    st, r = run(st, do="turn", difficulty=1)
    assert len(r["judgement"]["turned"]) == 1
    with pytest.raises(ActionError, match="oni's 能力値＋文化値"):
        run(_contest_state("a"), do="contest", names=["a", "oni"], attr="男", each={"a": {"dice": 2}})
    # the shared DICE still serves everyone without their own (and old saves' contests)
    st2, _ = run(_contest_state("a"), do="contest", names=["a", "oni"], attr="男", dice=4,
                 each={"oni": {"dice": 6}})
    assert st2["contest"]["dice"] == {"a": 4, "oni": 6}


def test_contest_floor_is_the_previous_declaration_even_a_failed_one():
    """「二番手は一番手以上の難易度を宣言してから判定します」「直前の人が宣言した以上の難易度で
    判定します」: after a fails at 3, b must declare at least 3 (setting contest_floor=success:
    at least the last successful declaration, 1 here; rules 1 saves did that)."""
    st = _contest_state("a", "b", "c", pile_top=[3, 9, 19, 20, 4, 5])
    st, _ = run(st, do="contest", names=["a", "b", "c"], attr="男", dice=1, min=1)
    st, r = run(st, do="turn", difficulty=1)                   # a: 3 男, success at 1
    st, r = run(st, do="turn", difficulty=3)                   # b: 9 女, fails at 3
    assert not r["judgement"]["success"] and "difficulty ≥ 3" in r["text"]
    with pytest.raises(ActionError, match="at least 3 \\(the previous declaration\\)"):
        run(st, do="turn", difficulty=2)
    lenient = genkan.check_settings({"contest_floor": "success"})
    for s in (lenient, dict(S, rules=1)):
        st = _contest_state("a", "b", "c", pile_top=[3, 9, 19, 20, 4, 5])
        st, _ = run(st, s=s, do="contest", names=["a", "b", "c"], attr="男", dice=1, min=1)
        st, _ = run(st, s=s, do="turn", difficulty=1)
        st, _ = run(st, s=s, do="turn", difficulty=3)
        st, r = run(st, s=s, do="turn", difficulty=1)          # c: at least a's 1
        assert r["judgement"]["difficulty"] == 1
    with pytest.raises(ActionError, match="contest_floor"):
        genkan.check_settings({"contest_floor": "never"})


@pytest.mark.parametrize("word,n", [("簡単", 1), ("ふつう", 2), ("普通", 2), ("難しい", 3),
                                    ("normal", 2), ("さらに難しい", 4), ("もっと難しい", 5), ("4", 4)])
def test_difficulty_words_of_the_seed(word, n):
    """「簡単：１ ふつう：２ 難しい：３」 and the 歌語り's 「さらに難しい（４点）」「もっと難しい（５点）」."""
    st = state(pile_top=[3, 4, 5], players={"ka": (3, [])})
    _, r = run(st, do="act", who="ka", attr="男", dice=3, difficulty=word)
    assert r["judgement"]["difficulty"] == n
    with pytest.raises(ActionError, match="ふつう"):
        run(st, do="act", who="ka", attr="男", dice=3, difficulty="ややこしい")


def test_sheet_values_make_the_dice_and_the_special():
    """「その行為に関係する能力値、文化値、特技、難易度をＧＭが指定します」「判定値＝能力値＋文化値」:
    act with the ability's name turns up 知 + the sheet's 文化値 of the attribute."""
    st = state(pile_top=[3, 8, 9, 1, 5, 6], players={"ka": (3, [4, 57, 40])})
    st, r = run(st, do="sheet", who="ka", values={"知": 3, "男": 2, "官": 1, "歌学": 2})
    assert st["sheets"]["ka"] == {"知": 3, "男": 2, "官僧": 1, "歌学": 2}
    new, r = run(st, do="act", who="ka", attr="男", dice="知", special="歌学", difficulty="ふつう",
                 cards=[4, 40])
    j = r["judgement"]
    assert (j["dice"], j["special"], j["difficulty"]) == (5, 2, 2) and j["turned"] == [3, 8, 9, 1, 5]
    assert "turns up 5 (sheet: 知 3 男 2 歌学 2)" in r["text"]
    _, r = run(st, do="act", who="ka", attr="官僧", dice="知", difficulty=1)
    assert r["judgement"]["dice"] == 4
    with pytest.raises(ActionError, match="no 文化値【女】"):
        run(st, do="act", who="ka", attr="女", dice="知", difficulty=1)
    with pytest.raises(ActionError, match="no ability '体'"):
        run(st, do="act", who="ka", attr="男", dice="体", difficulty=1)
    # an NPC's sheet serves in a contest
    st, _ = run(st, do="sheet", who="oni", values={"体": 4, "男": 1})
    st, _ = run(st, do="contest", names=["ka", "oni"], attr="男", dice="知", min=1,
                each={"oni": {"dice": "体"}})
    assert st["contest"]["dice"] == {"ka": 5, "oni": 5}


def test_henka_to_a_poem_of_the_hundred_and_to_an_npcs_poem():
    """A 返歌 to one of the hundred (歌語り with a poet of the past) or to an NPC's poem:
    「詠者は山札から３枚めくります。ＧＭは先の歌を構成する札を５枚並べておきます。」"""
    st = state(pile_top=[10, 11, 12, 20, 21, 22], players={"ka": (3, [])})
    st, r = run(st, do="poem", who="小町", no=9)
    assert r["poem"]["ku"] == [[9, k] for k in range(1, 6)] and r["poem"]["mode"] == "outside"
    st, _ = run(st, do="compose", mode="henka", who="ka", of=1)
    # the five ku of poem 9 stand for the five cards laid out: several may be taken, each once
    new, r = run(st, do="place", ku=["9.1", "10.2", "9.3", "11.4", "9.5"])
    assert r["poem"]["of"] == 1 and r["poem"]["mode"] == "henka"
    with pytest.raises(ActionError, match="placed twice"):
        run(st, do="place", ku=["9.1", "10.2", "9.1", "11.4", "9.5"])
    check_conserved(new)
    with pytest.raises(ActionError, match="from outside"):
        run(new, do="score", poem=1, gm=1)
    # an NPC's poem: ku of the hundred, one per poem, 5-7-5-7-7
    with pytest.raises(ActionError, match="not 5-7-5-7-7"):
        run(new, do="poem", who="oni", ku=["1.2", "2.2", "3.3", "4.4", "5.5"])
    with pytest.raises(ActionError, match="one ku from each"):
        run(new, do="poem", who="oni", ku=["1.1", "1.2", "3.3", "4.4", "5.5"])
    new, r = run(new, do="poem", who="oni", ku=["1.1", "2.2", "3.3", "4.4", "5.5"])
    new, _ = run(new, do="compose", mode="henka", who="ka", of=r["poem"]["id"])
    d = new["compose"]["drawn"]
    with pytest.raises(ActionError, match="one ku only"):
        run(new, do="place", ku=["1.1", "1.2", f"{d[0]}.3", f"{d[1]}.4", f"{d[2]}.5"])
    new, r = run(new, do="place", ku=["1.1", "2.2", f"{d[0]}.3", f"{d[1]}.4", f"{d[2]}.5"])
    assert genkan.summary(new).endswith("2 poem(s) composed")


def test_private_view_shows_one_players_hand():
    st = state(players={"ka": (3, [4, 57, 40]), "yo": (3, [1, 2, 3])}, s=genkan.check_settings({"keys": [17]}))
    st["keys"] = [17]
    st, _ = run(st, do="sheet", who="yo", values={"知": 2})
    st, _ = run(st, do="compose", mode="solo", who="yo")
    v = genkan.view(st, "ka")
    assert v["players"]["ka"]["hand"] == [4, 57, 40] and v["players"]["yo"]["hand"] == 3
    assert v["keys"] == 1 and v["sheets"] == {} and v["compose"]["drawn"] == 5
    assert isinstance(v["pile"], int) and isinstance(v["uta_pile"], int)
    text = genkan.describe(st, "ka")
    assert "hand 3 card(s)" in text and "1 held by the GM" in text and "知" not in text
    assert "drawn 5 cards" in text
    gm = genkan.view(st)
    assert gm["players"]["yo"]["hand"] == [1, 2, 3] and gm["pile"] == len(st["pile"])
    with pytest.raises(ActionError, match="no player called"):
        genkan.view(st, "zz")
