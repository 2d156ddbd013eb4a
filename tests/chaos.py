"""Workers killed again and again (or frozen with SIGSTOP past their lease, ``fault="stop"``, or cut off
from Redis by a TCP proxy, ``fault="cut"`` or ``"blackhole"``) under live matches: the harness of
``tests/test_worker_kills.py`` and ``benchmarks/worker_kills.py``.

Everything is a real process: a redis-server, referee workers (``arena worker``), two bots as their own
``arena bot run`` processes connected through their sessions, and the gateway (in the caller's process,
as ``LocalArena`` runs it). Every ``kill_every`` seconds a worker that runs matches gets SIGKILL and a
fresh one starts, so matches are taken over, and some taken over again before or while their bots are
back. At the end every match is read back from Redis: how it ended, how many results it recorded, whether
its transcript verifies, and how long its bots waited after each kill for its next move.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import redis

from arena import keys
from arena.local.arena import LocalArena, WorkerProcess, arena_command
from arena.local.ladder_runner import LadderRunner
from arena.local.redisproc import free_port
from arena.redis_client import connect
from arena.service.client import ArenaClient
from arena.service.matches import entry_lines
from referee import transcript as transcripts
from sdk.bot import Bot, MatchOutcome, Turn
from tests.helpers import nginx_play_proxy
from tests.tcpproxy import TcpProxy

BOTS: tuple[str, str] = ("chaos-a", "chaos-b")


class SlowBot(Bot):
    """Random legal moves after ``CHAOS_BOT_DELAY`` seconds (default 0.02): long matches to interrupt."""

    name = "chaos"
    version = "1"

    def __init__(self) -> None:
        self.delay = float(os.environ.get("CHAOS_BOT_DELAY", "0.02"))
        self.rng = random.Random(os.environ.get("CHAOS_BOT_SEED", "0"))

    async def act(self, turn: Turn) -> Any:
        await asyncio.sleep(self.delay)
        return self.rng.choice(turn.legal_actions)

    def on_match_end(self, outcome: MatchOutcome) -> None:
        """What the bot was told, one JSON line a match in ``$CHAOS_BOT_TOLD``, to hold against the record."""
        told = os.environ.get("CHAOS_BOT_TOLD")
        if told:
            with open(told, "a") as f:
                f.write(json.dumps({"match_id": outcome.match_id, "end_reason": outcome.end_reason,
                                    "scores": [s.score for s in outcome.seats]}) + "\n")  # fmt: skip


@dataclass
class Kill:
    at: float  # unix time
    worker: str
    matches: list[str]  # running on it then
    moved: dict[str, float] = field(default_factory=dict)  # match -> its first seat ply after (``_watch_moves``)


@dataclass
class KillReport:
    requested: int = 0
    finished: int = 0
    end_reasons: dict[str, str] = field(default_factory=dict)  # match id -> end reason
    forfeited: list[str] = field(default_factory=list)  # matches with a forfeit line
    lost: list[str] = field(default_factory=list)  # finished with no result in the results stream
    doubled: list[str] = field(default_factory=list)  # more than one result
    unverified: dict[str, str] = field(default_factory=dict)  # match id -> why its transcript fails
    kills: list[Kill] = field(default_factory=list)
    resumes: dict[str, int] = field(default_factory=dict)  # match id -> times it was resumed
    kill_to_move_s: list[float] = field(default_factory=list)  # per (kill, match): to its next seat ply
    kill_to_move_by_kill: list[list[float]] = field(default_factory=list)  # the same, one list a kill
    forfeit_lines: dict[str, list[str]] = field(default_factory=dict)  # the lines around each forfeit
    told_wrong: list[str] = field(default_factory=list)  # "bot match": told a result other than the record
    untold: list[str] = field(default_factory=list)  # "bot match": never told the result of a finished match
    stuck_bots: list[str] = field(default_factory=list)  # bot processes that did not exit on SIGTERM
    # matches a worker forfeited a seat of in its log though the record has no forfeit: refereed on, unrecorded,
    # by a worker that had lost the match while its bots waited for it elsewhere
    blind_forfeits: list[str] = field(default_factory=list)
    # per (fault, match it had): seconds from the fault to the faulted worker letting the match go ("lease
    # lost" in its log), for matches another worker took over; None where it never did
    let_go_s: list[float | None] = field(default_factory=list)
    ladder_games: int = 0  # seat results the ladder applied (2 a finished match)
    ladder_equals_rebuild: bool | None = None  # the ratings applied as results came == a rebuild from them
    # processes of the arena that exited without being killed by the run: "worker N (deaths)", "bot NAME",
    # "ladder THREAD"
    exited: list[str] = field(default_factory=list)
    # with ``churn``: bots and owners registered, tokens rotated, as the gateway reported them done, and those
    # whose reported token does not authenticate at the end (lost)
    churn_done: int = 0
    churn_refused: int = 0  # calls that failed (UNAVAILABLE during a failover): not done, not counted
    churn_lost: list[str] = field(default_factory=list)
    woken_roles: list[str] = field(default_factory=list)  # a frozen primary's role once let go and settled

    def summary(self) -> str:
        waits = sorted(self.kill_to_move_s)
        median = waits[len(waits) // 2] if waits else float("nan")
        again = sum(1 for n in self.resumes.values() if n > 1)
        return (
            f"{self.requested} matches, {len(self.kills)} kills, {sum(self.resumes.values())} resumes "
            f"({again} matches taken over more than once): finished {self.finished}, "
            f"forfeited {len(self.forfeited)}, lost {len(self.lost)}, doubled {len(self.doubled)}, "
            f"unverified {len(self.unverified)}, bots told a wrong result {len(self.told_wrong)}, "
            f"bots never told {len(self.untold)}, forfeits by workers that lost the match "
            f"{len(self.blind_forfeits)}, ladder games {self.ladder_games} "
            f"(= rebuild: {self.ladder_equals_rebuild}), processes exited {len(self.exited)}, "
            f"registrations/rotations done {self.churn_done} (refused {self.churn_refused}), lost "
            f"{len(self.churn_lost)}; "
            f"kill -> next move: median {median:.2f} s, "
            f"max {max(waits, default=float('nan')):.2f} s over {len(waits)}"
        )


def start_bot(name: str, token: str, gateway: str, logs: Path, delay: float, seed: int) -> subprocess.Popen[bytes]:
    log = (logs / f"bot-{name}.log").open("ab")
    return subprocess.Popen(
        arena_command("bot", "run", f"{__file__}:SlowBot", "--arena", gateway, "--log-level", "INFO"),
        stdout=log,
        stderr=subprocess.STDOUT,
        env={
            **os.environ,
            "ARENA_BOT_TOKEN": token,
            "CHAOS_BOT_DELAY": str(delay),
            "CHAOS_BOT_SEED": str(seed),
            "CHAOS_BOT_TOLD": str(logs / f"told-{name}.jsonl"),
        },
    )


def _running_on(r: Any, match_ids: list[str]) -> dict[str, list[str]]:
    """Worker id -> the matches it runs now (per the match hashes)."""
    pipe = r.pipeline(transaction=False)
    for mid in match_ids:
        pipe.hmget(keys.match(mid), "status", "worker")
    out: dict[str, list[str]] = {}
    for mid, (status, worker) in zip(match_ids, pipe.execute(), strict=True):
        if status == b"running" and worker:
            out.setdefault(worker.decode(), []).append(mid)
    return out


def _unfinished(r: Any, match_ids: list[str]) -> list[str]:
    pipe = r.pipeline(transaction=False)
    for mid in match_ids:
        pipe.hget(keys.match(mid), "status")
    return [mid for mid, s in zip(match_ids, pipe.execute(), strict=True) if s != b"finished"]


def _resumed(r: Any, match_id: str) -> bool:
    entries: Any = r.xrevrange(keys.events(match_id), count=50)
    return any('"type":"resumed"' in line for _, fields in entries for line in entry_lines(fields))


def _worker_of(arena: LocalArena, worker_id: str) -> WorkerProcess | None:
    for w in arena.workers:
        if worker_id.startswith(f"local-{w.index}-") and w.process.poll() is None:
            return w
    return None


async def kill_run(
    *,
    matches: int = 16,
    kills: int = 12,
    kill_every: tuple[float, float] = (1.5, 2.0),
    workers: int = 2,
    capacity: int = 6,
    lease_ms: int = 1500,
    bot_delay: float = 0.02,
    direct: bool = False,
    proxy: bool = False,
    seed: int = 1,
    fault: str = "kill",
    stop_s: float = 4.0,
    clock_file: Path | None = None,
    timeout_s: float = 600.0,
    data_dir: Path | None = None,
    redis_url: str | None = None,
    progress: Any = None,
    sentinels: Any = None,
    redis_stops: tuple[int, ...] = (),
    churn: bool = False,
) -> KillReport:
    """Run ``matches`` Shanghaien matches between two bot processes while killing workers; see the module.

    ``fault="primary"``: the Redis primary of ``sentinels`` (a ``tests.sentinel.SentinelSet``, whose URL is
    ``redis_url``) is killed instead, with SIGKILL, or for the faults numbered in ``redis_stops`` (from 0)
    frozen with SIGSTOP for ``stop_s`` and let go; after each, the killed server comes back as a replica of
    the new primary and the run waits for the set to settle (two replicas in sync) before the next.

    ``churn``: meanwhile bots and owners are registered and their tokens rotated through the gateway, and at
    the end every token the gateway reported must authenticate (``report.churn_lost`` otherwise).

    ``proxy``: the bots play through the Play proxy (nginx, ``tests.helpers.nginx_play_proxy``; needs
    ``redis_url``), the gateway's assignments naming each worker's route."""
    rng = random.Random(seed)
    report = KillReport(requested=matches)
    proxies: dict[int, TcpProxy] = {}  # worker slot -> its link to Redis (faults "cut" and "blackhole")

    def through_proxy(slot: int, url: str) -> str:
        if slot not in proxies:
            proxies[slot] = TcpProxy(int(url.rsplit(":", 1)[1].split("/", maxsplit=1)[0])).__enter__()
        return proxies[slot].url(url)

    with tempfile.TemporaryDirectory(prefix="arena-kills-") as tmp, contextlib.ExitStack() as stack:
        folder = data_dir or Path(tmp)
        worker_args = ("--lease-ms", str(lease_ms), "--capacity", str(capacity))
        linked = through_proxy if fault in ("cut", "blackhole") else None
        play_proxy = ""
        if proxy:
            assert redis_url, "the Play proxy reads the workers from the run's Redis: give redis_url"
            port = free_port()
            stack.enter_context(nginx_play_proxy(redis_url, folder / "play-proxy", port))
            play_proxy = f"127.0.0.1:{port}"
        async with LocalArena(
            folder,
            workers=workers,
            redis_url=redis_url,
            worker_args=worker_args,
            direct=direct,
            play_proxy=play_proxy,
            log_level="INFO",
            worker_redis=linked,
        ) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            bots = await _start_bots(arena, admin, bot_delay)
            r: Any = connect(arena.redis_url)
            ladder = LadderRunner(arena.redis_url, schedule=False)  # applies the rated results as they come
            threads = ladder.start()
            try:
                await _online(admin, arena.logs)
                ids = await _request(admin, matches)
                stop_at = time.monotonic() + timeout_s
                churning = asyncio.create_task(_churn(admin, report, rng.random())) if churn else None
                watching = asyncio.create_task(_watch_moves(r, report))
                while len(report.kills) < kills and _steady(_unfinished, r, ids) and time.monotonic() < stop_at:
                    await asyncio.sleep(rng.uniform(*kill_every))
                    running = _steady(_running_on, r, ids)
                    on = {w: m for w, m in running.items() if _worker_of(arena, w) is not None}
                    if not on:
                        continue
                    if fault == "primary":
                        await _primary_fault(sentinels, len(report.kills) in redis_stops, stop_s, report, on)
                        if progress is not None:
                            progress(f"redis fault {len(report.kills)}: {report.kills[-1].worker}")
                        continue
                    again = [w for w, m in on.items() if any(_resumed(r, x) for x in m)]
                    # every other kill, when it can, hits a worker running a match taken over already: matches
                    # are taken over again before or while their bots re-attach
                    worker_id = rng.choice(sorted(again if again and len(report.kills) % 2 else on))
                    victim = _worker_of(arena, worker_id)
                    assert victim is not None
                    if fault == "stop":  # alive but frozen past its lease: another worker takes its matches over
                        victim.process.send_signal(signal.SIGSTOP)
                        report.kills.append(Kill(time.time(), worker_id, on[worker_id]))
                        await asyncio.sleep(stop_s)
                        victim.process.send_signal(signal.SIGCONT)
                    elif fault == "clock":  # Redis's wall clock jumps forward (libfaketime reads the file)
                        assert clock_file is not None
                        clock_file.write_text(f"+{60 * (len(report.kills) + 1)}")
                        report.kills.append(Kill(time.time(), worker_id, on[worker_id]))
                        await asyncio.sleep(stop_s)
                    elif fault in ("cut", "blackhole"):  # alive and running, but its Redis link is down
                        link = proxies[victim.index]
                        link.cut() if fault == "cut" else link.blackhole()
                        report.kills.append(Kill(time.time(), worker_id, on[worker_id]))
                        await asyncio.sleep(stop_s)
                        link.heal()
                    else:
                        await asyncio.to_thread(victim.kill)
                        report.kills.append(Kill(time.time(), worker_id, on[worker_id]))
                        arena.start_worker()
                    if progress is not None:
                        progress(f"kill {len(report.kills)}: {worker_id} with {len(on[worker_id])} matches")
                while _steady(_unfinished, r, ids) and time.monotonic() < stop_at:
                    await asyncio.sleep(0.2)
                watching.cancel()
                if churning is not None:
                    tokens_done = await _stop(churning)
                    _check_churn(r, tokens_done, report)
                _exited(arena, bots, threads, 0 if fault == "primary" else len(report.kills), report)
                _read_back(r, ids, report, folder)
                _read_worker_logs(arena.logs, report)
                _read_let_go(arena.logs, report)
                await _ladder_check(ladder, report)
                _drain(bots, report)
                _read_told(r, report, arena.logs)
            finally:
                for link in proxies.values():
                    link.__exit__()
                ladder.stop(threads)
                _stop_bots(bots)
                r.close()
                admin.close()
    return report


async def _start_bots(arena: LocalArena, admin: ArenaClient, delay: float) -> list[subprocess.Popen[bytes]]:
    """Register ``BOTS`` and start each as its own ``arena bot run`` process."""
    tokens = {}
    for name in BOTS:
        _, tokens[name] = await asyncio.to_thread(admin.register_bot, name, "chaos", ["shanghaien"], 64)
    return [start_bot(name, tokens[name], arena.gateway, arena.logs, delay, i) for i, name in enumerate(BOTS)]


async def _online(admin: ArenaClient, logs: Path) -> None:
    deadline = time.monotonic() + 60
    while sum(b.online for b in await asyncio.to_thread(admin.list_bots)) < len(BOTS):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the bots did not connect; see {logs}")
        await asyncio.sleep(0.1)


async def _request(admin: ArenaClient, matches: int) -> list[str]:
    """``matches`` rated Shanghaien matches between ``BOTS``, the seats swapped every other one."""
    ids = []
    for i in range(matches):
        seats = list(BOTS) if i % 2 == 0 else list(reversed(BOTS))
        mid, _ = await asyncio.to_thread(admin.request_match, "shanghaien", seats, rated=True)
        ids.append(mid)
    return ids


def _drain(bots: list[subprocess.Popen[bytes]], report: KillReport) -> None:
    """SIGTERM: a bot drains (plays its running matches out), then exits; one still there after 45 s is stuck."""
    for b in bots:
        b.terminate()
    for name, b in zip(BOTS, bots, strict=True):
        try:
            b.wait(45)
        except subprocess.TimeoutExpired:
            report.stuck_bots.append(name)
            b.kill()


def _stop_bots(bots: list[subprocess.Popen[bytes]]) -> None:
    """The bots gone whatever happened (let go first, in case they were held with SIGSTOP)."""
    for b in bots:
        b.send_signal(signal.SIGCONT)
        b.terminate()
    for b in bots:
        try:
            b.wait(10)
        except subprocess.TimeoutExpired:
            b.kill()


async def frozen_at_claim_run(
    *,
    matches: int = 3,
    direct: bool = False,
    stop_s: float = 8.0,
    lease_ms: int = 1500,
    bot_delay: float = 0.02,
    timeout_s: float = 120.0,
    data_dir: Path | None = None,
    redis_url: str | None = None,
) -> KillReport:
    """A worker frozen with SIGSTOP right after claiming its matches, before any bot has joined them: the bots
    (held with SIGSTOP meanwhile, so that none can join first) then dial a worker that will never answer, and
    a second worker takes the matches over once the lease runs out. The bots must follow the matches to it and
    play them out; the frozen worker, let go after ``stop_s``, must take nothing back."""
    report = KillReport(requested=matches)
    with tempfile.TemporaryDirectory(prefix="arena-claim-") as tmp:
        folder = data_dir or Path(tmp)
        worker_args = ("--lease-ms", str(lease_ms), "--capacity", str(matches))
        async with LocalArena(folder, workers=1, redis_url=redis_url, worker_args=worker_args, direct=direct,
                              log_level="INFO") as arena:  # fmt: skip
            admin = ArenaClient(arena.gateway, arena.admin_token)
            bots = await _start_bots(arena, admin, bot_delay)
            r: Any = connect(arena.redis_url)
            ladder = LadderRunner(arena.redis_url, schedule=False)
            threads = ladder.start()
            frozen = arena.workers[0]
            try:
                await _online(admin, arena.logs)
                for b in bots:
                    b.send_signal(signal.SIGSTOP)
                ids = await _request(admin, matches)
                deadline = time.monotonic() + 30
                while sum(len(m) for m in _running_on(r, ids).values()) < matches:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"the worker did not claim the matches; see {arena.logs}")
                    await asyncio.sleep(0.02)
                frozen.process.send_signal(signal.SIGSTOP)
                report.kills.append(Kill(time.time(), frozen.worker_id, list(ids)))
                arena.start_worker()
                for b in bots:
                    b.send_signal(signal.SIGCONT)
                await asyncio.sleep(stop_s)
                frozen.process.send_signal(signal.SIGCONT)
                stop_at = time.monotonic() + timeout_s
                while _steady(_unfinished, r, ids) and time.monotonic() < stop_at:
                    await asyncio.sleep(0.2)
                _exited(arena, bots, threads, 0, report)
                _read_back(r, ids, report, folder)
                _read_worker_logs(arena.logs, report)
                await _ladder_check(ladder, report)
                _drain(bots, report)
                _read_told(r, report, arena.logs)
            finally:
                frozen.process.send_signal(signal.SIGCONT)
                ladder.stop(threads)
                _stop_bots(bots)
                r.close()
                admin.close()
    return report


async def _churn(admin: ArenaClient, report: KillReport, salt: float) -> dict[tuple[str, str], str]:
    """Register a bot and an owner, rotate a token of each, again and again; (kind, name) -> its token as
    the last call reported done. A name whose call failed is dropped: it may or may not have happened."""
    done: dict[tuple[str, str], str] = {}
    tag = f"{int(salt * 1e6):06d}"
    i = 0
    try:
        while True:
            i += 1
            calls: list[tuple[tuple[str, str], Any]] = [
                (("bot", f"churn-{tag}-{i}"), lambda n: admin.register_bot(n, "chaos", ["shanghaien"], 1)[1]),
                (("owner", f"owner-{tag}-{i}"), lambda n: admin.create_owner(n)[1]),
            ]
            for kind in ("bot", "owner"):
                older = [k for k in done if k[0] == kind]
                if older:
                    rotate = admin.rotate_token if kind == "bot" else admin.rotate_owner_token
                    calls.append((older[i % len(older)], rotate))
            for key, call in calls:
                try:
                    done[key] = await asyncio.to_thread(call, key[1])
                    report.churn_done += 1
                except Exception:  # UNAVAILABLE (Redis in trouble), or a retry of a registration that was done
                    report.churn_refused += 1
                    done.pop(key, None)
            await asyncio.sleep(0.2)
    except asyncio.CancelledError:
        return done


async def _stop(task: asyncio.Task[dict[tuple[str, str], str]]) -> dict[tuple[str, str], str]:
    task.cancel()
    return await task


def _check_churn(r: Any, done: dict[tuple[str, str], str], report: KillReport) -> None:
    from arena.service.owners import Owners
    from arena.service.registry import Registry

    bots, owners = Registry(r), Owners(r)
    for (kind, name), token in done.items():
        who = _steady(bots.authenticate if kind == "bot" else owners.authenticate, token)
        if who is None or who.name != name:
            report.churn_lost.append(f"{kind} {name}")


def _steady(read: Any, *args: Any, timeout: float = 60.0) -> Any:
    """``read(*args)``, again while Redis is in trouble (a failover under way)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return read(*args)
        except redis.RedisError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


