"""Matches as the arena records them: requesting one, its public record, listings, event logs and
stored transcripts.

A match is one Redis hash (``keys.match``) from its request to its result; its seed lives in a
separate key so that nothing that lists or describes matches can leak it before the end (RULINGS
A1). While it runs, every transcript line is appended to its event log (``keys.events``), which is
what a worker taking the match over resumes from; at the end the whole transcript is stored with
the result, in one atomic step (``MatchQueue.complete``).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import redis

from arena import keys
from arena.service.archive import ArchiveError, TranscriptArchive
from arena.service.queue import MatchQueue, Priority, QueuedMatch
from arena.service.registry import Registry
from referee import chance, games, transcript
from referee.wire.values import MatchResult, MatchStatus

MAX_LIST: Final = 1000
MATCH_ID_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")


class MatchRequestError(ValueError):
    """A match request that cannot be queued; the message says why. Nothing was queued."""


class UnknownMatchError(LookupError):
    """No match of that id (never requested, or its record expired)."""


def new_match_id(game_id: str) -> str:
    return f"{game_id}-{secrets.token_hex(4)}"


@dataclass(frozen=True, slots=True)
class MatchRecord:
    """The public record of a match, from its request to its result (never its seed before the end)."""

    match_id: str
    game_id: str
    status: MatchStatus | None
    bot_names: tuple[str, ...]  # by seat
    rated: bool
    priority: str
    enqueued_at: float
    started_at: float
    finished_at: float
    worker: str
    referee_address: str
    seed_sha256: str
    result: dict[str, Any] | None  # the stored result, decoded: ``arena.results.StoredResult.to_dict()``

    @property
    def outcome(self) -> MatchResult | None:
        return None if self.result is None else MatchResult.from_dict(self.result)


ARENA_MAX_MS: Final = {"first_move_ms": 120_000, "move_ms": 60_000, "bank_ms": 600_000}
"""The arena's bounds on a requested time control (the engines allow an hour a field, for local play), so
that the longest match (some 150 decisions a seat) lasts hours, not days, holding its seats and a worker."""


class MatchStore:
    def __init__(
        self,
        client: redis.Redis,
        queue: MatchQueue | None = None,
        registry: Registry | None = None,
        archive: TranscriptArchive | None = None,
    ) -> None:
        self.r = client
        self._queue = queue
        self.registry = registry or Registry(client)
        self.archive = archive  # where transcripts past the retention period are (None: not configured)

    @property
    def queue(self) -> MatchQueue:
        """Made when first needed: its constructor creates the queue's consumer groups, a write that a
        store made only to read (the website's, whose Redis user may not write) must not do."""
        if self._queue is None:
            self._queue = MatchQueue(self.r)
        return self._queue

    # ----------------------------------------------------------------- request

    def request(
        self,
        game_id: str,
        bot_names: Sequence[str],
        *,
        seed: str = "",
        rated: bool = False,
        time_control: Mapping[str, int] | None = None,
        match_id: str = "",
        priority: Priority = Priority.REQUESTED,
        requested_by: str = "",
    ) -> tuple[str, str]:
        """Queue a match; returns (match id, seed hash). MatchRequestError / DuplicateMatchError otherwise."""
        if game_id not in games.GAME_IDS:
            raise MatchRequestError(f"unknown game id {game_id!r}; known: {', '.join(games.GAME_IDS)}")
        n = games.get(game_id).num_players
        if len(bot_names) != n:
            raise MatchRequestError(f"{game_id} seats {n} bots, got {len(bot_names)}")
        for name in set(bot_names):
            bot = self.registry.find(name)
            if bot is None:
                raise MatchRequestError(f"no bot named {name!r}")
            if not bot.enabled:
                raise MatchRequestError(f"bot {name!r} is disabled: {bot.disabled_reason or 'no reason given'}")
            if game_id not in bot.game_ids:
                raise MatchRequestError(f"bot {name!r} does not play {game_id} (it plays {', '.join(bot.game_ids)})")
        try:
            control = games.time_control(game_id, time_control)
        except ValueError as e:
            raise MatchRequestError(str(e)) from None
        for name, top in ARENA_MAX_MS.items():
            if getattr(control, name) > top:
                raise MatchRequestError(
                    f"on the arena {name} is at most {top:,} ms (a match must not hold its seats and a worker "
                    "for days); for longer, play locally with arena play"
                )
        if match_id and (len(match_id) > 100 or not set(match_id) <= MATCH_ID_CHARS):
            raise MatchRequestError("a match id is 1-100 letters, digits and - _ . :")
        if len(seed) > 200:
            raise MatchRequestError("a seed is at most 200 characters")
        seed = seed or chance.new_seed()
        match = QueuedMatch(
            match_id=match_id or new_match_id(game_id), game_id=game_id, bot_names=tuple(bot_names),
            time_control=control, seed_sha256=chance.seed_hash(seed), rated=rated, requested_by=requested_by,
        )  # fmt: skip
        self.queue.enqueue(match, priority, seed=seed)
        return match.match_id, match.seed_sha256

    # ----------------------------------------------------------------- reading

    def describe(self, match_id: str) -> MatchRecord | None:
        """The public record of a match (never its seed before the end), or None."""
        raw = self.r.hgetall(keys.match(match_id))
        return _record(match_id, raw) if raw else None

    def describe_many(self, match_ids: Sequence[str]) -> list[MatchRecord]:
        """``describe`` of each (those that exist), in one round trip."""
        pipe = self.r.pipeline(transaction=False)
        for match_id in match_ids:
            pipe.hgetall(keys.match(match_id))
        return [_record(i, raw) for i, raw in zip(match_ids, pipe.execute(), strict=True) if raw]

    def get(self, match_id: str) -> MatchRecord:
        """``describe``, for a caller that names a match which must exist: else UnknownMatchError."""
        m = self.describe(match_id)
        if m is None:
            raise UnknownMatchError(f"no match {match_id!r}")
        return m

    def search(
        self,
        *,
        bot: str | None = None,
        game_id: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 50,
        state: MatchStatus | None = None,
        before: float | None = None,
    ) -> list[MatchRecord]:
        """Matches newest first (by request time), filtered by bot, game, time window and state.
        ``before``: only those requested strictly before this time (a page's cursor: the last one's
        ``enqueued_at``), so that paging does not repeat or skip a match as new ones arrive."""
        top: float | str | None = until if before is None else f"({before!r}"  # "(": exclusive, in Redis
        limit = max(1, min(limit, MAX_LIST))
        # ids to read: a filter that drops ids after reading (state, or bot and game) reads up to 4,000
        # candidates, 200 records at a time; otherwise every id read is a match shown (but for an expired
        # record): twice as many as asked for, read ``limit`` at a time
        dropping = bool(state or (bot and game_id))
        span, size = (MAX_LIST * 4, 200) if dropping else (2 * limit, limit)
        if bot and game_id:
            ids = self._window(keys.matches_by_bot(bot), since, top, span)
            wanted: set[str] = set(self._window(keys.matches_by_game(game_id), since, top, span))
            ids = [i for i in ids if i in wanted]
        elif bot:
            ids = self._window(keys.matches_by_bot(bot), since, top, span)
        elif game_id:
            ids = self._window(keys.matches_by_game(game_id), since, top, span)
        else:
            ids = self._window(keys.matches_by_time(), since, top, span)
        out: list[MatchRecord] = []
        for chunk in _chunks(ids, size):
            pipe = self.r.pipeline(transaction=False)
            for match_id in chunk:
                pipe.hgetall(keys.match(match_id))
            for match_id, raw in zip(chunk, pipe.execute(), strict=True):
                if not raw:
                    continue
                record = _record(match_id, raw)
                if state and record.status != state:
                    continue
                out.append(record)
                if len(out) >= limit:
                    return out
        return out

    def _window(self, key: str, since: float | None, until: float | str | None, limit: int) -> list[str]:
        hi = until if until else "+inf"
        lo = since if since else "-inf"
        reply: Any = self.r.zrevrangebyscore(key, hi, lo, start=0, num=limit)
        return [keys.text(x) for x in reply]

    def transcript(self, match_id: str) -> str | None:
        """The full stored transcript of a finished match (JSON Lines), from Redis or, past the retention
        period, the archive; None when there is none. ArchiveError when the match is archived and the
        archive cannot give it (not configured here, file missing or unreadable)."""
        pipe = self.r.pipeline(transaction=False)
        pipe.get(keys.transcript(match_id))
        pipe.hget(keys.match(match_id), "archived_at")
        raw, archived_at = pipe.execute()
        if raw is not None:
            return keys.text(raw)
        if archived_at is None:
            return None
        if self.archive is None:
            raise ArchiveError(f"match {match_id}: its transcript is archived, and this process has no --archive")
        return self.archive.read(match_id)

    # ----------------------------------------------------------------- event logs

    def events(self, match_id: str, after: str = "-") -> list[tuple[str, str]]:
        """(entry id, line) of the match's event log after entry ``after`` (``-``: from the start), in
        order; the lines of one entry (one flush of the worker) share its id."""
        start = "-" if after == "-" else f"({after}"
        reply: Any = self.r.xrange(keys.events(match_id), start, "+")
        return [(keys.text(i), line) for i, f in reply for line in entry_lines(f)]


def entry_lines(fields: Mapping[Any, Any]) -> list[str]:
    """The transcript lines of one event-log entry (its fields as redis-py gives them, bytes or text keys):
    a batch (``keys.EVENT_LINES``) or, written before batches, one line (``keys.EVENT_LINE``)."""
    for name in (keys.EVENT_LINES, keys.EVENT_LINES.encode()):
        if name in fields:
            return keys.text(fields[name]).split("\n")
    for name in (keys.EVENT_LINE, keys.EVENT_LINE.encode()):
        if name in fields:
            return [keys.text(fields[name])]
    return []


def public_lines(lines: Iterable[str], seats: set[int] | None) -> list[str]:
    """The transcript as ``seats`` may see it (``referee.transcript.seat_view``): refusals of other seats
    keep their seat, ply and code but lose the refused text and the referee's reason, and plies of other
    seats lose their bot's note (``seats`` None: everything; empty: the public form)."""
    return [transcript.seat_view(line, seats) for line in lines]


def _record(match_id: str, raw: dict[Any, Any]) -> MatchRecord:
    h = {keys.text(k): keys.text(v) for k, v in raw.items()}
    spec = QueuedMatch.from_json(h["spec"]) if "spec" in h else None
    return MatchRecord(
        match_id=match_id,
        game_id=spec.game_id if spec else "",
        status=MatchStatus(h["status"]) if h.get("status") in set(MatchStatus) else None,
        bot_names=spec.bot_names if spec else (),
        rated=spec.rated if spec else False,
        priority=h.get("priority", ""),
        enqueued_at=float(h.get("enqueued_at", 0)),
        started_at=float(h.get("started_at", 0)),
        finished_at=float(h.get("finished_at", 0)),
        worker=h.get("worker", ""),
        referee_address=h.get("address", ""),
        seed_sha256=spec.seed_sha256 if spec else "",
        result=json.loads(h["result"]) if "result" in h else None,
    )


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
