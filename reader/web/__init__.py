"""The speed drill (and later the practice board) in a phone's or tablet's browser.

``karuta drill speed --web``: the laptop serves one page (``static/``: ES modules, no build
step, nothing fetched from outside) and the reading's clips over the LAN; the device plays the
reading itself (Web Audio, each clip started at its plan frame's instant) and takes the
touches, mapping each to the plan frame it was playing; the laptop judges by frames and
records, as the laptop drill does.

    protocol   the messages (schemas, bounds; ``online.check`` of this table)
    drill      ``WebDrill``: the speed drill's host, pure (messages and time in, messages out)
    board      ``WebBoard``: ``karuta practice --web``'s table (the practice session's seam)
    boardproto the board page's messages
    server     aiohttp: the page's own files, the clips, the WebSocket (code, Origin, bounds)
"""