async def _primary_fault(sentinels: Any, freeze: bool, stop_s: float, report: KillReport,
                         on: dict[str, list[str]]) -> None:  # fmt: skip
    """Kill (or freeze for ``stop_s``) the Redis primary; bring it back as a replica; wait for the set to settle."""
    running = [m for ms in on.values() for m in ms]
    if freeze:
        node = await asyncio.to_thread(sentinels.stop_primary)
        report.kills.append(Kill(time.time(), f"redis:{node.port} SIGSTOP", running))
        await asyncio.sleep(stop_s)
        sentinels.cont(node)
        await asyncio.to_thread(sentinels.wait_settled, 60.0)
        report.woken_roles.append(await asyncio.to_thread(sentinels.role, node))
    else:
        node = await asyncio.to_thread(sentinels.kill_primary)
        report.kills.append(Kill(time.time(), f"redis:{node.port} SIGKILL", running))
        await asyncio.to_thread(sentinels.restart, node)
    await asyncio.to_thread(sentinels.wait_settled, 60.0)


def _exited(arena: LocalArena, bots: list[subprocess.Popen[bytes]], threads: list[Any], killed: int,
            report: KillReport) -> None:  # fmt: skip
    """Processes of the arena that exited by themselves: workers beyond the ``killed`` ones (their deaths,
    seen by LocalArena's supervisor, or dead now), bots, the ladder's threads."""
    deaths = len(arena._handled) + sum(
        1 for w in arena.workers if w.process.poll() is not None and w.process.pid not in arena._handled
    )
    if deaths > killed:
        report.exited.append(f"workers: {deaths - killed} exited")
    for name, b in zip(BOTS, bots, strict=True):
        if b.poll() is not None:
            report.exited.append(f"bot {name} (exit {b.returncode})")
    for t in threads:
        if not t.is_alive():
            report.exited.append(f"ladder {t.name}")


