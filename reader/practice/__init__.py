"""``karuta practice``: a practice match on a board — the app reads, players grab, the rules judge.

Modules (issues 10 and 23), the club's shape — a pure session, front ends around it:

  ``games``     ``KYOGI`` / ``GOSHIKI``: one object per game (deal, plan preset, judging,
                events, sends, what the board counts); nothing else compares the rules' name.
  ``deal``      who gets which cards (kyogi 25 each or ``--cards N``, the rest karafuda;
                goshiki 10 each of one colour), from a seed.
  ``match``     ``PracticeMatch``: timed touches on a reading plan -> the existing rules state
                machines (``reader.match.rules.kyogi`` / ``goshiki``) -> the match log.
  ``session``   ``PracticeSession``: the live rules (phases, memorisation, bots' touches on
                their frames, when a read closes, sends, hints, the status line), pure: the
                clock and the frame heard are passed in.
  ``bot``       a model of a player, levels 1-5 (reaction, faults, sends).
  ``headless``  ``--bot-vs-bot``: the session on the plan's own frames (no window, no sound).
  ``window``    the board window: draws (``paint``: scene and painter) and takes input,
                ticks the session with the real clock and the DAC-mapped frame.
  ``board``     card placement, viewports, drag targets (pure geometry).
  ``report``    the end table (the window's end screen and the command's printout).
  ``record``    a match's human takes and faults into the stats database.

Frames are sample frames of the reading plan (``audio.plan.Plan``, 48 kHz): the same numbers
the grab timer uses, so a touch's reaction is measured exactly as in the speed drill.
"""
