"""Comparisons run with the cyclic garbage collector paused.

Comparing results allocates a tuple, a list or a set per row or column but
never a reference cycle; left on, the collector would traverse every row
again and again as the allocations pile up.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (a no-op when it is already off)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