def _read_back(r: Any, ids: list[str], report: KillReport, folder: Path) -> None:
    results: dict[str, int] = {}
    for _, fields in r.xrange(keys.results()):
        mid = fields[b"match_id"].decode()
        results[mid] = results.get(mid, 0) + 1
    for mid in ids:
        fields = {k.decode(): v.decode() for k, v in r.hgetall(keys.match(mid)).items()}
        if fields.get("status") != "finished":
            continue
        report.finished += 1
        result = json.loads(fields.get("result", "{}") or "{}")
        report.end_reasons[mid] = str(result.get("end_reason", ""))
        n = results.get(mid, 0)
        if n == 0:
            report.lost.append(mid)
        elif n > 1:
            report.doubled.append(mid)
        text = r.get(keys.transcript(mid))
        if text is None:
            report.unverified[mid] = "no transcript stored"
            continue
        lines = text.decode().splitlines()
        path = folder / f"{mid}.jsonl"
        path.write_text(text.decode())
        problem = transcripts.verify(path)
        if problem is not None:
            report.unverified[mid] = str(problem)
        events = [json.loads(line) for line in lines if line.strip()]
        report.resumes[mid] = sum(1 for e in events if e["type"] == "resumed")
        forfeits = [i for i, e in enumerate(events) if e["type"] == "forfeit"]
        if forfeits:
            report.forfeited.append(mid)
            first = forfeits[0]
            report.forfeit_lines[mid] = lines[max(0, first - 4) : first + 1]
    for kill in report.kills:
        report.kill_to_move_by_kill.append([])
        for mid in kill.matches:
            moved = kill.moved.get(mid)
            if moved is not None:
                report.kill_to_move_s.append(moved - kill.at)
                report.kill_to_move_by_kill[-1].append(moved - kill.at)


