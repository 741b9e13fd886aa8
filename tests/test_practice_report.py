"""What the terminal prints at the end of a practice match (issue 34): the match report's and
the practice table's kimariji are the cards' in play (a goshiki colour's 20, as on the board),
their columns line up on Japanese text (display width, ``reader.ui.term``), and a read
nobody took or reacted to has no row.  In-process, on the session (milliseconds)."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audio.voice import ToneVoice
from poems import COLORS
from poems.kimariji import kimariji_of
from reader.match import log as matchlog
from reader.practice import headless, report
from reader.practice.match import Seat
from reader.practice.session import PracticeSession
from reader.ui.term import pad, table, width

VOICE = ToneVoice()


def _goshiki_blue(seed=21):
    m = headless.new_match("goshiki", {"A": Seat("bot", 3), "B": Seat("bot", 2)}, seed, VOICE,
                           color="blue")
    headless.play(m)
    return m


def _report_rows(text: str) -> list[list[str]]:
    """The match report's table, cells split on the two-space gap."""
    lines = text.split("\n")
    start = lines.index("") + 1
    return [re.split(r" {2,}", ln) for ln in lines[start:]]


def test_a_goshiki_match_names_the_colours_kimariji_not_the_hundred_cards():
    """76 is わたのはらこ among the 100, わ among the blue 20: the board shows わ, and so do both
    printed tables now (each card's kimariji when it was read, among the colour's cards)."""
    m = _goshiki_blue()
    order = [c.poem for c in m.closed]
    assert 76 in order  # (seed 21 reads it)
    want = {p: kimariji_of(p, COLORS["blue"], order[:i]).card for i, p in enumerate(order)}
    assert want[76] == "わ"
    rows = _report_rows(matchlog.report(m.match))
    assert rows[0][:3] == ["read", "poem", "kimariji"]
    got = {int(r[1]): r[2] for r in rows[1:]}
    assert got == want
    printed = {int(r[0]): r[1] for r in (ln.split() for ln in report.end_lines(m)[4:])}
    assert printed and all(printed[p] == want[p] for p in printed)
    assert "わたのはらこ" not in matchlog.report(m.match) + "\n".join(report.end_lines(m))


def _column_starts(line: str, cells) -> list[int]:
    """The display column where each cell of ``line`` starts, found left to right."""
    out, at = [], 0
    for c in cells:
        i = line.index(c, at) if c else at
        out.append(width(line[:i]))
        at = i + len(c)
    return out


def test_the_practice_table_lines_up_on_kana():
    """Kimariji of one sound and of six sit in one column: every row's took, reaction and
    fault cells start at the same terminal column (they did not: padded by characters, a
    kana-only cell took twice the room it was given)."""
    m = _goshiki_blue()
    lines = report.end_lines(m)[3:]
    rows = [ln.split() for ln in lines]  # (card, kimariji, took, A, B[, faults])
    assert rows[0] == ["card", "kimariji", "took", "A", "B", "faults"]
    assert len(rows) == len(report.reads(m)) + 1 > 5
    assert len({width(r[1]) for r in rows[1:]}) > 1  # (kimariji of different lengths)
    edges = []  # kimariji: where it starts; took, A, B (right-aligned): where each ends
    for line, cells in zip(lines, rows):
        starts = _column_starts(line, cells)
        edges.append([starts[1]] + [s + width(c) for s, c in zip(starts[2:5], cells[2:5])])
    assert all(e == edges[0] for e in edges), "\n".join(lines)
    faulted = [(ln, c) for ln, c in zip(lines[1:], rows[1:]) if len(c) == 6]
    assert faulted  # (seed 21: B faults) and the faults column starts in one place too
    assert len({_column_starts(ln, c)[5] for ln, c in faulted + [(lines[0], rows[0])]}) == 1


