"""The reading engine: settings + seed + voice layouts -> a ``Plan``.  Never sleeps, never plays.

Order of a kyogi reading (rules.md §1)::

    jo-ka 上の句 · joka_gap · jo-ka 下の句 · gap · jo-ka 下の句+余韻
    ─ 間 ─ card 1 上の句 · take(wait) · card 1 下の句+余韻
    ─ 間 ─ card 2 上の句 · take(wait) · card 2 下の句+余韻
    ...
    ─ 間 ─ last 上の句 · take(wait) · [last 下の句+余韻, if ``last_shimo``]

goshiki (§2): 「ご用意よければ 空札一枚」 ─ 間 ─ karafuda 上の句 · gap · 下の句, then each card
─ 間 ─ 上の句 · gap · 下の句; no waiting.  beginner: like goshiki without the announcement,
the jo-ka only if asked.

The voice is asked only for ``layout(item)`` (exact lengths and mora onsets, no audio), so the
plan is exact before a single sample is synthesized; the same plan drives live playback and
rendering.  Randomness comes from ``reader.base.seeds.rng(seed)`` only.
"""
from __future__ import annotations

from audio.voice import SpeechItem, Voice
from poems.kimariji import kimariji_of
from reader.base import seeds
from reader.base.errors import SelectionError
from audio.plan import Plan, Segment
from reader.reading.settings import ReadingSettings, reading_of


def choose_order(settings: ReadingSettings, seed: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(order, universe, karafuda) for a reading: what is read, in which order.

    The selection is the settings' poems (default: all 100; goshiki needs a colour).  Karafuda
    for practice subsets are drawn from the poems outside the selection and shuffled in.  The
    universe (what can be read, so what kimariji are counted among) is selection + karafuda.
    """
    rng = seeds.rng(seed)
    if settings.poems is not None:
        selected = tuple(sorted(set(settings.poems)))
    elif reading_of(settings.rules).one_colour:
        raise SelectionError("goshiki reads one colour: add --color blue|pink|yellow|green|orange")
    else:
        selected = tuple(range(1, 101))
    if not selected:
        raise SelectionError("no poems selected")
    rest = [n for n in range(1, 101) if n not in set(selected)]
    if settings.karafuda > len(rest):
        raise SelectionError(
            f"--karafuda {settings.karafuda} is more than the {len(rest)} poems outside the selection")
    karafuda = tuple(sorted(rng.sample(rest, settings.karafuda)))
    pool = list(selected + karafuda)
    rng.shuffle(pool)
    cards = settings.cards if settings.cards is not None else len(pool)
    if reading_of(settings.rules).one_colour and settings.cards is not None and \
            settings.cards > len(pool):
        cards = len(pool)  # the 17-card default on a smaller selection reads them all
    if cards > len(pool):
        raise SelectionError(f"--cards {cards} is more than the {len(pool)} poems selected")
    return tuple(pool[:cards]), tuple(sorted(pool)), karafuda


class _Builder:
    def __init__(self, voice: Voice, settings: ReadingSettings):
        self.voice = voice
        self.s = settings
        self.rate = voice.sample_rate
        self.pos = 0
        self.segments: list[Segment] = []

    def frames(self, ms: int) -> int:
        return round(ms * self.rate / 1000)

    def silence(self, kind: str, poem, ms: int, wait: bool = False) -> None:
        n = self.frames(ms)
        if n or wait:
            self.segments.append(Segment(kind, poem, self.pos, self.pos + n, wait=wait))
            self.pos += n

    def speak(self, kind: str, poem, key: str, part: str, hold_ms: int = 0, kimariji=None) -> None:
        item = SpeechItem(key=key, part=part, speed=self.s.speed, hold_ms=hold_ms)
        layout = self.voice.layout(item)
        extra = {}
        if kimariji is not None:
            last = layout.morae[min(kimariji.length, len(layout.morae)) - 1]
            extra = dict(kimariji=kimariji.card, kimariji_sound=kimariji.sound, decisive=self.pos + last.start)
        self.segments.append(Segment(kind, poem, self.pos, self.pos + layout.frames, speech=item, **extra))
        self.pos += layout.frames

    def ma(self, poem) -> None:
        if self.segments:  # nothing to wait for before the very first sound
            self.silence("ma", poem, self.s.ma_ms)


def build_plan(settings: ReadingSettings, seed: int, voice: Voice) -> Plan:
    """The whole reading as a plan; ``seed`` fixes the order (same seed, same reading)."""
    order, universe, karafuda = choose_order(settings, seed)
    s = settings
    shape = reading_of(s.rules)
    b = _Builder(voice, s)

    if shape.opening == "joka" and s.joka:  # the 下の句 is held only before the 間 (issue 21)
        b.speak("kami", "joka", "joka", "kami")
        b.silence("gap", "joka", s.joka_gap_ms)
        b.speak("shimo", "joka", "joka", "shimo")
        b.silence("gap", "joka", s.gap_ms)
        b.speak("shimo", "joka", "joka", "shimo", hold_ms=s.yoin_ms)
    elif shape.opening == "announce" and s.joka:
        b.speak("whole", "announce", "announce", "whole")
        b.ma("karafuda")
        b.speak("kami", "karafuda", "karafuda", "kami")
        b.silence("gap", "karafuda", s.gap_ms)
        b.speak("shimo", "karafuda", "karafuda", "shimo", hold_ms=s.yoin_ms)
    elif shape.opening == "joka-once" and s.joka:
        b.speak("kami", "joka", "joka", "kami")
        b.silence("gap", "joka", s.joka_gap_ms)
        b.speak("shimo", "joka", "joka", "shimo", hold_ms=s.yoin_ms)

    read: list[int] = []
    for i, no in enumerate(order):
        k = kimariji_of(no, universe, read)
        b.ma(no)
        b.speak("kami", no, str(no), "kami", kimariji=k)
        if shape.waits_for_take:
            b.silence("take", no, s.take_ms, wait=True)
            if i < len(order) - 1 or s.last_shimo:
                b.speak("shimo", no, str(no), "shimo", hold_ms=s.yoin_ms)
        else:
            b.silence("gap", no, s.gap_ms)
            b.speak("shimo", no, str(no), "shimo", hold_ms=s.yoin_ms)
        read.append(no)

    return Plan(
        sample_rate=b.rate, rules=s.rules, seed=seed, order=order, universe=universe,
        karafuda=karafuda, segments=tuple(b.segments), settings=s.to_dict(),
        voice=getattr(voice, "name", ""),
    )

