"""The practice table (``reader.practice.table``): the one seam between a match and a front
end.  Whole matches are played through it with no window -- a human at each machine of an
online match (``HostTable``, ``GuestTable``) over a simulated link, touching at the instants
their table hears the frames -- and what they log is what one machine logs.  The view each
table shows is plain data (JSON)."""
from __future__ import annotations

import json
import threading

from reader.practice import headless, online
from reader.practice import view as V
from reader.practice.match import Seat
from reader.practice.netwindow import GuestTable, HostTable

from test_online import QUICK, VOICE, pair

#: the one-machine match the two humans play as: A touches as bot 3 would, B as bot 2
AS_BOTS = {"A": Seat("bot", 3), "B": Seat("bot", 2)}


class Player:
    """A human at a table who touches what ``AS_BOTS``'s bot in their seat would, at the
    instant their table hears that frame (``hears_at(frame)``: on their own clock), and sends
    the highlighted card when they owe one -- all through the table's input."""

    def __init__(self, player: str, table_of, hears_at, as_bots=AS_BOTS):
        self.player = player
        self.as_bots = as_bots
        self.table_of = table_of
        self.hears_at = hears_at
        self.oracle = None
        self.touched: set = set()
        self.sent_for = None

    def __call__(self, now: float) -> None:
        table = self.table_of()
        if table is None:
            return
        m = table.m
        if self.oracle is None:
            self.oracle = headless.resume_text(m.log_text(), "the player's bot", VOICE,
                                               self.as_bots)
        if self.oracle.index < m.index:
            done = m.closed[self.oracle.index:m.index]
            self.oracle.replay([c.event for c in done], [c.timing for c in done])
        owed = m.owed_send()
        if owed is not None:
            if owed.sender == self.player and self.sent_for != m.index:
                self.sent_for = m.index
                table.send_default(self.player)
            return
        if self.oracle.current() is None or table.phase != "reading":
            return
        for p, card, frame in self.oracle.bot_touches():
            key = (m.index, card, frame)
            if p != self.player or key in self.touched:
                continue
            t = self.hears_at(frame)
            if t is not None and now >= t:
                self.touched.add(key)
                table.touch(p, card, t)  # (stamped when it was made, as input is)


def _two_machines(as_bots=AS_BOTS, **kw):
    """Host A and guest B, a human at each board, over 80 ± 20 ms each way, the guest's clock
    1234.5 s off; both tables ticked every step, their views kept."""
    m, host, guest, sim = pair({"A": Seat("human"), "B": Seat("human")}, **kw)
    lock = threading.Lock()
    tables = {"host": HostTable(host, lock, None)}
    views = {"host": [], "guest": []}

    def guest_table():
        if "guest" not in tables and guest.m is not None:
            tables["guest"] = GuestTable(guest, lock, None)
            tables["guest"].open(sim.gnow)
        return tables.get("guest")

    def guest_hears(frame):
        t = guest.timeline.instant_of(frame) if guest.timeline is not None else None
        return None if t is None or guest.offset is None else t - guest.offset

    a = Player("A", lambda: tables["host"], host.timeline.instant_of, as_bots)
    b = Player("B", guest_table, guest_hears, as_bots)

    steps = [0]

    def turn(h, g):
        a(h)
        steps[0] += 1
        if steps[0] % 2:  # (a board ticks its table every 8 ms: every other 4 ms step)
            return []
        views["host"].append(tables["host"].tick(h))
        gt = guest_table()
        if gt is None:
            return []
        b(g)
        views["guest"].append(gt.tick(g))
        return gt.drain(g)

    tables["host"].open(0.0)
    sim.players.append(turn)
    return m, host, guest, sim, tables, views


