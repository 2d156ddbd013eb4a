"""Transcripts leave Redis after a retention period, for an archive of files, so Redis stays bounded.

A finished match's transcript (14-15 KB for Shanghaien) is kept in Redis for ``retention_s`` (by default
0: the gateway's next pass, within ``ARCHIVE_EVERY_S`` of the end), then the archiver writes it to
``ROOT/ab/MATCH_ID.jsonl.gz`` (``ab``: the id's first two characters, so no folder holds millions of
files) and only then deletes the Redis copy, marking the match record ``archived_at``. The match's event
log (about 20 KB, the same lines as they were played) went already, with the result
(``MatchQueue.complete``): FollowMatch reads a finished match from its transcript. The record itself
(result, bots, seed hash) stays in Redis: listings, the ladder and ``DescribeMatch`` do not change.
``MatchStore.transcript`` reads either place.

By size as well as age: when Redis uses ``press_at`` (half) of its ``maxmemory`` or more, a pass archives
every finished match whatever its age, since past ``maxmemory`` (``noeviction``) every write fails and
no match can start or end.

Crash safety: the file is written under a temporary name, fsynced, renamed into place and its folder
fsynced before Redis forgets anything; a kill at any point leaves either the Redis copy (and perhaps an
identical finished file, rewritten on the next pass) or the file and the mark. Never a half file under
the final name, never a transcript in neither place.

One archiver at a time across processes: a pass holds a Redis lock (``keys.archive_lock``). The
folder must be the same for every process that reads transcripts (the gateways): a shared volume.
"""

from __future__ import annotations

import gzip
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import redis
import structlog

from arena import keys
from arena.service import headroom
from referee.wire.values import MatchStatus

log = structlog.get_logger("arena.archive")

PASS_SIZE: Final = 500
"""Matches looked at per round trip of a pass."""
LOCK_MS: Final = 120_000

ARCHIVE_EVERY_S: Final = 2.0
"""How often a gateway with an archive runs a pass (a lock and one sorted-set read when there is nothing to
do): a finished match's transcript stays in Redis about this long past its retention."""

PRESS_AT: Final = 0.5
"""Redis's used memory over its maxmemory from which a pass archives every finished match at once."""

_MARK: Final = """
-- KEYS: the match hash, its transcript, its event log, the finished index; ARGV: archived_at, the archive
-- path, the match id. Only a transcript that is still there is forgotten (a second archiver's pass finds it
-- gone and does nothing).
redis.call('ZREM', KEYS[4], ARGV[3])
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'archived_at', ARGV[1], 'archive', ARGV[2])
redis.call('DEL', KEYS[2], KEYS[3])
return 1
"""
_UNLOCK: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class ArchiveError(RuntimeError):
    """A transcript Redis says is archived cannot be read (the message names the path and why)."""