def _read_worker_logs(logs: Path, report: KillReport) -> None:
    for path in sorted(logs.glob("worker-*.log*")):
        for line in path.read_text(errors="replace").splitlines():
            if '"seat forfeited"' not in line:
                continue
            mid = json.loads(line).get("match_id", "")
            if mid not in report.forfeited and mid not in report.blind_forfeits:
                report.blind_forfeits.append(mid)


def _read_let_go(logs: Path, report: KillReport) -> None:
    lost: dict[tuple[str, str], list[float]] = {}  # (worker, match) -> when it logged "lease lost"
    for path in sorted(logs.glob("worker-*.log*")):
        for line in path.read_text(errors="replace").splitlines():
            if '"lease lost' in line:
                e = json.loads(line)
                at = datetime.fromisoformat(e["timestamp"]).timestamp()
                lost.setdefault((e.get("worker", ""), e.get("match_id", "")), []).append(at)
    for kill in report.kills:
        for mid in kill.matches:
            if report.resumes.get(mid, 0) == 0:
                continue  # finished before the fault bit
            after = [t - kill.at for t in lost.get((kill.worker, mid), []) if t >= kill.at]
            report.let_go_s.append(min(after) if after else None)


async def _ladder_check(ladder: LadderRunner, report: KillReport) -> None:
    """Every finished match rated once, and the ratings equal a rebuild from the stored results."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        report.ladder_games = sum(s.row.games for s in ladder.ladder.leaderboard("shanghaien"))
        if report.ladder_games >= 2 * report.finished:
            break
        await asyncio.sleep(0.2)
    before = ladder.ladder.snapshot("shanghaien")
    ladder.ladder.rebuild("shanghaien")
    report.ladder_equals_rebuild = ladder.ladder.snapshot("shanghaien") == before


def _read_told(r: Any, report: KillReport, logs: Path) -> None:
    """Each bot's told results against the recorded ones."""
    for name in BOTS:
        path = logs / f"told-{name}.jsonl"
        told = {}
        if path.is_file():
            for line in path.read_text().splitlines():
                d = json.loads(line)
                told[d["match_id"]] = d
        for mid in report.end_reasons:
            raw = r.hget(keys.match(mid), "result")
            recorded = json.loads(raw) if raw else {}
            seated = [s["bot_name"] for s in recorded.get("seats", [])]
            if name not in seated:
                continue
            got = told.get(mid)
            if got is None:
                report.untold.append(f"{name} {mid}")
            elif got["end_reason"] != recorded["end_reason"] or got["scores"] != [
                s["score"] for s in recorded["seats"]
            ]:
                report.told_wrong.append(f"{name} {mid}")