def test_a_two_machine_match_through_the_tables_logs_what_one_machine_logs():
    """No window: a human at each machine touches through their table at the instant it hears
    the frame (the guest's through its own clock and measured offset); the host judges.  The
    host's log, read by read, is a one-machine match's of the same seed with bots playing
    those touches; the guest's mirror logs the same; both tables end over, showing every card
    where the other shows it."""
    m, host, guest, sim, tables, views = _two_machines(reading=QUICK)
    assert sim.run_until(lambda: guest.over and tables["guest"].over)
    ref = headless.play(headless.new_match("kyogi", AS_BOTS, 7, VOICE, cards=5,
                                           reading=QUICK))
    assert m.log_records()[1:] == ref.log_records()[1:]
    touched = [t for r in ref.log_records()[1:] for t in r["timing"]["touches"]]
    assert {(t["player"], t["verdict"]) for t in touched} >= {
        ("A", "take"), ("A", "fault"), ("B", "fault")}  # (both machines touched, judged)
    assert guest.m.log_records() == m.log_records()
    host_view, guest_view = views["host"][-1][0], views["guest"][-1][0]
    assert host_view.phase == guest_view.phase == "over"
    assert host_view.board.territories == guest_view.board.territories
    assert (host_view.viewer, guest_view.viewer) == ("A", "B")
    assert [s.you for s in guest_view.seats] == [False, True]


def test_the_views_and_events_are_plain_data_and_the_guest_sees_the_hosts_judgements():
    """Every view and event either table gave is JSON as it is (a browser board takes them
    unchanged); the guest's board told each of its faults as the host judged it, under the
    read it belongs to, and the counter is the host's."""
    m, host, guest, sim, tables, views = _two_machines(reading=QUICK)
    assert sim.run_until(lambda: m.index >= 12)
    kinds = set()
    for side in ("host", "guest"):
        for view, events in views[side][::25] + views[side][-5:]:
            json.dumps(V.to_json(view))
        for _, events in views[side]:
            for ev in events:
                kinds.add((side, ev.kind))
                assert json.loads(json.dumps(V.to_json(ev)))["kind"] == ev.kind
    assert {("guest", "judged"), ("guest", "done"), ("host", "judged"), ("host", "done"),
            ("guest", "read"), ("guest", "phase")} <= kinds
    faults = [ev for _, evs in views["guest"] for ev in evs
              if isinstance(ev, V.Judged) and ev.player == "B" and ev.verdict == "fault"]
    assert faults, "the guest's player faulted in these reads"
    lines = {V.status_text(v.line, v.verdict) for v, _ in views["guest"]}
    assert any(x.startswith("read ") and x.endswith(" · you: fault") for x in lines), lines
    counters = {v.line for v, _ in views["guest"] if isinstance(v.line, V.Counter)}
    assert counters and all(c.due == len(m.order) for c in counters)


def test_a_guests_send_goes_through_its_table_and_the_host_makes_it():
    """The guest's player owes a send (seed 8: B, playing as bot 4, takes from A's side on
    read 8): the guest's board says "you owe", the host's waits for it; the highlighted card
    goes through the guest's table to the host, who makes the send as one machine would."""
    as_bots = {"A": Seat("bot", 2), "B": Seat("bot", 4)}
    m, host, guest, sim, tables, views = _two_machines(as_bots, seed=8, reading=QUICK)
    assert sim.run_until(lambda: m.index >= 9 and guest.m.index == m.index)
    ref = headless.play(headless.new_match("kyogi", as_bots, 8, VOICE, cards=5,
                                           reading=QUICK))
    assert m.log_records()[1:] == ref.log_records()[1:10]
    assert ref.closed[7].event.took == "B" and ref.closed[7].event.send
    owing = [v.line for v, _ in views["guest"] if isinstance(v.line, V.Owes)]
    assert owing and owing[0] == V.Owes("B", 1, True)
    assert V.Waiting("send") in {v.line for v, _ in views["host"]}
    sent = m.closed[7].event.send[0]
    shown = {side: tables[side].view(0.0).board.territories for side in tables}
    assert shown["host"] == shown["guest"] and sent in shown["host"]["A"]


