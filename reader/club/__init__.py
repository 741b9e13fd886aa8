"""The club reading: ``karuta read --live`` / ``--window`` / ``--resume``.

    session.py   ClubSession, the state machine (commands in, follows what is heard, saves)
    store.py     the saved session file (versioned; older versions still resume)
    timer.py     the memorisation timer and its chimes
    terminal.py  the terminal front end;  window.py  the pygame front end

Keys and key bindings (``--next-keys`` / ``--back-keys``) are in ``reader.ui.keys``; the
command-line wiring (options -> a session on an output) is ``reader.cli.club``.
"""
