"""A read's line ("read 1: 37 しらつゆに · A took it") stays up long enough to read: a goshiki read
closes as the next 上の句 starts, and its line used to give way to "read 2/10" at once.  It
stays ``READ_LINE_S`` (the frames heard), unless a touch in the new read has news first.  On
the pure session (``PracticeSession``, as the window and ``--bot-vs-bot`` drive it)."""
from __future__ import annotations

from reader.practice.session import READ_LINE_S
from test_practice_session import RATE, _session, _tick

HOLD = round(READ_LINE_S * RATE)


def _to_the_second_read(s, m):
    first = m.current()
    _tick(s, first.start)
    _tick(s, first.closes)  # the next 上の句 begins: the first read is over
    second = m.current()
    assert second.index == 1 and second.start <= first.closes
    assert s.status.startswith(f"read 1: {first.poem} ")
    return first, second


def test_a_goshiki_reads_line_stays_while_the_next_kami_begins():
    m, s, _ = _session("goshiki", b="none", seed=8, color="blue")
    first, _ = _to_the_second_read(s, m)
    told = s.status
    _tick(s, first.closes + HOLD - 1)
    assert s.status == told  # still up, READ_LINE_S into the next 上の句
    _tick(s, first.closes + HOLD)
    assert s.status == "read 2/17"  # (goshiki reads 17 of the colour's 20)


def test_a_touch_in_the_new_read_is_told_at_once_and_not_under_the_last_reads_line():
    m, s, _ = _session("goshiki", b="none", seed=8, color="blue")
    first, second = _to_the_second_read(s, m)
    wrong = next(c for c in m.board["A"] if c != second.poem)
    j = s.touch("A", wrong, max(second.start, first.closes) + RATE)
    assert j.verdict == "fault"
    _tick(s, first.closes + RATE + 1)
    assert s.status.startswith("read 2/17 · you: fault"), s.status
