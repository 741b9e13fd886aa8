"""pygame.mixer output: queued ``Sound`` chunks on one ``Channel`` (no DAC times)."""
from __future__ import annotations

import threading
import time

import numpy as np

from audio.output.base import NO_DEVICE, Output
from audio.output.feeder import EMPTY
from audio.render import quantize16
from reader.base.errors import DeviceError

__all__ = ["PygameOutput"]


class PygameOutput(Output):
    """pygame.mixer output: the cursor's blocks become ``Sound`` chunks queued one ahead on a
    ``Channel`` (SDL_mixer starts a queued chunk within the same mix buffer, so joins are
    sample-exact).  16-bit, mono or stereo (duplicated), mixer at ``sample_rate``.

    Initialises pygame.mixer itself when it is not (``pre_init`` with this rate, ``buffer``
    frames); a mixer already running at another rate/format is an error.  ``chunk`` frames per
    Sound (default 2400 = 50 ms); ≤ 2 chunks are ahead of the ear plus the mixer buffer.

    Timing accuracy: SDL reports no DAC time.  ``frame_at`` takes the moment a poller thread
    (every ``poll_ms``) sees a chunk start (the queue slot empties), minus the mixer buffer:
    expect a constant offset of about one mixer buffer (``buffer``/rate, ~10 ms) that a user
    calibration absorbs, and jitter up to ``poll_ms`` + a few ms.  Prefer
    ``SounddeviceOutput`` for grab timing.
    """

    def __init__(self, sample_rate: int = 48000, channels: int = 1, buffer: int = 512,
                 chunk: int = 2400, poll_ms: float = 1.0):
        self.sample_rate = int(sample_rate)
        self.channels = int(channels)
        self.buffer = int(buffer)
        self.blocksize = int(chunk)
        self.poll_s = poll_ms / 1000.0
        self.queue_ms = 2 * self.blocksize * 1000.0 / self.sample_rate  # two chunks ahead
        self._init_state()
        self._init_mixer()

    def _init_mixer(self):
        try:
            import pygame
        except ImportError:
            raise DeviceError(NO_DEVICE) from None
        self._pg = pygame
        got = pygame.mixer.get_init()
        if got is None:
            try:
                pygame.mixer.pre_init(self.sample_rate, -16, self.channels, self.buffer)
                pygame.mixer.init()
            except pygame.error as e:
                raise DeviceError(f"{NO_DEVICE} ({e})") from None
            got = pygame.mixer.get_init()
        if got[0] != self.sample_rate or got[1] != -16 or got[2] not in (1, 2):
            raise DeviceError(f"pygame.mixer runs at {got}, not {self.sample_rate} Hz 16-bit")
        self.channels = got[2]

    def _sound(self, block: np.ndarray):
        data = quantize16(block)
        if self.channels == 2:
            data = np.repeat(data[:, None], 2, axis=1)
        return self._pg.sndarray.make_sound(np.ascontiguousarray(data))

    def _convert(self, block):
        return self._sound(block)

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="karuta-pygame", daemon=True)
        self._thread.start()

    def _run(self):
        pg = self._pg
        ch = pg.mixer.find_channel(True)
        q = self._feeder.q
        lead = self.buffer / self.sample_rate
        try:
            item = EMPTY
            while item is EMPTY and not self._halt.is_set():
                item = q.get(timeout=0.05)
            if item is None or item is EMPTY:
                return
            frame, snd = item
            ch.play(snd)
            started = time.perf_counter()  # when the chunk playing began (about)
            chunk_s = self.blocksize / self.sample_rate
            self.timeline.record(frame, started + lead)
            queued = None
            while not self._halt.is_set():
                if queued is None:
                    item = q.get(timeout=0.05)
                    if item is EMPTY:
                        if not ch.get_busy():
                            self.underflows += 1
                        continue
                    if item is None:
                        break
                    frame, snd = item
                    if ch.get_busy():
                        ch.queue(snd)
                        if ch.get_queue() is None and \
                                time.perf_counter() >= started + chunk_s - self.poll_s:
                            # the chunk playing ended between get_busy and queue (this thread
                            # kept off the CPU longer than a chunk: seen beside a CPU hog):
                            # pygame then starts it at once, in a later mix buffer, so a
                            # gap went before it, as a starved chunk's does.  (Not when the
                            # chunk playing is not yet due to end: then SDL took the queued
                            # one on in the same instant, seamlessly.)
                            self.underflows += 1
                            started = time.perf_counter()
                            self.timeline.record(frame, started + lead)
                        else:
                            queued = frame
                    else:  # starved: the chunk starts late
                        self.underflows += 1
                        ch.play(snd)
                        started = time.perf_counter()
                        self.timeline.record(frame, started + lead)
                elif ch.get_queue() is None:
                    started = time.perf_counter()
                    self.timeline.record(queued, started + lead)
                    queued = None
                else:
                    time.sleep(self.poll_s)
            while not self._halt.is_set() and ch.get_busy():
                if queued is not None and ch.get_queue() is None:
                    self.timeline.record(queued, time.perf_counter() + lead)
                    queued = None
                time.sleep(self.poll_s)
            if not self._halt.is_set():
                time.sleep(2 * lead)  # the last chunk is mixed, not yet heard: let SDL play it
        finally:
            if self._halt.is_set():
                ch.stop()
            self._done.set()

    @property
    def latency(self) -> float:
        return self.buffer / self.sample_rate
