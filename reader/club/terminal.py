"""The club session's terminal front end: a redrawn screen on a tty, one line a change on a pipe."""
from __future__ import annotations

import sys

from reader.club.session import ClubSession, ClubView, _mmss, log_line
from reader.ui.keys import DEFAULT_KEYS, KeyBindings, read_command


def screen_lines(v: ClubView, width: int = 100, bindings: KeyBindings = DEFAULT_KEYS) -> list[str]:
    """The terminal screen for a view."""
    lines = [v.title, "─" * min(width, 72)]
    if v.phase == "memorize" and v.countdown is not None:
        nxt = f" · signal in {_mmss(v.next_signal)}" if v.next_signal is not None else ""
        lines.append(f"memorisation  {_mmss(v.countdown)} left{nxt}    (s: skip to {v.opens})")
        lines.append("practice swings allowed" if v.swings else "")
    else:
        card = f"card {v.card}/{v.total}" if v.card else f"card -/{v.total}"
        lines.append(f"{card}   ● {v.state}   read {v.read} · left {v.left}")
        if v.poem is not None:
            lines.append(f"  [{v.poem:3d}] {v.kami}  ({v.author}){'  空札' if v.karafuda else ''}")
            lines.append(f"  決まり字 {v.kimariji}  ({v.kimariji_sound})  at read time")
        else:
            lines += ["", ""]
    lines.append(v.message)
    lines.append("last read:")
    lines += ["  " + log_line(e) for e in v.recent] or ["  (none yet)"]
    lines += ["", "keys: " + bindings.help()]
    return [ln[:width] for ln in lines]


def run_terminal(session: ClubSession, *, out=None, keys=None,
                 bindings: KeyBindings = DEFAULT_KEYS) -> None:
    """The terminal front end: a redrawn screen on a tty (alternate screen), one line per
    change on a pipe.  Returns when the reading ends or the reader quits (always saved)."""
    from reader.ui.keys import KeyReader

    out = out or sys.stdout
    tty = out.isatty()
    own = keys is None
    keys = keys if keys is not None else KeyReader()
    last: list[str] | None = None
    last_head = None
    last_draw = 0.0
    try:
        if own:
            keys.__enter__()
        if tty:
            out.write("\x1b[?1049h\x1b[?25l")
        session.start()
        while session.running:
            # (a Ctrl-C lands wherever the loop is: while it draws too, not only in a command)
            try:
                session.command(read_command(keys, 0.01, bindings))
                session.tick()
                v = session.view()
                if tty:
                    now = session.clock.seconds()
                    lines = screen_lines(v, _width(), bindings)
                    if lines != last or now - last_draw > 1.0:
                        out.write("\x1b[H" + "".join(ln + "\x1b[K\n" for ln in lines) + "\x1b[J")
                        out.flush()
                        last, last_draw = lines, now
                else:
                    head = screen_lines(v)[2]
                    if head != last_head and v.phase != "memorize":
                        out.write(head + "\n")
                        out.flush()
                        last_head = head
            except KeyboardInterrupt:
                session.command("quit")
                session.message = "interrupted (saved)"
                break
    finally:
        if tty:
            out.write("\x1b[?25h\x1b[?1049l")
            out.flush()
        session.close()
        if own:
            keys.__exit__(None, None, None)


def _width() -> int:
    import shutil

    return shutil.get_terminal_size((100, 30)).columns