def test_three_devices_two_players_and_a_watcher_need_no_new_host():
    """One host holds three remote seats (``Host(remote=("A", "B"), watchers=1)``): a guest
    plays A, another B, a third watches -- each over its own 80 ± 20 ms link with its own
    clock, each at a table.  The players touch through their tables; the match logs what one
    machine logs; the watcher's mirror logs the same, its board ends where the players'
    do, it has no seat (nothing is "you") and a touch on its table sends nothing."""
    import random

    from test_online import CODE, build, jitter

    # (seed 6, two cards a side: 8 reads; both players take, B faults)
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("human")}, 6, VOICE,
                           cards=2, reading=QUICK)
    host = online.Host(m, CODE, remote=("A", "B"), watchers=1)
    assert host.local is None
    rng = random.Random(5)
    link = lambda: online.SimLink(jitter(rng))  # noqa: E731
    guests = {"A": online.Guest(CODE, build), "B": online.Guest(CODE, build),
              "watch": online.Guest(CODE, build, watch=True)}
    offsets = {"A": 1234.5, "B": -77.25, "watch": 3.0}
    lock = threading.Lock()
    tables: dict = {}
    views: dict = {k: [] for k in guests}

    def table_of(k):
        g = guests[k]
        if k not in tables and g.m is not None:
            tables[k] = GuestTable(g, lock, None)
            tables[k].open(0.0)
        return tables.get(k)

    def hears(k):
        g = guests[k]

        def at(frame):
            t = g.timeline.instant_of(frame) if g.timeline is not None else None
            return None if t is None or g.offset is None else t - g.offset
        return at

    def turn(k, player):
        steps = [0]

        def go(h, gnow):
            t = table_of(k)
            if t is None:
                return []
            if player is not None:
                player(gnow)
            steps[0] += 1
            if steps[0] % 2 == 0:  # (a board ticks its table every 8 ms)
                views[k].append(t.tick(gnow))
            return t.drain(gnow)
        return go

    sim = None
    for k in ("A", "B", "watch"):
        # the players join first (each takes the first free seat: A, then B)
        player = None if k == "watch" else Player(k, lambda k=k: table_of(k), hears(k))
        args = (guests[k], link(), link(), offsets[k], [turn(k, player)])
        if sim is None:
            sim = online.Sim(host, *args)
            sim.run_until(lambda: guests["A"].m is not None, limit=2.0)
        else:
            sim.add(*args)
            sim.run_until(lambda: guests[k].m is not None, limit=sim.now + 2.0)
    assert {k: g.me for k, g in guests.items()} == {"A": "A", "B": "B", "watch": None}
    assert sim.run_until(lambda: all(g.over for g in guests.values())
                         and all(t.over for t in tables.values()))
    ref = headless.play(headless.new_match("kyogi", AS_BOTS, 6, VOICE, cards=2,
                                           reading=QUICK))
    assert m.log_records()[1:] == ref.log_records()[1:]
    touched = {(t["player"], t["verdict"]) for r in ref.log_records()[1:]
               for t in r["timing"]["touches"]}
    assert {("A", "take"), ("B", "take"), ("B", "fault")} <= touched
    for g in guests.values():
        assert g.m.log_records() == m.log_records()
    last = {k: views[k][-1][0] for k in guests}
    assert {v.phase for v in last.values()} == {"over"}
    assert last["watch"].board.territories == last["A"].board.territories == \
        last["B"].board.territories
    assert (last["A"].viewer, last["B"].viewer, last["watch"].viewer) == ("A", "B", "A")
    assert not any(s.you for s in last["watch"].seats)
    assert [s.you for s in last["B"].seats] == [False, True]
    # the watcher's table takes no input: nothing goes to the host
    w = tables["watch"]
    w.touch("A", m.deal.hands["A"][0], sim.gnow)
    w.send_default("A")
    assert w.drain(0.0) == []
    # a fourth guest who asks to watch: no room
    extra = host.connect(sim.now, "203.0.113.7")
    out = host.receive({"t": "hello", "v": online.VERSION, "code": CODE, "watch": True},
                       sim.now, extra)
    assert out[0]["t"] == "error" and "no more watchers" in out[0]["text"]
