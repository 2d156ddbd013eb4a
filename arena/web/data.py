"""What the website reads, through the stores the rest of the arena reads with (the match service's
``MatchStore`` and ``Registry``, the ladder's ``Ladder``): one shape per fact, whatever shows it.

The stores are synchronous redis-py clients; each read runs in a thread, as the gateway's do. Nothing
here writes: a store whose constructor would write (``MatchQueue`` creates its consumer groups) is not
made here, and the queue's figures are read with read-only commands. Redis away or refusing becomes
``DataUnavailableError``, which the app answers with a 503 page (or JSON) saying so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from arena import keys
from arena.ladder.store import Ladder
from arena.redis_client import TROUBLE, connect, trouble
from arena.service.archive import TranscriptArchive
from arena.service.matches import MatchStore
from arena.service.queue import PRIORITIES
from arena.service.registry import Registry

T = TypeVar("T")


class DataUnavailableError(Exception):
    """The arena's database cannot answer now: the page says so (503), with the reason for a person."""


class WebData:
    def __init__(self, redis_url: str, archive: Path | None = None) -> None:
        self.r = connect(redis_url)
        self.matches = MatchStore(self.r, archive=TranscriptArchive(archive) if archive else None)
        self.registry = Registry(self.r)
        self.ladder = Ladder(self.r)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a thread; ``DataUnavailableError`` when Redis cannot answer."""
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except TROUBLE as e:
            raise DataUnavailableError(trouble(e)) from e

    def queue_figures(self) -> dict[str, int]:
        """Matches queued (all priorities) and running (leased to a worker), read only."""
        pipe = self.r.pipeline(transaction=False)
        for p in PRIORITIES:
            pipe.xlen(keys.queue(p))
            pipe.xpending(keys.queue(p), keys.CONSUMER_GROUP)
        replies = pipe.execute(raise_on_error=False)
        queued = running = 0
        for length, pending in zip(replies[::2], replies[1::2], strict=True):
            if isinstance(pending, Exception):  # no worker has made the consumer group yet: none running
                if "NOGROUP" not in str(pending):
                    raise pending
                pending = {"pending": 0}
            if isinstance(length, Exception):
                raise length
            running += int(pending["pending"])
            queued += int(length) - int(pending["pending"])
        return {"queued": queued, "running": running}

    def close(self) -> None:
        self.r.close()
