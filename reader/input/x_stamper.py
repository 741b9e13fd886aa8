"""The X stamping process (``reader.input.taps.XStamper``), run as a program:
``python x_stamper.py WINDOW_ID``.  It stamps key and button presses (XInput2 raw events; raw
touch begins too with XInput 2.2) with ``time.perf_counter_ns()`` as the X server delivers them.
Frames to the parent: kind (R ready, with detail 1 when touches are selected; K key, B button,
T touch), ns, detail (X keycode / button number / touch id).
"""

import os
import select
import struct
import sys
import time

from priority import raise_priority  # a sibling: this runs as a program, by path


def main() -> None:
    raise_priority()
    from Xlib import display
    from Xlib.ext import xinput
    wid = int(sys.argv[1])
    d = display.Display()
    if not d.has_extension("XInputExtension"):
        sys.exit(3)
    RAW_TOUCH_BEGIN = 22  # XI 2.2
    v = xinput.XIQueryVersion(display=d.display, opcode=d.display.get_extension_major(xinput.extname),
                              major_version=2, minor_version=2)
    touch = (v.major_version, v.minor_version) >= (2, 2)
    mask = xinput.RawKeyPressMask | xinput.RawButtonPressMask
    if touch:
        mask |= 1 << RAW_TOUCH_BEGIN
    d.screen().root.xinput_select_events([(xinput.AllMasterDevices, mask)])
    d.sync()  # a refused selection fails here, before "ready"
    out, head = sys.stdout.fileno(), struct.Struct("<cqI")
    os.write(out, head.pack(b"R", time.perf_counter_ns(), int(touch)))  # ready
    kinds = {xinput.RawKeyPress: b"K", xinput.RawButtonPress: b"B", RAW_TOUCH_BEGIN: b"T"}
    fd = d.fileno()

    try:
        while True:
            ready, _, _ = select.select([fd, 0], [], [])
            ns = time.perf_counter_ns()
            if 0 in ready:
                break
            for _ in range(d.pending_events()):
                ev = d.next_event()
                kind = kinds.get(getattr(ev, "evtype", None))
                if kind is None:
                    continue
                data = ev._data.get("data") or b""
                detail = struct.unpack_from("<I", data, 6)[0] if len(data) >= 10 else 0
                os.write(out, head.pack(kind, ns, detail))
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
