"""Playback backends: play a ``PlanCursor`` on a sound device, in real time.

One small interface (``Output``, ``base.py``: the shared play / wait / stop / close), six
backends (a module each; the two PortAudio transports share one):

  - ``SounddeviceOutput`` (``portaudio.py``): PortAudio through sounddevice.  The realtime
    callback only copies pre-filled blocks off a lock-free ring (``feeder.py``; it never waits
    on a device with a clock: a late block is silence and an ``underflow``); a feeder thread
    fills the ring from the cursor (~150 ms ahead).  It records, per buffer, the
    stream frame and PortAudio's ``outputBufferDacTime`` (when that buffer reaches the
    speaker), so a key press time maps to the frame being heard (``frame_at``).
    ``AudioProcessOutput`` (``portaudio.py`` too): the same stream in an audio process of its
    own (``process.py``, ``audio_process.py``), fed through shared memory, seconds ahead.
    ``TimelineOutput`` (``timed.py``): that audio process playing a ``TimelineSource`` (a plan
    whose frames are heard at the instants a timeline's anchors give them: the online
    reading), each buffer made in the callback from its DAC time.
  - ``PygameOutput`` (``sdl.py``): pygame.mixer, queued ``Sound`` chunks on one ``Channel`` (SDL_mixer
    starts a queued chunk inside the same mix buffer: joins are sample-exact).  No DAC
    times: ``frame_at`` is estimated (see the class doc for its accuracy).
  - ``NullOutput`` (``null.py``): consumes the cursor in real time and discards it
    (``--dry-run``); ``SyncOutput``: consumes it as fast as it comes, no real time, and keeps
    what it played (tests).  Device lookup: ``devices.py``; the DAC timeline: ``timeline.py``.

How the session drives playback::

    out = SounddeviceOutput(device=None)        # DeviceError if there is no device
    cursor = PlanCursor(plan, voice, live=True)
    out.play(cursor)                             # returns at once; audio runs on its own
    ...  key thread: cursor.release() / hold() / resume() / repeat_last_shimo()
    ...  at a tap stamped t = time.perf_counter():
             frame = out.frame_at_perf(t)        # stream frame heard at t
             plan_frame = cursor.plan_frame_at(round(frame))
    out.wait()                                   # until the reading ends (re-raises errors)
    out.stop()                                   # quit early (idempotent)

Units: frames at ``sample_rate`` (mono frames; stereo duplicates them), times in seconds on
the named clock (``now()``: the backend's own clock; ``frame_at_perf``: ``time.perf_counter``).
"""
from __future__ import annotations

from audio.output.base import NO_DEVICE, Output, underrun_line
from audio.output.devices import list_devices, lookup_device, reinit_portaudio, resolve_device
from audio.output.feeder import BlockRing, Feeder
from audio.output.null import NullOutput, SyncOutput
from audio.output.portaudio import AudioProcessOutput, SounddeviceOutput
from audio.output.sdl import PygameOutput
from audio.output.timed import TimelineOutput, TimelineSource
from audio.output.timeline import Timeline

# today's private names, kept for the modules and tests that import them
_Timeline = Timeline
_Feeder = Feeder

__all__ = [
    "Output", "SounddeviceOutput", "AudioProcessOutput", "PygameOutput", "NullOutput", "SyncOutput", "list_devices",
    "lookup_device", "resolve_device", "reinit_portaudio", "NO_DEVICE", "underrun_line",
    "BlockRing", "Feeder", "Timeline", "TimelineOutput", "TimelineSource",
]
