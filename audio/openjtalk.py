"""pyopenjtalk, imported once and quietly, and the lock its frontend needs (its calls are not
thread-safe).  Shared by the synthesized voice (``audio.synth``) and its resynthesis
(``audio.chant``), so neither imports the other for it."""
from __future__ import annotations

import contextlib
import io
import threading

from reader.base.errors import KarutaError


class SynthError(KarutaError):
    """The synthesized voice cannot speak (no engine, no voice file, engine failure)."""


FRONTEND_LOCK = threading.Lock()
_pyopenjtalk = None


def pyopenjtalk_module():
    """Import pyopenjtalk once, swallowing what it prints to stdout on import."""
    global _pyopenjtalk
    if _pyopenjtalk is None:
        with FRONTEND_LOCK:
            if _pyopenjtalk is None:
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        import pyopenjtalk
                except Exception as e:  # ImportError, or a broken native module
                    raise SynthError(
                        f"Japanese text frontend not available ({e.__class__.__name__}): "
                        "install the Python package pyopenjtalk-plus") from None
                _pyopenjtalk = pyopenjtalk
    return _pyopenjtalk