KANA = st.characters(min_codepoint=0x3041, max_codepoint=0x3096)
KANJI = st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF)
ASCII = st.characters(min_codepoint=0x21, max_codepoint=0x7E)
CELL = st.text(st.one_of(KANA, KANJI, ASCII), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), cols=st.integers(1, 5), n=st.integers(1, 6))
def test_every_rows_cells_line_up_for_any_mix_of_kana_kanji_and_ascii(data, cols, n):
    rows = [data.draw(st.lists(CELL, min_size=cols, max_size=cols)) for _ in range(n)]
    align = data.draw(st.text(st.sampled_from("<>"), min_size=cols, max_size=cols))
    lines = table(rows, align)
    assert len(lines) == n
    widths = [max(width(r[j]) for r in rows) for j in range(cols)]
    for line, cells in zip(lines, rows):
        starts = _column_starts(line, cells)
        left = 0
        for j, (s, c) in enumerate(zip(starts, cells)):
            # each column is widths[j] terminal columns wide, two apart; a cell sits at its
            # left edge (<) or ends at its right edge (>)
            assert s == (left if align[j] == "<" else left + widths[j] - width(c))
            left += widths[j] + 2
        assert width(line) == left - 2 - (widths[-1] - width(cells[-1])
                                          if align[-1] == "<" else 0)


def test_width_counts_terminal_columns():
    assert width("わたのはらこ") == 12 and width("card") == 4 and width("76 わ") == 5
    assert pad("わ", 4) == "わ  " and pad("わ", 4, ">") == "  わ" and pad("わたの", 2) == "わたの"


def test_a_read_whose_touches_did_nothing_has_no_row():
    """Alone, one card: a touch before its 上の句 began (early: it does nothing), then nothing.
    The card is missed (counted on the first line); the table lists no row of dashes."""
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("none")}, 38, VOICE, cards=1)
    s = PracticeSession(m)
    s.start_reading()
    cur = m.current()
    s.tick((cur.start - 4800) / 48000, cur.start - 4800)
    assert s.touch("A", cur.poem, cur.start - 4800).verdict == "early"
    f = cur.start
    while not m.closed:
        f += 4800
        s.tick(f / 48000, f, finished=f >= m.plan.frames)
    assert m.closed[0].event.took is None and m.closed[0].timing["touches"]
    lines = report.end_lines(m)
    assert lines[0].startswith("alone: 0 taken, 1 missed")
    assert report.reads(m) == [] and len(lines) == 4 and lines[3].startswith("card")
    assert report.end_rows(m) == [report.end_rows(m)[0]]


class _Window:
    """The board window as ``karuta practice`` drives it, with nothing on a screen: the match
    is left unplayed, the figures are the window's own wording."""

    def __init__(self, m, output, **kw):
        self.m = m

    def run(self):
        pass

    def record_stats(self):
        pass

    def end_lines(self):
        return report.end_lines(self.m)

    def stats(self):
        return "window 60.0 fps; input polled every 0.98 ms (median), p99 1.2 ms, max 2.0 ms"

    def ready_line(self):
        return "get ready: 2.1 s (timing settled after 1.1 s, then a countdown)"


@pytest.mark.parametrize("how", ["", "--timing-details", "KARUTA_TIMING_DEBUG=1"])
def test_the_window_figures_are_printed_only_when_asked_for(tmp_path, monkeypatch, how):
    """After a window match the player reads the report and the table; the window's frame
    rate, input polling and "get ready" figures only with --timing-details (or the developer's
    KARUTA_TIMING_DEBUG).  In-process: a window that shows nothing, a NullOutput."""
    from audio.output import NullOutput
    from cli_run import run_inproc
    from reader.practice import window as W
    from reader.reading import player
    from reader.ui import window as ui_window

    monkeypatch.setattr(W, "BoardWindow", _Window)
    monkeypatch.setattr(ui_window, "display_available", lambda *a: True)
    monkeypatch.setattr(player, "open_output", lambda backend, device, rate: NullOutput(rate))
    env = {"KARUTA_CONFIG_DIR": str(tmp_path)}
    if how.startswith("KARUTA"):
        env["KARUTA_TIMING_DEBUG"] = "1"
    args = ["practice", "--vs", "bot:2", "--cards", "2", "--seed", "5", "--voice", "tone"]
    r = run_inproc(*args, *([how] if how.startswith("--") else []), env=env,
                   data_dir=tmp_path / "data")
    assert r.returncode == 0, r.stderr
    assert "card  kimariji  took" in r.stdout and "seed 5:" in r.stdout
    shown = "input polled every" in r.stdout, "get ready: 2.1 s" in r.stdout
    assert shown == ((True, True) if how else (False, False)), r.stdout
