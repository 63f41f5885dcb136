"""Run test code in several threads at once, switching between them as often as possible."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable


def run_in_threads(work: Callable[..., None], args: list[tuple]) -> None:
    """Run ``work(*a)`` for each ``a`` in ``args``, each in its own thread, and wait for all.

    The interpreter switches threads every microsecond meanwhile, so that an
    update one thread makes between two reads of another shows.
    """
    threads = [threading.Thread(target=work, args=a) for a in args]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
