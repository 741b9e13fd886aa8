"""The club reading: ``karuta read --live`` / ``--window`` / ``--resume``.

    session.py   ClubSession, the state machine (commands in, follows what is heard, saves)
    store.py     the saved session file (versioned; older versions still resume)
    timer.py     the memorisation timer and its chimes
    terminal.py  the terminal front end;  window.py  the pygame front end

    run.py       open_club: settings or a saved session -> a session on an output, a front
                 end, lines out (``karuta read --live``, ``karuta tournament read``)

Keys and key bindings (``--next-keys`` / ``--back-keys``) are in ``reader.ui.keys``.
"""
