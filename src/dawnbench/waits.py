"""Fixed waits — a grace before a kill, a poll interval — and the one setting that shortens them.

    SHUTDOWN_GRACE_S = waits.scaled(15)     # 15 s, or 15 × DAWNBENCH_WAIT_SCALE

A user's run keeps every wait as written. The test suite sets ``DAWNBENCH_WAIT_SCALE`` (a number
from 0.05 to 1; ``tests/conftest.py`` sets 0.2) so that a fault that ends by a grace or a timeout
ends sooner; what each wait is for is unchanged. A value outside that range is ignored: a wait is
never lengthened and never made shorter than a twentieth of itself.
"""

from __future__ import annotations

import os

SETTING = "DAWNBENCH_WAIT_SCALE"
LOWEST = 0.05


def scale() -> float:
    """The factor every fixed wait is multiplied by (1 unless the setting says otherwise)."""
    try:
        value = float(os.environ.get(SETTING, "1"))
    except ValueError:
        return 1.0
    return value if LOWEST <= value <= 1 else 1.0


def scaled(seconds: float) -> float:
    """``seconds`` times :func:`scale` — read when the wait starts, so a test's setting takes effect."""
    return seconds * scale()
