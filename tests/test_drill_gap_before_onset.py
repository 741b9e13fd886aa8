"""A gap in the sound before the kimariji's onset (after the 上の句 began) does not cost the
tap its reaction time: the player heard the onset and tapped on one steady stretch of sound,
so the reaction is exact; only the time from the 上の句's start spans the gap and is not
known.  (A gap after the onset leaves the tap untimed: test_drill_speed.py.)"""
from __future__ import annotations

import json
import random
from datetime import datetime, timezone

import pytest

from audio_fixtures import Stall
from test_drill_speed import OnsetRobot


class EarlyStallRobot(OnsetRobot):
    """``OnsetRobot`` whose card ``stall_card`` stalls 20 ms after its 上の句 began, before
    the decisive mora (大山札 pairs: the first card's kimariji is six morae)."""

    def poll(self, timeout):
        cursor = self.out._cursor
        if (cursor is not None and self.stall is not None and self.stall.at is None
                and self.next + 1 == self.stall_card and self.next < len(self.kami)):
            k = self.kami[self.next]
            start = cursor.stream_frame_at(k.start)
            if start is not None:
                self.stall.at = start + round(0.02 * self.out.sample_rate)
        return super().poll(timeout)


def test_a_gap_before_the_kimariji_keeps_the_reaction_exact(tmp_path):
    for attempt in (1, 2):  # again only if the machine itself stalled the sound
        if _drill_with_an_early_stall(tmp_path / f"run{attempt}"):
            return
    pytest.skip("the machine stalled the sound again in both runs")


def _drill_with_an_early_stall(tmp_path) -> bool:
    from audio.output import NullOutput
    from audio.voice import ToneVoice
    from reader.drills.grab import drill_plan, summarize
    from reader.drills.speed import run_drill
    from reader.drills.stats import StatsDB

    voice = ToneVoice(48000, mora_ms=60)
    # one card is read (the one that stalls; the other three of the drill's order were read
    # for nothing), with all four poems in play: its kimariji is six morae
    plan = drill_plan(voice, 3, poems=[31, 64, 15, 50], cards=1, ma_ms=200, take_ms=1500,
                      lead_ms=300)
    assert len(plan.order) == 1
    kami = {s.poem: s for s in plan.segments if s.kind == "kami"}
    stalled = plan.order[0]
    assert kami[stalled].decisive - kami[stalled].start > 0.2 * 48000, "room before the onset"
    out = NullOutput()
    stall = Stall(out, ms=80)
    front = EarlyStallRobot(out, plan, delay_ms=400, stall=stall, stall_card=1)
    tmp_path.mkdir()
    log = tmp_path / "drill.jsonl"
    with StatsDB(tmp_path / "stats.sqlite") as db, open(log, "w", encoding="utf-8") as f:
        sid = db.start_session("speed", datetime.now(timezone.utc))
        run_drill(plan, voice, out, front, take_s=3.0, choices=2, log=f, db=db,
                  session_id=sid, rng=random.Random(3))
        rows = {t.poem: t for t in db.taps()}
    assert stall.frame is not None
    before_onset = out._cursor.stream_frame_at(kami[stalled].decisive)
    assert stall.frame < before_onset, "the stall came before the decisive mora"
    lines = {x["poem"]: x for x in map(json.loads, log.read_text().splitlines())}
    ln = lines[stalled]
    extra = out.underflows - 8  # more underflows: the machine itself stalled the sound
    if extra and ln.get("untimed"):
        return False
    assert "untimed" not in ln, ln
    assert ln["reaction_ms"] == pytest.approx(400, abs=2), ln
    # 80 ms, and longer by what the machine itself stalled there (10 ms an underflow: a loaded
    # run saw a gap of 100 ms with two underflows more)
    assert ln["from_kami_ms"] is None and 70 <= ln["gap_ms"] <= 90 + 10 * extra, (ln, extra)
    assert rows[stalled].reaction_ms == pytest.approx(ln["reaction_ms"])
    assert any("gap of" in s and "before it" in s for s in front.shown), front.shown
    summary = summarize(list(lines.values()), cards=len(plan.order))
    assert summary.untimed == sum(bool(x.get("untimed")) for x in lines.values())
    return True
