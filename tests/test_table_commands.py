"""Typed table lines -> actions: every word is read, or the line is refused naming the words the
command takes (issue 22: a mistyped NAME=VALUE word must not vanish)."""
import pytest
from hypothesis import given, strategies as hst

from reader.table import ActionError
from reader.table.commands import Command, parse


@pytest.mark.parametrize("system,line,words", [
    ("cards", "judge a x 1 3 ♠2=♠A", ["only a joker is named"]),   # the rules refuse it
    ("cards", "judge a x 1 3 dif=2", ["unknown word 'dif=2'", "t=", "vs=", "mod=", "limit"]),
    ("cards", "judge a x 1 3 t=", ["no value"]),
    ("cards", "judge a x 1 3 t=5 t=6", ["given twice"]),
    ("cards", "combat 2 pre=3", ["unknown word 'pre=3'", "per="]),
    ("cards", "draw a 2 3", ["unexpected word '3'"]),
    ("cards", "player a:3", ["one word without"]),
    ("cards", "judge a x 1 3 t=標準", ["targets 16-20", "pick the number"]),   # 「※判定の難易度」
    ("genkan", "compose solo a hnad=男", ["unknown word 'hnad=男'", "hand=", "advice=", "before"]),
    ("genkan", "compose solo a befor", ["unexpected word 'befor'"]),
    ("genkan", "act a 男 5 2 mod=3", ["unknown word 'mod=3'", "sp="]),
    ("genkan", "act a 男 5 2 dif=", ["unknown word 'dif='"]),
    ("genkan", "score 1 gm=2 pl=1 scnee=1", ["unknown word", "gm=", "pl=", "scene="]),
    ("genkan", "contest a,b 男 5 team=x", ["team="]),
    ("genkan", "contest a:3:1:1,b 男", ["NAME:DICE:SP"]),
    ("genkan", "scene now", ["unexpected word 'now'"]),
    ("genkan", "player a:3 3", ["one word without"]),
    ("genkan", "u 3", ["unexpected word '3'"]),
])
def test_unknown_or_extra_words_are_refused(system, line, words):
    with pytest.raises(ActionError) as e:
        a = parse(system, line)
        if system == "cards" and isinstance(a, dict) and a["do"] == "judge":   # the card itself
            from reader.table.cards import _parse_played
            for c in a["cards"]:
                _parse_played(c)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_contest_names_carry_their_own_values():
    a = parse("genkan", "contest A:3,B:5:2,oni 男 4 min=ふつう sp=1")
    assert a["names"] == ["A", "B", "oni"] and a["dice"] == 4 and a["special"] == 1
    assert a["each"] == {"A": {"dice": 3}, "B": {"dice": 5, "special": 2}} and a["min"] == "ふつう"
    a = parse("genkan", "contest A:知,B:体:蹴鞠 男")
    assert "dice" not in a and a["each"]["B"] == {"dice": "体", "special": "蹴鞠"}
    assert parse("genkan", "contest join c:6:1 team=x") == \
        {"do": "contestjoin", "name": "c", "team": "x", "dice": 6, "special": 1}


def test_judge_from_the_sheet_and_with_a_modifier():
    a = parse("cards", "judge tenjo 思考 @ 3 5 t=20 mod=+2 limit")
    assert (a["level"], a["ability"], a["cards"], a["mod"], a["limit"]) == (None, None, ["3", "5"], 2, True)
    a = parse("cards", "j pc 近接 2 肉体 cj JK=♠A mod=-3")
    assert (a["level"], a["ability"], a["cards"], a["mod"]) == (2, "肉体", ["cj", "JK=♠A"], -3)
    a = parse("cards", "sheet tenjo 理力=12 思考=2/理力")
    assert a == {"do": "sheet", "who": "tenjo", "abilities": {"理力": 12}, "skills": {"思考": [2, "理力"]}}


def test_genkan_sheet_poem_and_words():
    assert parse("genkan", "sheet 在五 知=3 男=2 歌学=2") == \
        {"do": "sheet", "who": "在五", "values": {"知": 3, "男": 2, "歌学": 2}}
    assert parse("genkan", "poem 小町 9") == {"do": "poem", "who": "小町", "no": 9}
    assert parse("genkan", "poem oni 1.1 2.2 3.3")["ku"] == ["1.1", "2.2", "3.3"]
    a = parse("genkan", "act 在五 男 知 ふつう 12 sp=歌学")
    assert (a["dice"], a["difficulty"], a["cards"], a["special"]) == ("知", "ふつう", [12], "歌学")
    assert parse("genkan", "show 在五") == Command("show", {"who": "在五"})
    assert parse("genkan", "recite #2 out=x.wav") == Command("recite", {"poem": 2, "out": "x.wav"})


WORD = hst.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6)


@given(key=WORD, value=hst.text(alphabet="0123456789abc", min_size=0, max_size=3),
       line=hst.sampled_from([("cards", "judge a x 1 3"), ("cards", "combat 2"), ("cards", "draw a"),
                              ("genkan", "act a 男 5 2"), ("genkan", "compose solo a"),
                              ("genkan", "contest a,b 男 5"), ("genkan", "score 1")]))
def test_any_word_is_either_read_or_refused(key, value, line):
    """A NAME=VALUE word is never dropped: the action carries its value, or the line is refused."""
    system, text = line
    try:
        a = parse(system, f"{text} {key}={value}")
    except ActionError:
        return
    takes = {"t": "target", "vs": "vs", "mod": "mod", "per": "per", "sp": "special", "of": "of",
             "ku": "ku", "hand": "hand", "advice": "advice", "min": "min", "teams": "teams",
             "gm": "gm", "pl": "players", "scene": "scene"}
    if key in takes and takes[key] in a:
        return
    # a card-like word in a judgement (a = A, k = K …) goes to the cards, for the rules to refuse
    assert system == "cards" and f"{key}={value}" in a.get("cards", []), (key, value, a)
