"""Stopping background tasks for certain.

On Python 3.11, ``asyncio.wait_for`` loses a cancellation that arrives as its inner operation completes
(CPython gh-86296, fixed in 3.12 by a new ``wait_for``). redis-py's asyncio client awaits every send
through ``wait_for``, so a loop reading Redis that is cancelled at that instant carries on as if nothing
happened, and ``await task`` never returns: a gateway failing to bind its port hung for ever that way.
``cancel_and_wait`` cancels again until the tasks are done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

RECANCEL_S = 0.05  # how long a cancelled task gets before it is cancelled again


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any] | None]) -> None:
    """Cancel ``tasks`` (None entries are skipped) and return once every one is done; their results and
    exceptions are dropped (they were told to stop)."""
    every = [t for t in tasks if t is not None]
    pending = set(every)
    while pending := {t for t in pending if not t.done()}:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=RECANCEL_S)
    # a task that ended by an exception of its own: retrieved, so asyncio does not log it at exit
    for task in every:
        if not task.cancelled():
            task.exception()
