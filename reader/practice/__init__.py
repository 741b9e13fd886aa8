"""``karuta practice``: a practice match on a board — the app reads, players grab, the rules judge.

Modules (issue 10):

  ``deal``      who gets which cards (kyogi 25 each or ``--cards N``, the rest karafuda;
                goshiki 10 each of one colour), from a seed.
  ``match``     ``PracticeMatch``: timed touches on a reading plan -> the existing rules state
                machines (``reader.match.rules.kyogi`` / ``goshiki``) -> the match log.
  ``bot``       a model of a player, levels 1-5 (reaction, faults, sends).
  ``headless``  a whole match on a virtual clock: no window, no sound.
  ``board`` / ``window``  the board window (drawing, placement, drag, the live loop).

Frames are sample frames of the reading plan (``audio.plan.Plan``, 48 kHz): the same numbers
the grab timer uses, so a touch's reaction is measured exactly as in the speed drill.
"""