def _next_seat_ply(r: Any, mid: str, after: float) -> float | None:
    """When the first seat ply after ``after`` was recorded (the event log's entry time), or None. The
    event log goes with the result: ``_watch_moves`` asks while the match runs."""
    start = f"{int(after * 1000) + 1}-0"
    for entry_id, fields in r.xrange(keys.events(mid), min=start):
        for line in entry_lines(fields):
            event = json.loads(line)
            if event["type"] == "ply" and event.get("actor", -1) >= 0:
                return int(entry_id.split(b"-")[0]) / 1000
    return None


async def _watch_moves(r: Any, report: KillReport) -> None:
    """Until cancelled: for each kill, each of its matches' first seat ply after it (``Kill.moved``), read
    while the match runs (its event log is deleted when it ends; a match that ends first has none)."""
    while True:
        for kill in list(report.kills):
            for mid in kill.matches:
                if mid in kill.moved:
                    continue
                try:
                    moved = await asyncio.to_thread(_next_seat_ply, r, mid, kill.at)
                except redis.RedisError:  # a failover under way: asked again next round
                    continue
                if moved is not None:
                    kill.moved[mid] = moved
        await asyncio.sleep(0.1)


if __name__ == "__main__":  # a quick look: python -m tests.chaos
    out = asyncio.run(kill_run(progress=lambda s: print(s, file=sys.stderr)))
    print(out.summary())
    for mid, lines in out.forfeit_lines.items():
        print(mid, *lines, sep="\n  ")
