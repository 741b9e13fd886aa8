"""The thin transport of online play: JSON lines over TCP with asyncio streams.

All the logic is in ``reader.practice.online`` (pure: messages and time in, messages out);
this module only moves lines between sockets and those objects, ticks them every ``TICK_S``
on one clock (the system clock, ``reader.base.clock``, unless given), and reconnects a guest whose link broke.
A line that is too long, not JSON or not a message of the protocol is answered with one
``error`` line and the link is closed.
"""
from __future__ import annotations

import asyncio
from reader.base.clock import SYSTEM_CLOCK, Clock
from collections.abc import Callable

from reader.base.errors import KarutaError
from reader.practice import online

__all__ = ["NetError", "parse_address", "run", "run_host", "run_guest", "TICK_S"]

#: how often both sides tick (s)
TICK_S = 0.004
#: how long a guest keeps trying to reach its host again after the link broke (s)
RECONNECT_S = 120.0


class NetError(KarutaError):
    """The network said no (a host that cannot be reached, a port in use): one line."""


def parse_address(text: str, default_port: int = online.DEFAULT_PORT) -> tuple[str, int]:
    """``HOST``, ``HOST:PORT``, ``[v6]:PORT`` → (host, port); ``KarutaError`` if it is not."""
    t = text.strip()
    host, port = t, str(default_port)
    if t.startswith("["):
        host, _, rest = t[1:].partition("]")
        if rest:
            if not rest.startswith(":"):
                raise KarutaError(f"--join {text!r}: write HOST, HOST:PORT or [IPv6]:PORT")
            port = rest[1:]
    elif t.count(":") == 1:
        host, port = t.split(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise KarutaError(f"--join {text!r}: write HOST, HOST:PORT or [IPv6]:PORT "
                          "(a port is 1-65535)")
    return host, int(port)


async def _send(writer, msgs) -> None:
    if writer is None or not msgs:
        return
    try:
        for msg in msgs:
            writer.write(online.encode(msg))
        await writer.drain()
    except (ConnectionError, OSError):
        pass  # the reader side notices the broken link


async def _lines(reader, limit: int):
    """Each received line as a checked message; a bad one raises ``ProtocolError``."""
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError:
            return
        except asyncio.LimitOverrunError:
            raise online.ProtocolError(f"a message longer than {limit} bytes") from None
        yield online.decode(line)


def run(coro) -> None:
    """Run ``coro`` to its end; SIGINT or SIGTERM ends it cleanly (``KeyboardInterrupt``
    afterwards, as for any interrupted command).  The handlers are set inside the loop: a sound
    library opened before may have taken SIGINT's C handler, and Python would never hear it."""
    import signal

    async def main():
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        got = []

        def stop(sig):
            got.append(sig)
            task.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop, sig)
        try:
            await coro
        except asyncio.CancelledError:
            if got:
                raise KeyboardInterrupt from None
            raise

    asyncio.run(main())


def _close(writer) -> None:
    try:
        writer.close()
    except (ConnectionError, OSError, RuntimeError):
        pass


