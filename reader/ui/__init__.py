"""Drawing shared by the windows (issue 8 moves ``reader/window.py`` and ``terminal.py`` here).

  ``torifuda``  the grabbed cards drawn by the app (下の句 in hiragana, vertical, green border).
"""
