"""What the drill's host and the board's host do alike with a page's link: every message
checked against the host's protocol, the hello answered, anything else from a link that has
not been welcomed refused in one line (and the link closed).

A host (``reader.web.drill.WebDrill``, ``reader.web.board.WebBoard``) gives ``protocol``
(its message table), ``_hello(msg, now, link, addr)`` and ``handle(msg, now, link, addr)``;
the transport (``reader.web.server``) calls ``receive`` and ``drop``.
"""
from __future__ import annotations

__all__ = ["PageHost"]


class PageHost:
    """The door of a host a page talks to.  ``link``: the welcomed link's number (None: none);
    ``hangup``: the transport closes the link after this reply."""

    protocol = None  # (the host's message table: ``reader.web.protocol`` or ``boardproto``)
    link: int | None = None
    hangup = False

    def knows(self, link: int) -> bool:
        """``link`` was welcomed (its hello had the code)."""
        return link == self.link

    def drop(self, link: int) -> None:
        """``link`` closed (a phone that slept, the Wi-Fi): it must say hello again."""
        if link == self.link:
            self.link = None

    def receive(self, msg: dict, now: float, link: int, addr: str) -> list[dict]:
        """One message from the page on ``link`` (from ``addr``) at ``now``: the replies."""
        msg = self.protocol.check(msg)
        self.hangup = False
        if msg["t"] == "hello":
            return self._hello(msg, now, link, addr)
        if not self.knows(link):
            self.hangup = True
            return [{"t": "error", "text": "say hello with the code first"}]
        return self.handle(msg, now, link, addr)

    def _hello(self, msg: dict, now: float, link: int, addr: str) -> list[dict]:
        raise NotImplementedError

    def handle(self, msg: dict, now: float, link: int, addr: str) -> list[dict]:
        raise NotImplementedError


#: the tap-along's clicks, this far apart (ms: ``karuta calibrate``'s)
CLICK_INTERVAL_MS = 600.0


class TapAlong:
    """A device's tap-along on its page, by ``karuta calibrate``'s rules: the clicks asked
    for (``ask``), their sound (``track``), the taps against them (``taps``: analysed, kept in
    the calibration ``store`` under ``web:<device id>``, the key both pages read).  One for
    the drill's page and the board's.  ``token``: the host's (the clicks' address carries it);
    ``echo(line)``: the laptop's terminal."""

    def __init__(self, store, rate: int, token: str, echo):
        self.store, self.rate, self.token, self.echo = store, rate, token, echo
        self.clicks: tuple | None = None  # (plan, voice, click frames) being played
        self._runs = 0

    @staticmethod
    def key(device: str) -> str:
        return f"web:{device}"

    def stored(self, device: str) -> dict | None:
        """The device's kept calibration (None: never calibrated; an unreadable store: said)."""
        from reader.drills.calibrate import CalibrationError

        if self.store is None:
            return None
        try:
            return self.store.get(self.key(device))
        except CalibrationError as e:
            self.echo(f"karuta: {e}")
            return None

    def ask(self, count: int) -> dict:
        """A new tap-along of ``count`` clicks: the page's ``clicks`` message."""
        from reader.drills.calibrate import click_track

        self.clicks = click_track(self.rate, count, CLICK_INTERVAL_MS)
        self._runs += 1  # (a new address for each tap-along: no cached one is played)
        return {"t": "clicks", "url": f"/clicks/{self.token}/{self._runs}.wav",
                "clicks": [int(c) for c in self.clicks[2]], "rate": self.rate}

    def taps(self, device: str, taps, moved_ms: float | None = None) -> dict | None:
        """The tap-along's taps (ms on its track) against its clicks (``calibrate.analyze``);
        ``moved_ms``: where the page's output clock moved (a gap in its sound): the taps from
        the next click on are not used, as ``karuta calibrate`` does.  The page's
        ``calibrated`` message; None if no tap-along is being played."""
        from reader.drills.calibrate import CalibrationError, analyze

        if self.clicks is None:
            return None
        plan, _, clicks = self.clicks
        self.clicks = None
        clicks_ms = [c * 1000.0 / plan.sample_rate for c in clicks]
        moved = None if moved_ms is None else \
            next((i + 1 for i, c in enumerate(clicks_ms) if c >= moved_ms), None)
        try:
            if self.store is None:
                raise CalibrationError("no calibration store: nothing kept")
            res = analyze(taps, clicks_ms, moved_at=moved)
            self.store.save(self.key(device), res, input="web touch")
        except CalibrationError as e:
            self.echo(f"calibration on the device: {e}")
            return {"t": "calibrated", "line": f"not saved: {e}"[:400], "offset_ms": None}
        line = f"calibrated: {res.describe()}"
        self.echo(f"the device {line}")
        return {"t": "calibrated", "line": line[:400], "offset_ms": res.offset_ms}

    def track(self, token: str):
        """The tap-along's sound (float32), or a line saying why not."""
        from audio.render import render

        from reader.practice import online

        if not online.same_secret(token, self.token):
            return "not this host's clip"
        if self.clicks is None:
            return "no tap-along asked for"
        plan, voice, _ = self.clicks
        return render(plan, voice)
