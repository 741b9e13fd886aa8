"""A TCP relay that plays a network link between two ``karuta practice`` processes on one
machine: host:port <- relay <- guest, each chunk held ``delay ± jitter``, some lost and resent,
the link cut or stalled on demand (``tc netem`` is not available in this kernel).  The online
command tests (tests/test_online_cli.py, test_online_window.py) and scripts/bench_online.py."""
from __future__ import annotations

import asyncio
import random
import threading
import time

#: a lost TCP segment arrives once the sender's retransmission timer fires (Linux's least
#: RTO is 200 ms); what was sent after it waits behind it (in order)
RTO_S = 0.2


class Relay:
    """host:port <- relay <- guest; each chunk held ``delay ± jitter`` s, in order; a share
    ``loss`` of the chunks is lost once and resent (``RTO_S`` later), as TCP would."""

    def __init__(self, target_port: int, delay: float, jitter: float, seed: int = 1,
                 loss: float = 0.0):
        self.target = target_port
        self.delay, self.jitter, self.loss = delay, jitter, loss
        self.rng = random.Random(seed)
        self.refuse_until = 0.0
        self.writers: list = []
        self._cut_on = None  # (bytes a guest -> host chunk must hold, seconds): ``cut_on``
        self.held_until = 0.0  # ``hold``: nothing is delivered before then
        self.port = None
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        self.ready.wait(10)

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._serve())

    async def _serve(self):
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        await asyncio.Event().wait()

    async def _pipe(self, reader, writer, up: bool = False):
        q: asyncio.Queue = asyncio.Queue()
        last = [0.0]

        async def deliver():
            while True:
                at, data = await q.get()
                if data is None:
                    break
                while (wait := max(at, self.held_until) - time.monotonic()) > 0:
                    await asyncio.sleep(wait)  # (again: a hold may have begun meanwhile)
                writer.write(data)
                await writer.drain()

        task = asyncio.create_task(deliver())
        try:
            while data := await reader.read(65536):
                if up and self._cut_on is not None and all(p in data for p in self._cut_on[0]):
                    seconds, self._cut_on = self._cut_on[1], None
                    self._cut_now(seconds)  # (that chunk with it: lost in flight)
                    break
                at = max(last[0], time.monotonic() + self.delay
                         + self.rng.uniform(-self.jitter, self.jitter)
                         + (RTO_S if self.rng.random() < self.loss else 0.0))
                last[0] = at
                q.put_nowait((at, data))
        except (ConnectionError, OSError):
            pass
        q.put_nowait((0, None))
        try:
            await task
        except (ConnectionError, OSError):
            pass
        writer.close()

    async def _client(self, reader, writer):
        if time.monotonic() < self.refuse_until:
            writer.close()
            return
        try:
            r2, w2 = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return
        self.writers += [writer, w2]
        await asyncio.gather(self._pipe(reader, w2, up=True), self._pipe(r2, writer),
                             return_exceptions=True)

    def cut(self, seconds: float):
        self.loop.call_soon_threadsafe(self._cut_now, seconds)

    def hold(self, seconds: float) -> None:
        """A stall: nothing moves either way for ``seconds``, the connections open (what
        was sent meanwhile is delivered after, in order; new links stall too)."""
        self.held_until = time.monotonic() + seconds

    def cut_on(self, parts: list[bytes], seconds: float) -> None:
        """Cut (as ``cut``) when a guest -> host chunk holds every one of ``parts`` (a touch
        line: ``[b'"t":"touch"', b'"card":80,']``), that chunk lost with the link."""
        self._cut_on = (parts, seconds)

    def _cut_now(self, seconds: float):
        self.refuse_until = time.monotonic() + seconds
        for w in self.writers:
            w.transport.abort()
        self.writers = []
