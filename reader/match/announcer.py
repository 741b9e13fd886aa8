"""``karuta match keep --read``: the app reads the poems while the referee keeps score.

The keeper asks ``next_poem(state)`` once per read (``reader.match.keeper.Announcer``).  The first call
plans a live kyogi-shaped reading of the poems not read yet (all 100, or the goshiki colour's
20), seeded, and starts it: jo-ka (on a new match) and the first 上の句, then the reader waits.
Each later call releases the wait: the previous card's 下の句, 間, the next 上の句.  So the
referee's entry of a read's result is the signal to read on, as a reader waits for the take.
"""
from __future__ import annotations

from audio.plan import Plan


class ReadingAnnouncer:
    def __init__(self, voice, output, seed: int, *, joka: bool = True, **settings):
        self.voice = voice
        self.output = output
        self.seed = seed
        self.joka = joka
        self.settings = settings
        self.plan: Plan | None = None
        self.cursor = None
        self.k = 0

    def _start(self, state) -> None:
        from audio.render import PlanCursor
        from poems import COLORS
        from reader.reading.engine import build_plan
        from reader.match.rules.games import KYOGI
        from reader.reading.settings import preset

        read = set(state.read_poems)
        color = getattr(state, "color", None)
        universe = COLORS[color] if color else range(1, 101)
        remaining = tuple(n for n in universe if n not in read)
        settings = preset(KYOGI.name, poems=remaining, joka=self.joka and not read, **self.settings)
        self.plan = build_plan(settings, self.seed, self.voice)
        self.cursor = PlanCursor(self.plan, self.voice, live=True)
        self.output.play(self.cursor)

    def next_poem(self, state) -> int | None:
        if self.cursor is None:
            self._start(state)
        else:
            if not self.output.is_active:
                self.output.wait(timeout=0)  # a device that went away: DeviceError
            self.cursor.release()
            self.k += 1
        return self.plan.order[self.k] if self.k < len(self.plan.order) else None

    def close(self) -> None:
        if self.cursor is not None:
            self.output.stop()
            self.cursor.close()
