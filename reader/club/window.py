"""``karuta read --window``: the club session in a large-text pygame window.

For a laptop beside the tatami: the current 上の句 in big type, its kimariji as it was when
read, card k/N, the state (reading / waiting for take / held), cards read and left, the last
cards read, the memorisation countdown, and a big NEXT button (mouse or touch).  The window
can be resized or maximised (a projector, a tablet): the 1280x800 layout is shown as large as
the window allows, centred (``Letterbox``).

Keys as in the terminal (``reader.club``): space / Enter / PageDown / Right next, p or h
hold, r repeat the last 下の句, b / Left / Backspace / PageUp back a card (the next and back
keys follow ``--next-keys`` / ``--back-keys``), s skip the memorisation, q / Escape / closing
the window quit (saved).  Audio is the session's output (sounddevice by
default), so the window only draws and takes input.
"""
from __future__ import annotations


from reader.club.session import ClubSession, ClubView, _mmss, log_fields
from reader.ui.keys import DEFAULT_KEYS, FIXED_KEYS, KeyBindings
from reader.ui.window import BACKGROUND, INK, PAPER, draw_text, import_pygame, load_font, open_window

SIZE = (1280, 800)
ACCENT = (214, 90, 60)
HELD = (220, 170, 40)
DIM = (150, 160, 150)


def key_codes(pg, name: str) -> list[int]:
    """pygame key codes for a key name of ``reader.club`` (one character: its code, which
    pygame 2 gives printable keys, lower-case for letters)."""
    named = {"space": [pg.K_SPACE], "enter": [pg.K_RETURN, pg.K_KP_ENTER], "tab": [pg.K_TAB],
             "backspace": [pg.K_BACKSPACE], "pagedown": [pg.K_PAGEDOWN], "pageup": [pg.K_PAGEUP],
             "right": [pg.K_RIGHT], "left": [pg.K_LEFT], "up": [pg.K_UP], "down": [pg.K_DOWN],
             "comma": [pg.K_COMMA]}
    return named.get(name) or [ord(name)]


def _keymap(pg, bindings: KeyBindings = DEFAULT_KEYS) -> dict:
    out = {pg.K_ESCAPE: "quit"}
    for name, cmd in FIXED_KEYS.items():
        out[ord(name)] = cmd
    for cmd, names in (("next", bindings.next), ("back", bindings.back)):
        for name in names:
            for code in key_codes(pg, name):
                out[code] = cmd
    return out


