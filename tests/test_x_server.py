"""The tests' own X server (tests/conftest.py ``x_server``)."""
import time


def test_the_x_server_does_not_reset_when_its_last_client_leaves(xvfb):
    """An X server resets itself when its last client disconnects, and a connection that comes
    during the reset fails: the tests' pollers (xdotool) disconnect while the app starts, and
    SDL, refused, fell back to its invisible offscreen driver (the window tests' "no window" /
    "display did not answer" failures).  Reset wipes the root window's properties: one set by
    the only client must still be there after it left."""
    from Xlib import X, Xatom, display

    d = display.Display(xvfb)
    root = d.screen().root
    root.change_property(d.intern_atom("KARUTA_TEST_MARK"), Xatom.STRING, 8, b"kept",
                         X.PropModeReplace)
    d.sync()
    d.close()
    time.sleep(0.3)  # (a reset starts as the server sees the client go)
    d = display.Display(xvfb)
    try:
        prop = d.screen().root.get_full_property(d.intern_atom("KARUTA_TEST_MARK"), Xatom.STRING)
    finally:
        d.close()
    assert prop is not None and prop.value == b"kept", "the X server reset when its client left"
