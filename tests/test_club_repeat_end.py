"""``r`` at the end of a club reading: as the last card is taken players ask for its 下の句
again.  Asked while the end is still sounding (everything already sent to the device, ~0.3 s
of it still ahead of the listener) or after it, the last 下の句 is read once more from its
start, once the end has been heard out; the log of cards read does not change."""
from __future__ import annotations

import numpy as np

from audio_fixtures import small_plan, tone_voice  # noqa: F401
from test_club import PumpOutput, club_session, repeating

LAG = 14400  # 0.3 s at 48 kHz: what a device holds queued


class TailOutput(PumpOutput):
    """``PumpOutput`` with a device's latency: the listener hears frame ``t - LAG`` when ``t``
    frames have been played, and the stream is active until the last frame read is heard."""

    def play(self, cursor):
        super().play(cursor)
        self.t = 0

    @property
    def is_active(self):
        return self.cursor is not None and (not self.cursor.finished or self.t < self.frames + LAG)

    def frame_now(self):
        return max(0, self.t - LAG) if self.cursor is not None else None

    def pump(self, session, frames, block=480):
        for _ in range(-(-frames // block)):
            b = self.cursor.read(block)
            self.blocks.append(b)
            self.frames += b.shape[0]
            self.t += block
            session.tick()


def _last_shimo(plan):
    return next(seg for seg in reversed(plan.segments) if seg.kind == "shimo")


def _read_to_the_end(tone_voice, out):
    plan = small_plan(tone_voice, cards=2, seed=4, joka=False)
    s = club_session(plan, tone_voice, out, auto=True)
    s.start()
    out.pump_until(s, lambda: out.cursor.state.finished)
    return plan, s


def test_r_while_the_end_still_sounds_reads_the_last_shimo_after_it(tone_voice):
    out = TailOutput()
    plan, s = _read_to_the_end(tone_voice, out)
    assert out.is_active and s.phase == "reading", "the end is still to be heard"
    log = list(s.log)
    s.command("repeat")
    out.pump_until(s, lambda: s.phase == "finished")
    assert s.view().state == repeating(plan, len(plan.order))
    assert s.running, "the front end must not close (and stop it) yet"
    out.pump_until(s, lambda: not out.is_active)
    s.tick()
    assert not s.running
    shimo = tone_voice.samples(_last_shimo(plan).speech)
    np.testing.assert_array_equal(out.played(), shimo)
    assert s.view().state == "finished" and s.log == log


def test_r_after_the_end_reads_the_last_shimo_again_each_time(tone_voice):
    out = PumpOutput()
    plan, s = _read_to_the_end(tone_voice, out)
    out.pump(s, 480)
    assert s.phase == "finished" and s.view().state == "finished"
    log = list(s.log)
    shimo = tone_voice.samples(_last_shimo(plan).speech)
    for _ in range(2):
        s.command("repeat")
        assert s.view().state == repeating(plan, len(plan.order))
        out.pump_until(s, lambda: not out.is_active)
        np.testing.assert_array_equal(out.played(), shimo)
        out.pump(s, 0)
        s.tick()
        assert s.view().state == "finished"
    s.command("next")
    s.command("back")
    assert s.phase == "finished" and s.log == log
