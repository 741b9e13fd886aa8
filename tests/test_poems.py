"""The poem data: the properties ../shared/data/check_poems.py checked, kept as our own tests."""
import re

import pytest

import poems
from poems import COLORS, JOKA, GOSHIKI_KARAFUDA, all_poems, poem

HIRA = re.compile(r"^[\u3041-\u3096ー]+$")
# historical kana -> modern pronunciation, one character for one
ONE_TO_ONE = dict(zip("はひふへほをゐゑぢづむ", "わいうえおおいえじずん"))
MULTI = {"けふ": "きょう", "てふ": "ちょう", "いふ": "ゆう"}
A_TO_O = dict(zip("あかがさざただなはばぱまやらわ", "おこごそぞとどのほぼぽもよろお"))


def derivable(kana: str, reading: str) -> bool:
    """Can ``reading`` be obtained from ``kana`` by the standard historical-kana substitutions?"""
    from functools import lru_cache

    @lru_cache(maxsize=None)
    def go(i, j):
        if i == len(kana):
            return j == len(reading)
        if j < len(reading) and reading[j] in (kana[i], ONE_TO_ONE.get(kana[i])) and go(i + 1, j + 1):
            return True
        for a, b in MULTI.items():
            if kana.startswith(a, i) and reading.startswith(b, j) and go(i + len(a), j + len(b)):
                return True
        return (i + 1 < len(kana) and kana[i] in A_TO_O and kana[i + 1] in "ふう"
                and reading.startswith(A_TO_O[kana[i]] + "う", j) and go(i + 2, j + 2))

    return go(0, 0)


def test_one_hundred_poems_numbered_in_order():
    assert [p.no for p in all_poems()] == list(range(1, 101))
    assert poem(1).author == "天智天皇"
    assert poem(100).kana[0] == "ももしきや"


@pytest.mark.parametrize("p", all_poems(), ids=lambda p: str(p.no))
def test_five_ku_in_every_form(p):
    for form in (p.kanji, p.kana, p.reading):
        assert len(form) == 5 and all(form)
    for ku in p.kana + p.reading:
        assert HIRA.match(ku), ku
    assert HIRA.match(p.author_kana)
    for ku in p.reading:
        assert not re.search("[ゐゑぢづ]|てふ|けふ", ku), "reading keeps a historical spelling"


@pytest.mark.parametrize("p", all_poems(), ids=lambda p: str(p.no))
def test_reading_derives_from_kana_and_kanji_agrees(p):
    for kn, rd in zip(p.kana, p.reading):
        assert derivable(kn, rd), (kn, rd)
    for kj, kn in zip(p.kanji, p.kana):
        pos = 0
        for run in re.findall(r"[\u3041-\u3096]+", kj):
            j = kn.find(run, pos)
            assert j >= 0, (kj, kn, run)
            pos = j + len(run)


def test_goshiki_colours_cover_the_hundred_once():
    seen = sorted(n for nos in COLORS.values() for n in nos)
    assert seen == list(range(1, 101))
    assert {len(v) for v in COLORS.values()} == {20}
    assert poem(3).color == "blue" and poem(1).color == "pink"
    assert sorted(poems.COLOR_CARD_ORDER["blue"]) == sorted(COLORS["blue"])


def test_joka_texts():
    assert "".join(JOKA.kanji) == "難波津に咲くやこの花冬ごもり今を春べと咲くやこの花"
    assert JOKA.shimo_reading == ("いまおはるべと", "さくやこのはな")
    assert GOSHIKI_KARAFUDA.author == "石川啄木"
    assert len(GOSHIKI_KARAFUDA.reading) == 5


def test_torifuda_is_the_card_text():
    # 下の句 in hiragana, no dakuten, as printed (SOURCES.md: 89 よはり, 92 かはく on the card)
    assert poem(17).torifuda == "からくれなゐにみつくくるとは"
    assert "よはり" in poem(89).torifuda
    assert "かはく" in poem(92).torifuda
    assert not re.search("[がぎぐげござじずぜぞだぢづでどばびぶべぼぱぴぷぺぽ]", "".join(p.torifuda for p in all_poems()))


def test_unknown_poem_number_is_refused():
    with pytest.raises(KeyError):
        poem(0)
    with pytest.raises(KeyError):
        poem(101)
