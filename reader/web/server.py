"""The web host's transport: aiohttp on one asyncio loop.

What it serves, and nothing else (any other path: 404 with one line):

    /                              the page (static/index.html)
    /<name>                        the page's own files, by exact name (static/: no folders)
    /clip/<token>/<plan>/<i>.wav   speech segment i of the plan, 16-bit WAV (the token from the
                                   welcome; the plan's digest must be this drill's)
    /clicks/<token>/<n>.wav        the tap-along's clicks
    /card/<token>/<w>/<poem>.<ext> the board page's torifuda, ``w`` px wide (``reader.web.cards``;
                                   only this match's cards, only its sizes)
    /ws                            the WebSocket: its ``Origin`` must be this host's own address
                                   (a page from anywhere else is refused at the upgrade); each
                                   frame at most ``protocol.MAX_IN`` bytes (aiohttp closes the
                                   link on a longer one: code 1009), JSON, one of the
                                   protocol's messages (else one ``error`` and the link closed);
                                   at most ``MAX_RATE`` frames a second

Every response says ``Cache-Control: no-store``, ``X-Content-Type-Options: nosniff`` and a
Content-Security-Policy that lets the page load only its own files and talk only to this host.
"""
from __future__ import annotations

import asyncio
import io
import re
from collections.abc import Callable
from importlib import resources

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.base.errors import KarutaError
from reader.practice import online
from reader.web import protocol

__all__ = ["serve", "lan_address", "page_files", "DEFAULT_PORT", "MAX_RATE"]

DEFAULT_PORT = 47_101
#: frames a second a page may send (a flood is closed with one line)
MAX_RATE = 100
#: how long the host stays up after the drill is over, for the page to get its end screen (s)
LINGER_S = 1.0
#: how often a board's own turn comes (``tick``: a page that stopped reporting) (s)
TICK_S = 0.25

_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "media-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'")


#: the first line of a page's body (``static/board.html``, ``index.html``): its title, style
#: sheet and script; the rest is put in ``static/_shell.html`` (the head, the refusal and
#: status lines, the end screen: one for both pages)
_PAGE = re.compile(r"<!-- karuta page: ([^·<>]+) · ([\w.-]+) · ([\w.-]+) [^\n]*-->\n")


def page_files() -> dict[str, tuple[bytes, str]]:
    """The page's own files: name → (bytes, content type), read once from the package; a
    page's body put in the shell (``_PAGE``; the shell itself is not served)."""
    out = {}
    static = resources.files("reader.web").joinpath("static")
    shell = static.joinpath("_shell.html").read_text("utf-8")
    for f in static.iterdir():
        name = f.name
        suffix = name[name.rfind("."):] if "." in name else ""
        if f.is_file() and suffix in _TYPES and f.name != "_shell.html":
            data = f.read_bytes()
            m = _PAGE.match(data.decode("utf-8")) if suffix == ".html" else None
            if m:
                title, style, script = (x.strip() for x in m.groups())
                body = data.decode("utf-8")[m.end():].rstrip("\n")
                data = shell.format(title=title, style=style, script=script,
                                    body=body).encode("utf-8")
            out[name] = (data, _TYPES[suffix])
    return out


def lan_address() -> str:
    """This machine's address on the LAN, as a phone would reach it (the first IPv4 address
    its name resolves to that is not a loopback one; 127.0.0.1 if none)."""
    import socket

    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
    except OSError:
        infos = []
    for info in infos:
        a = info[4][0]
        if not a.startswith("127."):
            return a
    return "127.0.0.1"


