"""Kimariji: the standard table, the change examples, and properties as cards are read."""
from collections import Counter

from hypothesis import given, settings, strategies as st

from poems import COLORS, all_poems, poem
from poems.kimariji import kimariji, sound_morae


def test_standard_table():
    lengths = Counter(len(p.kimariji_sound) for p in all_poems())
    assert dict(lengths) == {1: 7, 2: 42, 3: 37, 4: 6, 5: 2, 6: 6}
    ones = {p.kimariji for p in all_poems() if len(p.kimariji_sound) == 1}
    assert ones == set("むすめふさほせ")


def test_card_form_and_sound():
    assert (poem(44).kimariji, poem(44).kimariji_sound) == ("あふこ", "おおこ")
    assert (poem(26).kimariji, poem(26).kimariji_sound) == ("をぐ", "おぐ")
    six = {p.no: p.kimariji for p in all_poems() if len(p.kimariji_sound) == 6}
    assert six == {31: "あさぼらけあ", 64: "あさぼらけう", 15: "きみがためは", 50: "きみがためを",
                   11: "わたのはらや", 76: "わたのはらこ"}


def test_matches_the_verified_data_file():
    import json
    from importlib import resources

    raw = json.loads(resources.files("poems").joinpath("data", "poems.json").read_text(encoding="utf-8"))
    assert {p["no"]: p["kimariji"] for p in raw} == {p.no: p.kimariji for p in all_poems()}


def test_historical_kana_has_one_character_per_mora_in_every_kami():
    # the card form is "that many characters of the historical kana"
    for p in all_poems():
        assert len("".join(p.kana[:3])) == len(sound_morae(p.kami_reading)), p.no


def test_sounds_as_read_aloud():
    assert "".join(sound_morae(["をぐらやま"])) == "おぐらやま"
    assert "".join(sound_morae(["おうことの"])) == "おおことの"
    assert sound_morae(["こいすちょう"])[-2:] == ("ちょ", "お")


def test_change_examples_from_the_rules():
    # after いまこ (21) is read, いまは (63) becomes いま; after いに (61) too, it becomes い
    k = kimariji(read=[21])
    assert k[63].sound == "いま" and k[63].card == "いま"
    k = kimariji(read=[21, 61])
    assert k[63].sound == "い"
    assert 21 not in k and 61 not in k


def test_goshiki_universe_counts_among_the_colour():
    blue = kimariji(universe=COLORS["blue"])
    assert set(blue) == set(COLORS["blue"])
    # 50 きみがためを is 6 sounds among all 100, but 15 (きみがためは) is green
    assert blue[50].sound == "きみ" and blue[91].sound == "きり"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 100), unique=True, max_size=99))
def test_reading_cards_only_shortens_and_stays_decisive(read):
    before = kimariji()
    after = kimariji(read=read)
    assert set(after) == set(range(1, 101)) - set(read)
    sounds = {n: "".join(sound_morae(poem(n).kami_reading)) for n in after}
    for n, k in after.items():
        assert k.length <= before[n].length
        assert sounds[n].startswith(k.sound)
        # decisive: no other unread poem shares it, and one sound shorter would not be
        assert not any(m != n and s.startswith(k.sound) for m, s in sounds.items())
        if k.length > 1:
            shorter = k.sound[: len(k.sound) - len(sound_morae([k.sound])[-1])]
            assert any(m != n and s.startswith(shorter) for m, s in sounds.items())


def test_a_row_u_in_a_modern_reading_is_not_a_long_o():
    # 48 風をいたみ 岩打つ波の: いわうつ is i-wa-u-tsu
    assert sound_morae(["いわうつなみの"])[:4] == ("い", "わ", "う", "つ")
