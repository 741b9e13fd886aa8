"""Input and its timing, below the drills and practice that use it.

``taps`` (every input source stamps each event as it is taken in; a stamp maps onto the
reading's timeline; the settle gate), and the stamping processes it starts, real programs:
``tty_stamper.py`` (the terminal) and ``x_stamper.py`` (X11 key, button and touch presses).
"""