def wav_bytes(samples, rate: int) -> bytes:
    """``samples`` (float32) as a 16-bit mono WAV (``quantize16``: the samples a file of the
    reading has)."""
    import soundfile

    from audio.render import quantize16

    buf = io.BytesIO()
    soundfile.write(buf, quantize16(samples), rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def qr_text(url: str) -> str:
    """``url`` as a QR code for the terminal (segno, half blocks)."""
    import segno

    out = io.StringIO()
    segno.make(url, error="m").terminal(out=out, compact=True, border=2)
    return out.getvalue()


class _Link:
    def __init__(self, number: int):
        self.number = number
        self.window_at = 0.0
        self.count = 0


async def _serve(drill, host: str, port: int, *, clock: Clock, echo: Callable[[str], None],
                 on_url: Callable[[str], None], show_host: str | None) -> None:
    from aiohttp import WSCloseCode, WSMsgType, web

    files = page_files()
    proto = getattr(drill, "protocol", protocol)  # (the board page's messages: its own table)
    done = asyncio.Event()
    links = [0]
    sockets: set = set()  # the open WebSockets (closed when the drill is over)
    by_link: dict = {}  # link number -> its WebSocket (a board's messages for other pages)
    clips: dict = {}
    loop = asyncio.get_running_loop()

    @web.middleware
    async def headers(request, handler):
        try:
            resp = await handler(request)
        except web.HTTPException as e:
            resp = e
        resp.headers["Cache-Control"] = "no-store"
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["Content-Security-Policy"] = _CSP
        return resp

    def refuse(status: int, line: str):
        return web.Response(status=status, text=f"karuta: {line}\n")

    async def page(request):
        name = request.match_info.get("name") or getattr(drill, "page", "index.html")
        if name not in files:
            return refuse(404, "not one of the page's files")
        body, ctype = files[name]
        return web.Response(body=body, headers={"Content-Type": ctype})

    async def wav(samples_or_why, rate, headers=None):
        if isinstance(samples_or_why, str):
            return refuse(404, samples_or_why)
        body = await loop.run_in_executor(None, wav_bytes, samples_or_why, rate)
        return web.Response(body=body, headers={"Content-Type": "audio/wav", **(headers or {})})

    async def clip(request):
        m = request.match_info
        if not re.fullmatch(r"\d{1,6}", m["index"]):
            return refuse(404, "no such clip")
        key = (m["token"], m["digest"], int(m["index"]))
        if key not in clips:
            got = await loop.run_in_executor(None, drill.clip, *key)
            if isinstance(got, str):
                return refuse(404, got)
            if len(clips) > 8:  # (the page fetches three ahead: the older are done with)
                clips.clear()
            clips[key] = await loop.run_in_executor(None, wav_bytes, got, drill.rate)
        return web.Response(body=clips[key], headers={
            "Content-Type": "audio/wav", "X-Karuta-Plan": drill.digest})

    async def clicks(request):
        got = await loop.run_in_executor(None, drill.click_track, request.match_info["token"])
        return await wav(got, drill.rate)

    async def card(request):
        m = request.match_info
        got = await loop.run_in_executor(None, drill.card, m["token"], int(m["w"]),
                                         int(m["poem"]), m["ext"])
        if isinstance(got, str):
            return refuse(404, got)
        body, ctype = got
        return web.Response(body=body, headers={"Content-Type": ctype})

    async def others():
        """A board's messages for its other pages (another seat's, the watchers'); the
        links it left (a seat's page that joined again on a new one) closed."""
        pending = getattr(drill, "pending", None)
        if pending is None:
            return
        closing = getattr(drill, "closing", [])
        while closing:
            number, last = closing.pop()
            ws = by_link.get(number)
            if ws is not None and not ws.closed:
                try:
                    await ws.send_str(proto.encode(last))
                except ConnectionError:
                    pass
                await ws.close()
        for number, msgs in pending().items():
            ws = by_link.get(number)
            if ws is None or ws.closed:
                continue
            try:
                for msg in msgs:
                    await ws.send_str(proto.encode(msg))
            except ConnectionError:  # (that link is going: its own handler ends it)
                pass

    async def ticker():
        """A board's own turn (a page that stopped reporting is said to the others)."""
        while True:
            await asyncio.sleep(TICK_S)
            drill.tick(clock.seconds())
            await others()

    async def socket(request):
        origin = request.headers.get("Origin")
        own = f"http://{request.host}"
        if origin != own:
            echo(f"refused a connection from {request.remote}: its page came from "
                 f"{(origin or 'nowhere')[:80]}, not {own}")
            return refuse(403, "this page did not come from this host (Origin)")
        ws = web.WebSocketResponse(max_msg_size=protocol.MAX_IN, heartbeat=10.0)
        await ws.prepare(request)
        sockets.add(ws)
        links[0] += 1
        link = _Link(links[0])
        addr = str(request.remote or "?")

        async def send(msgs):
            for msg in msgs:
                await ws.send_str(proto.encode(msg))

        by_link[link.number] = ws

        try:
            async for m in ws:
                now = clock.seconds()
                if now - link.window_at >= 1.0:
                    link.window_at, link.count = now, 0
                link.count += 1
                if link.count > MAX_RATE:
                    await send([{"t": "error", "text": f"more than {MAX_RATE} messages a "
                                                       "second: the link is closed"}])
                    echo(f"closed the link of {addr}: a flood of messages")
                    break
                if m.type != WSMsgType.TEXT:
                    if m.type == WSMsgType.ERROR:
                        echo(f"closed the link of {addr}: {ws.exception()}"[:200])
                        break
                    await send([{"t": "error", "text": "only text messages are taken"}])
                    break
                try:
                    msg = proto.decode(m.data)
                except online.ProtocolError as e:
                    await send([{"t": "error", "text": f"refused: {e}"}])
                    echo(f"refused a message from {addr}: {e}")
                    break
                out = drill.receive(msg, now, link.number, addr)
                await send(out)
                await others()
                if drill.over:
                    done.set()
                if drill.hangup:
                    break
        finally:
            sockets.discard(ws)
            by_link.pop(link.number, None)
            drill.drop(link.number)
            if ws.close_code is None and not ws.closed:
                code = WSCloseCode.MESSAGE_TOO_BIG if ws.exception() is not None and \
                    "too big" in str(ws.exception()).lower() else WSCloseCode.OK
                await ws.close(code=code)
        return ws

    app = web.Application(middlewares=[headers], client_max_size=protocol.MAX_IN)
    app.router.add_get("/ws", socket)
    app.router.add_get(r"/clip/{token:[0-9a-f]{32}}/{digest:[0-9a-f]{16}}/{index}.wav", clip)
    app.router.add_get(r"/clicks/{token:[0-9a-f]{32}}/{n:\d{1,4}}.wav", clicks)
    if hasattr(drill, "card"):  # (the board page's torifuda)
        app.router.add_get(r"/card/{token:[0-9a-f]{32}}/{w:\d{2,3}}/{poem:\d{1,3}}.{ext:png|webp}",
                           card)
    app.router.add_get("/", page)
    app.router.add_get(r"/{name:[A-Za-z0-9_.-]{1,64}}", page)

    async def fallback(request):
        return refuse(404, "not one of the page's files")

    app.router.add_route("*", "/{tail:.*}", fallback)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    try:
        await site.start()
    except OSError as e:
        await runner.cleanup()
        raise KarutaError(f"cannot serve on {host}:{port}: {e.strerror or e}") from None
    bound = runner.addresses[0][1] if runner.addresses else port
    shown = show_host or (lan_address() if host in ("0.0.0.0", "") else host)
    on_url(f"http://{shown}:{bound}/#{drill.code}")
    ticking = asyncio.create_task(ticker()) if hasattr(drill, "tick") else None
    try:
        await done.wait()
        await asyncio.sleep(LINGER_S)
    finally:
        if ticking is not None:
            ticking.cancel()
        for ws in list(sockets):
            await ws.close()
        await runner.cleanup()


def serve(drill, host: str = "0.0.0.0", port: int = DEFAULT_PORT, *,
          clock: Clock = SYSTEM_CLOCK, echo: Callable[[str], None] = print,
          on_url: Callable[[str], None] | None = None, show_host: str | None = None) -> None:
    """Serve ``drill`` (a ``WebDrill``) on ``host:port`` until it is over (or Ctrl-C:
    ``KeyboardInterrupt``).  ``on_url(url)``: the page's address with its code, once the
    port is open (port 0: any free one)."""
    asyncio.run(_serve(drill, host, port, clock=clock, echo=echo,
                       on_url=on_url or echo, show_host=show_host))


def run_web_drill(make_plan, voice_spec: str | None, *, seed: int, karafuda: int,
                  take_s: float, choices: int, log_path: str | None, plan_out: str | None,
                  address: str | None, port: int | None, clock: Clock = SYSTEM_CLOCK,
                  echo: Callable[[str], None] = print,
                  warn: Callable[[str], None] = print) -> None:
    """``karuta drill speed --web``: the plan (``make_plan(voice)``), the page served until
    the drill is over or Ctrl-C, every touch recorded as the laptop drill records a tap, the
    summary printed."""
    from pathlib import Path

    from reader.base import seeds
    from reader.drills.calibrate import CalibrationStore
    from reader.drills.stats import StatsDB
    from reader.reading.voices import make_voice
    from reader.web.drill import WebDrill

    voice = make_voice(voice_spec)
    plan = make_plan(voice)
    if plan_out:
        from reader.base.statefiles import write_output_text

        write_output_text(Path(plan_out), plan.to_json(indent=1))
    store = CalibrationStore(clock=clock)
    store.load()  # (an unreadable calibration file: one line now, not when a device joins)
    try:
        log = open(log_path, "w", encoding="utf-8") if log_path else None
    except OSError as e:
        raise KarutaError(f"cannot write {log_path}: {e.strerror or e}") from None
    drill = None
    stopped = False
    try:
        with StatsDB() as db:
            if db.notice:
                warn(db.notice)
            settings = {"seed": seed, "poems": list(plan.universe), "karafuda": karafuda,
                        "window": False}
            drill = WebDrill(plan, voice, online.new_code(), store=store, db=db, log=log,
                             settings=settings, take_s=take_s, choices=choices,
                             rng=seeds.rng(seed), clock=clock, echo=echo)
            echo(f"speed drill on the web · {len(plan.order)} cards · seed {seed} · "
                 f"{voice.name} voice")

            def show(url):
                echo(qr_text(url))
                echo(f"open on the phone or tablet (same Wi-Fi): {url}")
                echo("Ctrl-C stops")

            try:
                serve(drill, address or "0.0.0.0", DEFAULT_PORT if port is None else port,
                      clock=clock, echo=echo, on_url=show, show_host=address)
            except KeyboardInterrupt:
                stopped = True
                echo("stopped")
    finally:
        if log is not None:
            log.close()
    if drill is not None:
        for line in drill.end_lines():
            echo(line)
    if log_path:
        echo(f"log: {log_path}")
    if stopped:
        raise KeyboardInterrupt