def button_rect(size=SIZE):
    """The NEXT button: bottom right, a third of the width, easy to hit."""
    w, h = size
    return (w - w // 3 - 30, h - 190, w // 3, 160)


class Letterbox:
    """The layout's canvas (``SIZE``) shown as large as a window of ``size`` allows, centred:
    ``scale``, the canvas's top-left ``offset`` in the window, and ``to_canvas`` for input."""

    def __init__(self, size, canvas=SIZE):
        w, h = size
        cw, ch = canvas
        self.scale = min(w / cw, h / ch) if w > 0 and h > 0 else 1.0
        self.shown = (max(1, round(cw * self.scale)), max(1, round(ch * self.scale)))
        self.offset = ((w - self.shown[0]) // 2, (h - self.shown[1]) // 2)

    def to_canvas(self, x: float, y: float) -> tuple[float, float]:
        return (x - self.offset[0]) / self.scale, (y - self.offset[1]) / self.scale

    def show(self, pg, screen, canvas) -> None:
        """Put the drawn canvas on the window (scaled unless the sizes match)."""
        if screen.get_size() == canvas.get_size():
            screen.blit(canvas, (0, 0))
            return
        screen.fill(BACKGROUND)
        screen.blit(pg.transform.smoothscale(canvas, self.shown), self.offset)


def _inside(rect, x, y) -> bool:
    rx, ry, rw, rh = rect
    return rx <= x < rx + rw and ry <= y < ry + rh


def log_columns(entries, font, gap: int = 16) -> list[int]:
    """The x (px, from the log's left edge) of each column of the read log
    (``session.log_fields``), from the widest text each column holds as ``font`` draws it: a
    proportional font's kana are not all one width, so padding with spaces cannot line them
    up (issue 34)."""
    rows = [log_fields(e) for e in entries]
    if not rows:
        return []
    widths = [max(font.size(r[i])[0] for r in rows) for i in range(len(rows[0]))]
    xs, x = [], 0
    for i, wd in enumerate(widths):
        xs.append(x)
        x += wd + gap
    return xs


def draw_log(screen, entries, font, area, color) -> None:
    """The last cards read, one a line, in columns (numbers right-aligned)."""
    left, top, width = area
    xs = log_columns(entries, font)
    right_aligned = (0, 1)
    widths = [max(font.size(log_fields(e)[i])[0] for e in entries) for i in right_aligned] \
        if entries else []
    y = top
    for e in entries:
        for i, (x, text) in enumerate(zip(xs, log_fields(e))):
            if x >= width:
                break
            img = font.render(text, True, color)
            dx = widths[i] - img.get_width() if i in right_aligned else 0
            screen.blit(img, (left + x + dx, y), area=(0, 0, width - x, img.get_height()))
        y += 36


def draw(screen, v: ClubView, fonts) -> None:
    pg = import_pygame()
    w, h = screen.get_size()
    screen.fill(BACKGROUND)
    big, mid, small, tiny = fonts
    draw_text(screen, v.title, tiny, (30, 16, w - 60, 30), DIM)
    if v.phase == "memorize" and v.countdown is not None:
        draw_text(screen, "暗記時間  memorisation", mid, (30, 80, w - 60, 80), PAPER)
        draw_text(screen, _mmss(v.countdown), big, (30, 180, w - 60, 200), ACCENT, center=True)
        note = "practice swings allowed" if v.swings else (
            f"signal in {_mmss(v.next_signal)}" if v.next_signal is not None else "")
        draw_text(screen, note, small, (30, 400, w - 60, 60), PAPER, center=True)
        draw_text(screen, f"s / NEXT: skip to {v.opens}", small, (30, 470, w - 60, 60), DIM, center=True)
    else:
        card = f"{v.card}/{v.total}" if v.card else f"-/{v.total}"
        colour = HELD if v.state == "held" else (ACCENT if v.state == "waiting for take" else PAPER)
        draw_text(screen, f"card {card}", mid, (30, 60, w // 2, 80), PAPER)
        # "repeating 下の句 of card 3 [33] しづ心なく": which card on a line of its own (in the
        # half-width box the whole would break mid-word)
        state, _, which = v.state.partition(" of card ")
        draw_text(screen, state, mid, (w // 2, 60, w // 2 - 30, 80), colour)
        if which:
            draw_text(screen, f"card {which}", small, (w // 2, 122, w // 2 - 30, 40), colour)
        if v.poem is not None:
            draw_text(screen, v.kimariji + ("  空札" if v.karafuda else ""), big,
                      (30, 150, w - 60, 170), ACCENT)
            draw_text(screen, v.kami, mid, (30, 330, w - 60, 160), PAPER)
            draw_text(screen, f"{v.poem}  {v.author}", small, (30, 480, w - 60, 50), DIM)
        draw_text(screen, f"read {v.read} · left {v.left}", small, (30, h - 250, w // 2, 50), PAPER)
        draw_log(screen, v.recent[:4], tiny, (30, h - 195, w - w // 3 - 90), DIM)
    if v.message:
        draw_text(screen, v.message, small, (30, h - 300, w - 60, 50), HELD)
    rect = button_rect((w, h))
    pg.draw.rect(screen, ACCENT, rect, border_radius=24)
    label = "NEXT" if v.phase != "memorize" else "SKIP"
    img = big.render(label, True, INK)
    screen.blit(img, img.get_rect(center=(rect[0] + rect[2] // 2, rect[1] + rect[3] // 2)))


def run_window(session: ClubSession, size=SIZE, fps: int = 30,
               bindings: KeyBindings = DEFAULT_KEYS) -> None:
    """Run the session in a window until the reading ends or the reader quits."""
    screen = open_window(size, "karuta · club reader", resizable=True)
    pg = import_pygame()
    canvas = pg.Surface(size)
    box = Letterbox(screen.get_size(), size)
    fonts = (load_font(140), load_font(56), load_font(34), load_font(24))
    keymap = _keymap(pg, bindings)
    clock = pg.time.Clock()
    last: ClubView | None = None
    last_draw = 0.0
    try:
        session.start()
        while session.running:
            for ev in pg.event.get():
                cmd = None
                if ev.type == pg.QUIT:
                    cmd = "quit"
                elif ev.type == pg.KEYDOWN:
                    cmd = keymap.get(ev.key)
                elif ev.type == pg.MOUSEBUTTONDOWN and ev.button == 1:
                    if _inside(button_rect(size), *box.to_canvas(*ev.pos)):
                        cmd = "next"
                elif ev.type == getattr(pg, "FINGERDOWN", -1):
                    w, h = screen.get_size()
                    if _inside(button_rect(size), *box.to_canvas(ev.x * w, ev.y * h)):
                        cmd = "next"
                elif ev.type in (getattr(pg, "WINDOWEXPOSED", -1), getattr(pg, "VIDEOEXPOSE", -1)):
                    last = None
                elif ev.type in (getattr(pg, "VIDEORESIZE", -1),
                                 getattr(pg, "WINDOWSIZECHANGED", -1)):
                    screen = pg.display.get_surface()
                    box = Letterbox(screen.get_size(), size)
                    last = None
                session.command(cmd)
            session.tick()
            v = session.view()
            now = session.clock.seconds()
            if v != last or now - last_draw > 0.5:
                draw(canvas, v, fonts)
                box.show(pg, screen, canvas)
                pg.display.flip()
                last, last_draw = v, now
            clock.tick(fps)
    except KeyboardInterrupt:
        session.command("quit")
    finally:
        session.close()
        pg.display.quit()