class TranscriptArchive:
    """Transcripts as gzip files under ``root`` (created on first write)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def path(self, match_id: str) -> Path:
        if not match_id or "/" in match_id or match_id.startswith("."):
            raise ValueError(f"not a match id: {match_id!r}")
        return self.root / match_id[:2] / f"{match_id}.jsonl.gz"

    def write(self, match_id: str, text: str) -> Path:
        """Write durably: temporary file, fsync, rename, fsync of the folder."""
        final = self.path(match_id)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f".{final.name}.{secrets.token_hex(4)}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(gzip.compress(text.encode(), mtime=0))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        fd = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return final

    def read(self, match_id: str) -> str:
        """The archived transcript; ArchiveError (with the path) when it is missing or unreadable."""
        path = self.path(match_id)
        try:
            return gzip.decompress(path.read_bytes()).decode()
        except FileNotFoundError:
            raise ArchiveError(f"match {match_id}: archived transcript {path} is missing") from None
        except (OSError, EOFError, UnicodeDecodeError) as e:
            raise ArchiveError(f"match {match_id}: archived transcript {path} is unreadable: {e}") from None


@dataclass(frozen=True)
class PassReport:
    archived: int
    scanned: int
    cursor: float


class Archiver:
    """Moves transcripts of matches finished more than ``retention_s`` ago from Redis to ``archive``.

    Takes the matches in the order they finished from the finished index (``keys.matches_finished``,
    written by the result's script), so a match still running holds nothing up: one match kept open for
    hours once stopped all archiving behind it. Matches finished before that index existed are walked in
    enqueue order from a cursor (``keys.archive_cursor``), as before."""

    def __init__(
        self, client: redis.Redis, archive: TranscriptArchive, retention_s: float, *, press_at: float = PRESS_AT
    ) -> None:
        """``press_at``: the fraction of Redis's maxmemory from which every finished match goes at once
        (0: by age only)."""
        if retention_s < 0:
            raise ValueError("the retention is 0 or more seconds")
        self.r = client
        self.archive = archive
        self.retention_s = retention_s
        self.press_at = press_at
        self._mark = client.register_script(_MARK)
        self._unlock = client.register_script(_UNLOCK)

    def run_pass(self, now: float | None = None, limit: int = 10_000, *, walk: bool = True) -> PassReport:
        """One pass (under the lock; another process's pass in progress: nothing done). ``walk``: also walk
        the matches finished before the finished index existed (a few round trips; the gateway's frequent
        passes leave it to one a minute)."""
        now = time.time() if now is None else now
        holder = secrets.token_hex(8)
        if not self.r.set(keys.archive_lock(), holder, nx=True, px=LOCK_MS):
            return PassReport(0, 0, self._cursor())
        try:
            pressed = self._pressed()
            finished = self._finished(now, limit, pressed)
            if not walk:
                return PassReport(finished.archived, finished.scanned, float("nan"))
            legacy = self._walk(now, max(0, limit - finished.scanned), pressed)
            return PassReport(finished.archived + legacy.archived, finished.scanned + legacy.scanned, legacy.cursor)
        finally:
            self._unlock(keys=[keys.archive_lock()], args=[holder])

    def _cursor(self) -> float:
        raw: Any = self.r.get(keys.archive_cursor())
        return float(raw) if raw is not None else float("-inf")

    def _pressed(self) -> bool:
        """Redis is at ``press_at`` of its maxmemory or past it (never without a maxmemory)."""
        if self.press_at <= 0:
            return False
        h = headroom.read(self.r)
        if h.fraction is None or h.fraction < self.press_at:
            return False
        log.warning("redis memory past the archive's threshold: archiving every finished match now",
                    used_bytes=h.used, maxmemory_bytes=h.maxmemory, press_at=self.press_at)  # fmt: skip
        return True

    def _finished(self, now: float, limit: int, pressed: bool) -> PassReport:
        """Archive from the finished index (``keys.matches_finished``), oldest finish first: a match that
        is still running, however long, holds nothing up. Matches finished before the index existed are
        left to ``_walk``."""
        cutoff = now if pressed else now - self.retention_s
        archived = scanned = 0
        while scanned < limit:
            reply: Any = self.r.zrangebyscore(keys.matches_finished(), "-inf", cutoff, start=0, num=PASS_SIZE)
            batch = [keys.text(m) for m in reply]
            if not batch:
                break
            for match_id in batch:
                scanned += 1
                archived += self._move(match_id, now)
            if len(batch) < PASS_SIZE:
                break
        return PassReport(archived, scanned, float("nan"))

    def _walk(self, now: float, limit: int, pressed: bool = False) -> PassReport:
        """Matches in enqueue order from the cursor: those finished before the finished index existed (the
        others are archived already when it comes to them, and skipped)."""
        cutoff = now if pressed else now - self.retention_s
        cursor = self._cursor()
        archived = scanned = 0
        while scanned < limit:
            lo = "-inf" if cursor == float("-inf") else cursor
            reply: Any = self.r.zrangebyscore(keys.matches_by_time(), lo, cutoff, start=0, num=PASS_SIZE,
                                              withscores=True)  # fmt: skip
            batch = [(keys.text(m), float(s)) for m, s in reply]
            if not batch:
                break
            pipe = self.r.pipeline(transaction=False)
            for match_id, _ in batch:
                pipe.hmget(keys.match(match_id), "status", "finished_at", "archived_at")
            records = pipe.execute()
            blocked = False
            for (match_id, score), (status, finished_at, archived_at) in zip(batch, records, strict=True):
                scanned += 1
                if archived_at is None and status is not None:
                    if keys.text(status) != MatchStatus.FINISHED or float(finished_at or 0) > cutoff:
                        blocked = True  # running, or finished too recently: later passes come back here
                        break
                    archived += self._move(match_id, now)
                cursor = score
            self.r.set(keys.archive_cursor(), repr(cursor))
            if blocked or len(batch) < PASS_SIZE:
                break
        if archived:
            log.info("transcripts archived", count=archived, scanned=scanned, root=str(self.archive.root))
        return PassReport(archived, scanned, cursor)

    def _move(self, match_id: str, now: float) -> int:
        raw: Any = self.r.get(keys.transcript(match_id))
        if raw is None:  # nothing stored (a match record without a transcript): nothing to move
            self.r.zrem(keys.matches_finished(), match_id)
            return 0
        path = self.archive.write(match_id, keys.text(raw))
        return int(self._mark(
            keys=[keys.match(match_id), keys.transcript(match_id), keys.events(match_id), keys.matches_finished()],
            args=[f"{now:.3f}", str(path), match_id],
        ))  # fmt: skip
