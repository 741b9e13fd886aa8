"""Kimariji: the standard table, the change examples, and properties as cards are read."""
from collections import Counter

from hypothesis import given, settings, strategies as st

from poems import COLORS, all_poems, poem
from poems.kimariji import kimariji, kimariji_of, sound_morae


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


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 100), unique=True, min_size=1), st.data())
def test_one_cards_kimariji_is_its_entry_in_the_whole_table(universe, data):
    """``kimariji_of`` (a reading's plan asks it once per card) is the table's entry for that
    card, whatever was read and among whatever universe (a colour, a selection)."""
    read = data.draw(st.lists(st.sampled_from(universe), unique=True,
                              max_size=len(universe) - 1))
    table = kimariji(universe, read)
    assert {n: kimariji_of(n, universe, read) for n in table} == table


def test_a_row_u_in_a_modern_reading_is_not_a_long_o():
    # 48 風をいたみ 岩打つ波の: いわうつ is i-wa-u-tsu
    assert sound_morae(["いわうつなみの"])[:4] == ("い", "わ", "う", "つ")


# ---------------------------------------------------------------------------- one rule "as heard"
KANA = "あいうえおかきくけこがぎぐげごさしすせそとどなにのはひふへほまみむめもやゆよらりるれろわをゐゑぢづん"


def test_every_part_of_the_app_hears_a_kami_by_the_one_rule():
    """The kimariji, the drills and practice (``kami_heard``) and the built-in voice's check of
    what it says (``audio.synth.canonical_morae``) fold sounds alike, poem for poem."""
    from audio.synth import canonical_morae, reading_morae
    from poems.kimariji import heard, kami_heard

    for p in all_poems():
        mine = kami_heard(p.no)
        assert mine == sound_morae(p.kami_reading)
        assert canonical_morae([m for ku in p.kami_reading for m in reading_morae(ku)]) == mine
        assert heard(mine) == mine  # folded once is folded


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(KANA), min_size=1, max_size=12))
def test_the_voice_and_the_kimariji_fold_any_kana_alike(chars):
    from audio.synth import canonical_morae, reading_morae

    text = "".join(chars)
    assert canonical_morae(reading_morae(text)) == sound_morae([text])


def test_what_is_folded_and_what_is_not():
    """を, ゐ/ゑ, ぢ/づ and a long o fold (rules.md §5); an a-row + う and an e-row + い do not:
    79 もれいづる is heard も-れ-い-ず-る, and synthesis used to fold it to もれえずる."""
    from audio.synth import canonical_morae

    assert sound_morae(["をぐらやま"])[:2] == ("お", "ぐ")
    assert sound_morae(["おうことの"]) == tuple("おおことの")  # 44, historical あふ
    assert sound_morae(["いわうつ"]) == tuple("いわうつ")
    assert "".join(sound_morae(poem(79).reading[3:4])).startswith("もれいず")
    assert canonical_morae(list("せんせい")) == tuple("せんせい")


def test_a_typed_opening_finds_a_poem_as_heard_or_as_printed():
    from poems.kimariji import opens_with

    assert opens_with(44, "おおこ") and opens_with(44, "あふこ") and opens_with(44, "おうこ")
    assert not opens_with(44, "あさ")