async def run_host(host: online.Host, port: int, *, bind: str = "0.0.0.0",
                   clock: Clock = SYSTEM_CLOCK,
                   on_listen: Callable[[int], None] | None = None,
                   on_tick: Callable[[float], None] | None = None,
                   warn: Callable[[str], None] = print) -> None:
    """Serve ``host`` on ``port`` until its match is over (and its guests told): each link's
    messages (``Host.tick_links``) to its writer."""
    writers: dict = {}  # link number -> its writer (a silent link is closed by the host)

    async def handle(reader, writer):
        peer = writer.get_extra_info("peername")
        me = host.connect(clock.seconds(), peer[0] if peer else "?")
        writers[me] = writer
        try:
            async for msg in _lines(reader, online.MAX_LINE):
                out = host.receive(msg, clock.seconds(), me)
                await _send(writer, out)  # (a seat's old link, if any: in ``host.closing``)
                if host.hangup:
                    break
        except online.ProtocolError as e:
            warn(f"a peer sent {e} (link closed)")
            await _send(writer, [{"t": "error", "text": str(e)[:300]}])
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass  # (cancelled: the host is shutting down)
        finally:
            writers.pop(me, None)
            was_guest = any(p.joined and p.link == me for p in host.peers)
            host.drop(clock.seconds(), me)
            if was_guest and not host.session.over and not closing:
                warn("the guest's link broke: waiting for it to join again (same code)")
            _close(writer)

    closing = False
    try:
        server = await asyncio.start_server(handle, bind, port, limit=online.MAX_LINE + 2)
    except OSError as e:
        raise NetError(f"cannot listen on port {port} ({e.strerror or e})") from None
    if on_listen is not None:
        on_listen(server.sockets[0].getsockname()[1])
    try:
        over_at = None
        while True:
            now = clock.seconds()
            for to, out in host.tick_links(now).items():
                await _send(writers.get(to), out)
            for lost in host.closing:  # silent past online.SILENT_S, or a seat's old link
                w = writers.get(lost)
                if w is not None:
                    w.transport.abort()
            host.closing.clear()
            if on_tick is not None:
                on_tick(now)
            if host.session.over and over_at is None:
                over_at = now
            if over_at is not None and (now - over_at > 1.0
                                        or not any(p.joined for p in host.peers)):
                return
            await asyncio.sleep(TICK_S)
    finally:
        closing = True
        server.close()
        for w in list(writers.values()):
            _close(w)


async def run_guest(guest: online.Guest, address: tuple[str, int], *,
                    players: list[Callable[[float], list]] = (),
                    clock: Clock = SYSTEM_CLOCK,
                    warn: Callable[[str], None] = print,
                    on_tick: Callable[[float], None] | None = None,
                    reconnect_s: float = RECONNECT_S) -> None:
    """Join the host at ``address`` and play until the match is over; a broken link is
    joined again (the same code) for up to ``reconnect_s``."""
    host_name, port = address
    first = True
    lost_at = None
    while not guest.over:
        try:
            reader, writer = await asyncio.open_connection(host_name, port,
                                                           limit=online.MAX_WELCOME + 2048)
        except OSError as e:
            if first:
                raise NetError(f"cannot reach {host_name}:{port} ({e.strerror or e})") from None
            if clock.seconds() - lost_at > reconnect_s:
                raise NetError(f"the link to {host_name}:{port} broke and did not come back "
                               f"within {reconnect_s:.0f} s") from None
            await asyncio.sleep(0.25)
            continue
        first = False
        await _send(writer, guest.hello(clock.seconds()))
        broken = await _guest_link(guest, reader, writer, players, clock, on_tick)
        _close(writer)
        if guest.error is not None:
            raise KarutaError(f"the host says: {guest.error}")
        if guest.over:
            return
        if broken:
            warn(f"the link to the host was silent for {online.SILENT_S:.0f} s: joining again"
                 if guest.lost else "the link to the host broke: joining again")
        lost_at = clock.seconds()
        await asyncio.sleep(0.25)


async def _guest_link(guest, reader, writer, players, clock, on_tick) -> bool:
    """One link's life; True if it broke (rather than the match ending)."""
    stop = asyncio.Event()

    async def ticker():
        while not stop.is_set():
            now = clock.seconds()
            out = guest.tick(now)
            if guest.lost:  # silent past online.SILENT_S: closed, joined again
                writer.transport.abort()
                return
            for p in players:
                out += p(now)
            await _send(writer, out)
            if on_tick is not None:
                on_tick(now)
            await asyncio.sleep(TICK_S)

    task = asyncio.create_task(ticker())
    # a player that fails (a sound device that would not open) ends the link; its error is
    # raised below (``await task``)
    task.add_done_callback(lambda t: writer.transport.abort()
                           if not t.cancelled() and t.exception() is not None else None)
    try:
        async for msg in _lines(reader, online.MAX_WELCOME):
            await _send(writer, guest.receive(msg, clock.seconds()))
            if guest.hangup or guest.over:
                return False
        return True
    except online.ProtocolError as e:
        await _send(writer, [{"t": "error", "text": str(e)[:300]}])
        guest.error = f"it sent {e}"
        return False
    except (ConnectionError, OSError):
        return True
    finally:
        stop.set()
        await task
