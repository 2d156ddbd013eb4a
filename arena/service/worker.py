"""A referee worker: takes matches from the Redis queue and referees them on its own gRPC port.

This is where the arena wires Redis to the referee (the referee itself knows nothing of Redis):

- claim a queued match (a lease in the queue's consumer group), or take over one whose lease ran
  out (its worker died), resuming it from its event log: the seed and the actions so far replay it
  exactly (``Match.resume``);
- look up each seat's token hash in the registry, start the match on the local ``Referee``, and
  tell every seated bot (through its session events) that this worker's address runs the match;
- append every transcript line to the match's event log as it is recorded, renew the lease while
  the match runs, and give the match up if another worker took the lease;
- at the end store the result and the transcript in one atomic step, recorded exactly once.

Redis going away does not stop a running match: bots' streams reach the worker through the
gateway's relay (or directly), not through Redis. Every Redis call
is retried with back-off until Redis is back; event-log lines wait in memory meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, Final, TypeVar

import structlog

from arena import keys, metrics
from arena.redis_client import TROUBLE, connect, trouble
from arena.results import StoredResult
from arena.service.matches import MatchStore
from arena.service.queue import Claim, LeaseLostError, MatchQueue
from arena.service.registry import Registry
from referee import transcript
from referee.chance import new_seed
from referee.host import MOVED, MatchExistsError, Referee
from referee.match import Match
from referee.server import start_server
from referee.spec import MatchSpec, SeatSpec
from referee.wire.tls import ServerTls
from referee.wire.values import EndReason

log = structlog.get_logger("arena.service.worker")

T = TypeVar("T")
UNKNOWN_TOKEN: Final = "0" * 64  # a seat whose bot is gone: nobody can join it, and the match aborts
WORKER_TTL_S: Final = 15
REVALIDATE_S: Final = 1.0
RECLAIM_EVERY_S: Final = 0.2  # how often a worker looks for expired leases
DECIDED_WITHIN_S: Final = 5.0  # a match replayed to its recorded end is decided at once; this is slack
TAKEOVER_ROOM: Final = 2  # a worker takes matches over up to this many times its capacity
ASSIGNMENTS_MAXLEN: Final = 100_000  # gateways read it as it comes; this is slack for a slow one
_REDIS_DOWN = TROUBLE  # down, or refusing writes: retried with back-off


class Worker:
    """One referee worker process's loop. ``await start()``, then ``await run(stop_event)``."""

    def __init__(
        self,
        redis_url: str,
        *,
        listen: str = "127.0.0.1:0",
        advertise: str | None = None,
        worker_id: str | None = None,
        capacity: int = 500,
        lease_ms: int = 10_000,
        block_ms: int = 1_000,
        drain_s: float = 30.0,
        admin_token: str = "",
        tls: ServerTls | None = None,
    ) -> None:
        self.redis_url = redis_url
        self.tls = tls
        self.listen = listen
        self.advertise = advertise
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"
        self.capacity = capacity
        self.lease_ms = lease_ms
        self.block_ms = block_ms
        self.drain_s = drain_s
        # RefereeService is the control plane: only the deployment's admin may call it (a random token
        # when none is configured, so nobody can); bots are vouched for by the registry on every session.
        # results are held from the bots until ``_complete`` recorded them (``Referee.announce``)
        self.referee = Referee(
            admin_token=admin_token or secrets.token_urlsafe(32), authorizer=self._authorize, hold_results=True
        )
        self.running: dict[str, asyncio.Task[None]] = {}
        self.claims: dict[str, Claim] = {}  # the lease each running match's writes are fenced by
        self.lost: set[str] = set()
        self.logged: dict[str, int] = {}  # match id -> lines its event log holds (from this worker and before)
        self.log = log.bind(worker=self.worker_id)
        self.address = ""
        self._stopping = False
        self._server: Any = None
        self._down_logged = 0.0

    # ------------------------------------------------------------------ life

    async def start(self) -> str:
        self.r = connect(self.redis_url)
        self.rblock = connect(self.redis_url, block_ms=self.block_ms)
        self.queue = MatchQueue(self.r, lease_ms=self.lease_ms)
        self.block_queue = MatchQueue(self.rblock, lease_ms=self.lease_ms)
        self.registry = Registry(self.r)
        self.store = MatchStore(self.r, self.queue, self.registry)
        self.event_log = _EventLog(lambda items: self._redis("events", self._append_events, items))
        self._server, port = await start_server(self.referee, self.listen, self.tls)
        host = self.listen.rpartition(":")[0] or "127.0.0.1"
        if host in ("0.0.0.0", "[::]", "::"):
            host = socket.gethostname()
        self.address = self.advertise or f"{host}:{port}"
        self.log = self.log.bind(address=self.address)
        self.log.info("worker started", capacity=self.capacity, lease_ms=self.lease_ms)
        return self.address

    async def run(self, stop: asyncio.Event) -> None:
        loops = [
            asyncio.create_task(self._claim_loop(), name="claim"),
            asyncio.create_task(self._heartbeat_loop(), name="heartbeat"),
            asyncio.create_task(self._revalidate_loop(), name="revalidate"),
        ]
        await stop.wait()
        self._stopping = True
        self.log.info("worker stopping: no new matches", running=len(self.running), drain_s=self.drain_s)
        for task in loops:
            task.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
        if self.running:
            await asyncio.wait(list(self.running.values()), timeout=self.drain_s)
        for task in self.running.values():
            task.cancel()  # their leases run out and another worker resumes them
        await asyncio.gather(*self.running.values(), return_exceptions=True)
        await self.referee.shutdown()
        await self._server.stop(1.0)
        self.log.info("worker stopped")

    # ------------------------------------------------------------------ redis

    async def _redis(self, op: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a thread, retried with back-off while Redis is unreachable."""
        delay = 0.05
        while True:
            try:
                return await asyncio.to_thread(fn, *args)
            except _REDIS_DOWN as e:
                metrics.REDIS_ERRORS.labels(op).inc()
                now = time.monotonic()
                if now - self._down_logged > 5:
                    self._down_logged = now
                    self.log.warning("redis unavailable, retrying", op=op, error=trouble(e))
                if self._stopping and op in ("claim", "reclaim"):
                    raise
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)

    # ------------------------------------------------------------------ loops

    async def _claim_loop(self) -> None:
        """Matches whose lease ran out (their worker died) first, then new ones: orphaned matches, whose
        bots are waiting, never queue behind new work (nor behind the lease this worker watches them for
        before it takes them over: ``MatchQueue.reclaim``). ``capacity`` bounds new work; takeovers may go up
        to twice it, so an orphan does not wait for a free slot either."""
        last_reclaim = 0.0
        while not self._stopping:
            room = TAKEOVER_ROOM * self.capacity - len(self.running)
            if room > 0 and time.monotonic() - last_reclaim >= RECLAIM_EVERY_S:
                last_reclaim = time.monotonic()
                mine = frozenset(c.entry_id for c in self.claims.values())  # running here: not orphans
                for orphan in await self._redis("reclaim", self.queue.reclaim, self.worker_id, room, mine):
                    if orphan.match_id in self.running:
                        continue  # our own lease lapsed while Redis was away; it is ours again
                    self._launch(orphan, "taken over")
            if len(self.running) >= self.capacity or (room > 0 and self.queue.suspected):
                await asyncio.sleep(0.05)  # full, or a lease that may have run out is being watched
                continue
            claim = await self._redis("claim", self.block_queue.claim, self.worker_id, self.block_ms)
            if claim is not None:
                self._launch(claim, "claimed")

    async def _registry_check(self, hashes: Collection[str]) -> dict[str, str]:
        return await asyncio.to_thread(self.registry.valid_tokens, hashes)

    async def _authorize(self, hashes: Collection[str]) -> dict[str, str]:
        """The registry's word on these tokens. While Redis is away the referee trusts what it was told
        when its matches started (the seats' token hashes), so running matches go on without Redis."""
        try:
            return await self._registry_check(hashes)
        except _REDIS_DOWN:
            metrics.REDIS_ERRORS.labels("authorize").inc()
            seats = {s.token_sha256: s.bot_name for m in self.referee.matches.values() if m.result is None
                     for s in m.seats}  # fmt: skip
            return {h: seats[h] for h in hashes if h in seats}

    async def _revalidate_loop(self) -> None:
        """Sessions whose token was rotated away or whose bot was disabled end within a second."""
        while not self._stopping:
            await asyncio.sleep(REVALIDATE_S)
            try:
                ended = await self.referee.revalidate(self._registry_check)
            except _REDIS_DOWN:
                continue  # no word from the registry: sessions go on
            if ended:
                self.log.info("bot sessions ended: token no longer valid", sessions=ended)

    async def _heartbeat_loop(self) -> None:
        while not self._stopping:
            await self._redis("heartbeat", self._heartbeat)
            await asyncio.sleep(WORKER_TTL_S / 3)

    def _heartbeat(self) -> None:
        pipe = self.r.pipeline(transaction=False)
        pipe.hset(
            keys.worker(self.worker_id),
            mapping={"address": self.address, "running": len(self.running), "capacity": self.capacity,
                     "heartbeat": f"{time.time():.3f}"},
        )  # fmt: skip
        pipe.expire(keys.worker(self.worker_id), WORKER_TTL_S)
        pipe.sadd(keys.workers(), self.worker_id)
        pipe.execute()
        metrics.LEASES_HELD.set(len(self.running))
        metrics.MATCHES_RUNNING.set(len(self.running))

    # ------------------------------------------------------------------ one match

    def _launch(self, claim: Claim, how: str) -> None:
        self.log.info(f"match {how}", match_id=claim.match_id, priority=claim.priority.value)
        task = asyncio.get_running_loop().create_task(self._run(claim), name=f"run-{claim.match_id}")
        self.running[claim.match_id] = task
        self.claims[claim.match_id] = claim
        metrics.MATCHES_RUNNING.set(len(self.running))
        task.add_done_callback(lambda _: self._ended(claim.match_id))

    def _ended(self, match_id: str) -> None:
        self.running.pop(match_id, None)
        self.claims.pop(match_id, None)
        self.lost.discard(match_id)
        self.logged.pop(match_id, None)
        self.event_log.refused.discard(match_id)
        metrics.MATCHES_RUNNING.set(len(self.running))

    def _spec(self, claim: Claim) -> MatchSpec:
        """The referee's spec of a claimed match: each seat with its bot's current token hash."""
        m = claim.match
        seed = claim.seed
        if not seed:  # fix one now, so that a takeover replays with the same
            self.r.set(keys.match_seed(claim.match_id), new_seed(), nx=True)
            stored: Any = self.r.get(keys.match_seed(claim.match_id))
            seed = stored.decode() if stored else ""
        seats = []
        for i, name in enumerate(m.bot_names):
            bot = self.registry.find(name)
            seats.append(SeatSpec(i, name, bot.token_sha256 if bot else UNKNOWN_TOKEN))
        return MatchSpec(
            match_id=claim.match_id, game_id=m.game_id, seats=tuple(seats), seed=seed,
            time_control=m.time_control, rated=m.rated,
        )  # fmt: skip

    def _announce(self, claim: Claim, spec: MatchSpec) -> None:
        """Record where the match runs and tell each seated bot's session (LeaseLostError: not ours)."""
        bots = tuple(s.bot_name for s in sorted(spec.seats, key=lambda s: s.seat))
        self.queue.announce(self.worker_id, claim, self.address, bots, spec.game_id, ASSIGNMENTS_MAXLEN)

    def _append_events(self, items: list[tuple[str, str]]) -> set[str]:
        """Append (match id, line) pairs to their event logs, fenced by each match's lease; the match ids
        whose lease is no longer ours (their lines were refused)."""
        batches: dict[str, tuple[Claim, list[str]]] = {}
        for match_id, line in items:
            claim = self.claims.get(match_id)
            if claim is None:  # a match let go meanwhile (lost, with lines still pending): not ours to write
                continue
            batches.setdefault(match_id, (claim, []))[1].append(line)
        refused = self.queue.append_events(self.worker_id, list(batches.values()), self.logged)
        for match_id in batches:
            if match_id not in refused and match_id in self.logged:
                self.logged[match_id] += 1  # one entry a batch
        return refused

    def _lose(self, match_id: str, why: str) -> None:
        """Another worker holds the match now: stop refereeing it here at once (its bots' streams are
        handed back, ``Referee.abandon``), and record nothing more of it."""
        if match_id in self.lost:
            return
        metrics.LEASES_LOST.inc()
        self.lost.add(match_id)
        self.log.warning("lease lost: another worker runs the match now", match_id=match_id, why=why)
        task = self.referee.tasks.get(match_id)
        if task is not None:
            task.cancel()

    async def _run(self, claim: Claim) -> None:
        mid = claim.match_id
        mlog = self.log.bind(match_id=mid)
        try:
            spec = await self._redis("spec", self._spec, claim)
            log_entries: list[tuple[str, str]] = await self._redis("events", self.store.events, mid)
            lines = [line for _, line in log_entries]
            # the next append must follow these entries (``MatchQueue.append_events``)
            self.logged[mid] = len({entry_id for entry_id, _ in log_entries})
            if lines and transcript.is_footer(lines[-1]):
                # The last worker finished the match but died before recording it (or before telling it).
                await self._finish_recorded(claim, spec, lines, mlog)
                return
            match = self.referee.start_match(spec, resume_from=lines or None)
            if lines:
                metrics.MATCHES_RESUMED.inc()
                mlog.info("match resumed from its event log", ply=match.ply, lines=len(lines))
            if not await self._announce_held(claim, spec):
                return
            logger = asyncio.create_task(self._record_events(match, len(lines)))
            lease = asyncio.create_task(self._keep_lease(claim))
            try:
                outcome = await self.referee.tasks[mid]
                await logger
            except asyncio.CancelledError:
                if mid in self.lost:
                    return
                raise
            finally:
                lease.cancel()
                logger.cancel()
            metrics.MATCHES_FINISHED.labels(outcome.end_reason.value).inc()
            await self._record_and_tell(claim, StoredResult.of(outcome, spec.rated), match.lines, spec, mlog)
        except MatchExistsError:  # the referee runs it still, from an earlier claim: leave that one be
            mlog.exception("match taken over while this worker's referee still holds it")
            raise
        except Exception:
            mlog.exception("match failed on this worker; its lease will run out and another worker resumes it")
            # not held here any more: a later takeover (this worker's too) starts it afresh from its log, and
            # its bots' streams follow it there (before, the match stayed in the referee and every takeover
            # by this worker failed with MatchExistsError: a match stuck for good, seen in a failover run)
            self.referee.abandon(mid, MOVED)
            raise

    async def _finish_recorded(self, claim: Claim, spec: MatchSpec, lines: list[str], mlog: Any) -> None:
        """A match whose log ends with its footer: the result is the footer's. Unless it was aborted (no
        play), the match is also replayed here up to its end and announced, so that its bots, waiting on a
        worker that died before telling them, are told as they reconnect (MatchStarted, MatchEnded)."""
        mid = claim.match_id
        result = StoredResult.from_lines(lines, spec.rated)
        tell = result.result.end_reason != EndReason.ABORTED
        if tell:
            self.referee.start_match(spec, resume_from=lines[:-1])  # decided at once: no new line is logged
            if not await self._announce_held(claim, spec):
                return
            task = self.referee.tasks[mid]
            await asyncio.wait([task], timeout=DECIDED_WITHIN_S)
            if not task.done():  # not decided by its position after all: recorded, but nobody is told here
                task.cancel()  # (the referee lets the match go: announcing it below does nothing)
        await self._record_and_tell(claim, result, lines, spec, mlog)

    async def _announce_held(self, claim: Claim, spec: MatchSpec) -> bool:
        """Announce the match (its bots come here); False, with the match let go, when its lease is not
        ours any more."""
        try:
            await self._redis("announce", self._announce, claim, spec)
        except LeaseLostError:
            self._lose(claim.match_id, "announce refused")
            self.referee.abandon(claim.match_id, MOVED)
            return False
        return True

    async def _record_and_tell(
        self, claim: Claim, result: StoredResult, lines: Sequence[str], spec: MatchSpec, mlog: Any
    ) -> None:
        """Record the result, and only then let the referee tell the bots; not recorded here (another
        worker holds the match now), the match is let go and its bots follow it. Both do nothing for a
        match the referee does not hold."""
        if await self._complete(claim, result, lines, spec, mlog):
            self.referee.announce(claim.match_id)
        else:
            self.referee.abandon(claim.match_id, MOVED)

    async def _complete(
        self, claim: Claim, result: StoredResult, lines: Sequence[str], spec: MatchSpec, mlog: Any
    ) -> bool:
        """Record the result; False when another worker holds the match now (nothing recorded here)."""
        transcript = "\n".join(lines) + "\n"
        bots = tuple(s.bot_name for s in spec.seats)
        try:
            recorded = await self._redis(
                "complete",
                lambda: self.queue.complete(claim, result, transcript=transcript, worker=self.worker_id, bots=bots),
            )
        except LeaseLostError:
            metrics.LEASES_LOST.inc()
            mlog.warning("result not recorded: another worker holds the match now")
            return False
        end_reason = result.result.end_reason.value
        mlog.info("result recorded" if recorded else "result was recorded already", end_reason=end_reason)
        return True

    async def _keep_lease(self, claim: Claim) -> None:
        """Renew the lease three times a lease. A renewal Redis refuses means another worker holds the match;
        one that cannot be confirmed (Redis cut off, black-holed, or this process paused) before the lease
        could have run out, counted on this process's monotonic clock from the last renewal sent, means
        another worker may hold it: either way the match is let go here at once and its bots' streams are
        handed back, rather than refereed on, unrecorded, while its bots wait for it elsewhere."""
        confirmed = claim.leased_at  # the lease runs at least until confirmed + lease
        lease_s = self.lease_ms / 1000
        while True:
            await asyncio.sleep(lease_s / 3)
            sent = time.monotonic()
            try:
                ours = await asyncio.wait_for(
                    self._redis("renew", self.queue.renew, self.worker_id, claim), max(0.0, confirmed + lease_s - sent)
                )
            except TimeoutError:
                self._lose(claim.match_id, "lease not confirmed in time: Redis unreachable")
                return
            if not ours:
                self._lose(claim.match_id, "renew refused")
                return
            confirmed = sent

    async def _record_events(self, match: Match, skip: int) -> None:
        """Append the match's transcript lines to its event log as they come, in batches (with the other
        matches' lines: ``_EventLog``); returns when every line is in Redis."""
        batch: list[str] = []
        seen = 0
        async for line in match.follow():
            seen += 1
            if seen <= skip:
                continue
            batch.append(line)
            _count(line)
            if seen < len(match.lines):
                continue  # more lines are ready now: send them together
            try:
                await self.event_log.append([(match.match_id, x) for x in batch])
            except LeaseLostError:
                self._lose(match.match_id, "event log append refused")
                return
            batch = []


class _EventLog:
    """The event-log appends of every match a worker runs, shared: the lines that come (from any match)
    while one pipeline is on its way to Redis go together in the next. A worker running many matches
    makes one Redis round trip and one thread hand-off per batch, not one per line per match. Each
    match still appends its lines in order and waits until they are in Redis (takeover resumes from
    them)."""

    def __init__(self, write: Callable[[list[tuple[str, str]]], Awaitable[set[str]]]) -> None:
        self.write = write
        self.refused: set[str] = set()  # matches whose lines the fence refused (``append`` raises for them)
        self.pending: list[tuple[str, str]] = []
        self.written: asyncio.Future[None] | None = None  # done when ``pending`` is in Redis
        self.task: asyncio.Task[None] | None = None

    async def append(self, items: list[tuple[str, str]]) -> None:
        self.pending += items
        if self.written is None:
            self.written = asyncio.get_running_loop().create_future()
        written = self.written
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._flush())
        await asyncio.shield(written)  # one match cancelled (lease lost) must not cancel the others' write
        if self.refused and items[0][0] in self.refused:
            raise LeaseLostError(f"match {items[0][0]} is held by another worker now")

    async def _flush(self) -> None:
        while self.pending:
            batch, written = self.pending, self.written
            self.pending, self.written = [], None
            assert written is not None
            try:
                self.refused |= await self.write(batch)
            except BaseException as e:  # every append waiting (these lines and those queued meanwhile) gets it,
                for f in (written, self.written):  # as each match's own write raised before
                    if f is not None and not f.done():
                        f.cancel() if isinstance(e, asyncio.CancelledError) else f.set_exception(e)
                self.pending, self.written = [], None
                if isinstance(e, asyncio.CancelledError):
                    raise
                return
            written.set_result(None)


def _count(line: str) -> None:
    """Metrics from one transcript line. A ply line (nearly all of them; the worker's own referee wrote
    it) is read with ``json.loads`` alone, a chance ply's not at all: the full validating parse of every
    line cost the worker as much CPU as appending it to Redis."""
    if line.startswith('{"type":"ply",'):
        if '"think_ms":' in line:
            d = json.loads(line)
            if d.get("think_ms") is not None and not d.get("fallback"):
                metrics.MOVE_LATENCY.observe(d["think_ms"] / 1000)
        return
    event = transcript.parse_event(line)
    if isinstance(event, transcript.Ply):
        if event.think_ms is not None and not event.fallback:
            metrics.MOVE_LATENCY.observe(event.think_ms / 1000)
    elif isinstance(event, transcript.Strike):
        metrics.TIMEOUTS.inc()
    elif isinstance(event, transcript.Refusal):
        metrics.REFUSALS.inc()
    elif isinstance(event, transcript.Forfeit):
        metrics.FORFEITS.labels(event.reason).inc()
