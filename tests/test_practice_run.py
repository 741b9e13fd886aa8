"""``karuta practice``'s options table (``reader.cli.practice.CHECKS``) and its modes
(``reader.practice.run``) driven without click: in this process, no window, no sound."""
from __future__ import annotations

import contextlib
import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from reader.cli.practice import CHECKS, ForGames, LeaveOut, Needs, practice, refusal
from reader.match.rules.games import GAMES, GOSHIKI, KYOGI

#: the one format of a refusal: "OPTION needs OTHER: why" / "with OPTION, leave out OTHERS: why"
FORMAT = re.compile(r"^(?:(--[\w-]+) needs (.+?)|with (--[\w-]+), leave out (.+?)): (\S.*)$")
TYPED = sorted({o for c in CHECKS for o in
                (getattr(c, "options", ()) + getattr(c, "others", ()) +
                 ((c.option,) if hasattr(c, "option") else ()))})


def test_every_option_the_table_names_is_an_option_of_karuta_practice():
    """A renamed option cannot leave the table checking a name nobody can type."""
    options = {o for p in practice.params for o in p.opts}
    assert set(TYPED) <= options, sorted(set(TYPED) - options)
    assert len(CHECKS) >= 15  # (each "goes only with" of the command is a row)


def test_each_row_refuses_in_the_one_format():
    for c in CHECKS:
        if isinstance(c, Needs):
            given_, game = [c.option], KYOGI
        elif isinstance(c, LeaveOut):
            given_, game = [c.options[0], c.others[-1]], KYOGI
        else:
            assert isinstance(c, ForGames)
            game = next(g for g in GAMES.values()
                        if c.option.removeprefix("--") not in g.deal_options)
            given_ = [c.option]
        said = c.refusal(given_, game)
        assert said is not None and FORMAT.match(said), (c, said)
        assert c.refusal([], game) is None
    assert refusal(["--cards"], GOSHIKI) == "--cards needs --rules kyogi: goshiki has no --cards"
    assert refusal(["--cards", "--seed"], KYOGI) is None


@settings(max_examples=300, deadline=None)
@given(st.sets(st.sampled_from(TYPED)), st.sampled_from(sorted(GAMES)))
def test_a_refusal_names_only_what_was_typed_and_what_is_missing(typed, name):
    """Whatever the user types, the one line is in the format, the option it is about was
    typed, "leave out" names only options typed, and "needs" names options none typed (or
    the other game)."""
    typed = sorted(typed)
    said = refusal(typed, GAMES[name])
    if said is None:
        return
    m = FORMAT.match(said)
    assert m, said
    if m.group(1):
        assert m.group(1) in typed
        for need in m.group(2).split(" or "):
            option, *value = need.split()
            if option == "--rules":  # (another game than the one played)
                assert value[0] in GAMES and value[0] != name, said
            else:
                assert option not in typed, said
    else:
        assert m.group(3) in typed
        named = re.split(r", | and ", m.group(4))
        assert all(n.split("/")[0] in typed for n in named), said


def _env(lines):
    from reader.base.clock import SYSTEM_CLOCK
    from reader.practice.run import Env

    claims = []
    return Env(echo=lines.append, warn=lambda s: lines.append("karuta: " + s),
               aside=lines.append,
               claim_log=lambda path, kind, **kw: claims.append((str(path), kw)),
               clock=SYSTEM_CLOCK, calibration=lambda output: ("none", None),
               stats=contextlib.nullcontext), claims


def test_the_bots_mode_plays_saves_and_reports_without_click(tmp_path):
    from reader.practice import run
    from reader.practice.match import Seat

    lines: list[str] = []
    env, claims = _env(lines)
    log = tmp_path / "m.jsonl"
    seats = {"A": Seat("bot", 2), "B": Seat("bot", 4)}
    m = run.new_or_resumed(env, rules=KYOGI.name, seats=seats, seed=7, voice_spec="tone",
                           cards=3, color=None, reading={}, simultaneous=10.0, log_file=log,
                           resume=False)
    assert not run.has_player(m)
    run.play_bots(env, m, log_file=log, resume=False, as_json=True, again="")
    out = json.loads(lines[0])
    assert out["rules"] == KYOGI.name and out["winner"] in ("A", "B")
    # the log on disk is the match: the same summary when it is replayed
    from reader.match import log as matchlog

    assert matchlog.summary(matchlog.load(log).match) == out
    # checked before the voice, then held before the first save
    assert claims == [(str(log), {"new": True, "hold": False}), (str(log), {"new": True, "hold": True})]
    # resumed from its log, the same match: nothing left to read, the same result
    lines.clear()
    again = run.new_or_resumed(env, rules=KYOGI.name, seats=None, seed=None, voice_spec="tone",
                               cards=None, color=None, reading={}, simultaneous=10.0,
                               log_file=log, resume=True)
    run.play_bots(env, again, log_file=log, resume=True, as_json=False, again="")
    assert "A wins" in lines[0] or "B wins" in lines[0]
    assert lines[-1] == "seed 7: the same deal, order and bots again with --seed 7"
