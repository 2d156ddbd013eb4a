"""A real event on a local arena: eight bots (the reference bots random and greedy and copies of them
under other names) in a round robin run by the ladder runner's event scheduler, with a referee worker
killed in the middle; one entrant comes late (its games are played later), one connects with another
version than its frozen one (it gets no event match and forfeits them once the grace is over). The
standings the gateway serves equal a recomputation from the stored transcripts. The same event on
``arena serve`` (its own process, driven through the admin CLI, one of its workers SIGKILLed), as issue 31
asks. Also the admin CLI through the gateway (``--json``), and an event's state surviving a restart of its
scheduler.

Real parts throughout: redis-server, worker processes (one SIGKILLed), the gateway's gRPC server, the SDK's
bot runners dialling it, ``arena serve`` and the ``arena`` command as processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from arena import keys
from arena.events.client import EventClient
from arena.events.model import Entrant, Event, EventState, Slot, SlotState
from arena.events.scheduler import EventScheduler
from arena.events.service import host_ladder_and_events
from arena.events.standings import standings
from arena.events.store import EventStore
from arena.local.arena import LocalArena
from arena.local.ladder_runner import LadderRunner
from arena.local.redisproc import RedisProcess, free_port
from arena.redis_client import connect
from arena.results import StoredResult
from arena.service.client import ArenaClient
from arena.service.registry import Registry
from arena.tokens import new_admin_token
from sdk import Bot, Turn
from sdk.bots.greedy import GreedyBot
from sdk.bots.random_bot import RandomBot
from tests.helpers import Served, arena_in_process, call, register, run_bots, wait_for

GAME = "shanghaien"
GRACE_S = 20.0
PACE_S = 0.03


class Paced(Bot):
    """A reference bot that takes ``PACE_S`` a move, so that a match lasts long enough for a worker to be
    killed under it."""

    def __init__(self, inner: Bot) -> None:
        self.inner = inner
        self.name, self.version = inner.name, inner.version

    async def act(self, turn: Turn) -> Any:
        await asyncio.sleep(PACE_S)
        return self.inner.act(turn)


def bots() -> dict[str, Bot]:
    field: dict[str, Bot] = {}
    for i, name in enumerate(("random", "random-b", "random-c", "stale")):
        field[name] = Paced(RandomBot(seed=i))
    for i, name in enumerate(("greedy", "greedy-b", "greedy-c", "late")):
        field[name] = Paced(GreedyBot(seed=i))
    return field


def entrants(field: dict[str, Bot]) -> list[str]:
    """The event's entrants: the bots that connect at once, at the version they connect with; ``late`` and
    ``stale`` named with their version (``late`` has not connected yet, ``stale`` connects with another)."""
    return [n for n in field if n not in ("late", "stale")] + ["late@1.0.0", "stale@1.0.0"]


def running_event_matches(r: Any, slots: list[Any]) -> dict[str, str]:
    """Match id -> the worker running it, for the event's matches running now."""
    out = {}
    for s in slots:
        if s.match_id:
            status, worker = r.hmget(keys.match(s.match_id), "status", "worker")
            if status == b"running" and worker:
                out[s.match_id] = worker.decode()
    return out


async def check_the_event(admin: ArenaClient, r: Any, summary: dict[str, Any], slots: list[Slot],
                          field: dict[str, Bot], killed: str, killed_worker: str) -> None:  # fmt: skip
    """What a finished run of the event must show (the module doc): ``summary`` as ``arena event show --json``
    gives it, ``slots`` as stored; ``killed``: the match whose worker ``killed_worker`` was SIGKILLed."""
    table = summary["standings"]
    rows = {row["name"]: row for row in table["rows"]}
    assert rows["stale"]["matches"] == 0 and rows["stale"]["forfeits"] == 14  # frozen version: no match
    for name in field.keys() - {"stale"}:  # late too: its games were played later
        assert (rows[name]["matches"], rows[name]["forfeits"], rows[name]["pair_games"]) == (12, 0, 14), name
    assert table["matches_played"] == 42 and table["matches_forfeited"] == 14 and table["remaining"] == 0
    assert rows["stale"]["points"] == 0.0 and table["rows"][-1]["name"] == "stale"

    # the recomputation: every played slot's result from its stored transcript
    event = Event.from_dict({k: v for k, v in summary["event"].items() if k in Event.__dataclass_fields__})
    from_transcripts = {}
    for s in slots:
        if s.state is SlotState.DONE:
            text, _ = await call(admin.transcript, s.match_id)
            from_transcripts[s.key] = StoredResult.from_lines(text.splitlines(), rated=False).result
    assert len(from_transcripts) == 42
    again = json.loads(json.dumps(standings(event, slots, from_transcripts)))
    assert again == table

    # each table's seed once in each seat order; the killed worker's match was taken over
    by_seed: dict[tuple[int, int], list[Any]] = {}
    for s in slots:
        if s.key in from_transcripts:
            by_seed.setdefault((s.table, s.j), []).append(from_transcripts[s.key])
    for pair in by_seed.values():
        assert len(pair) == 2 and pair[0].seed == pair[1].seed
        assert [x.bot_name for x in pair[0].seats] == [x.bot_name for x in reversed(pair[1].seats)]
    taken_over = await call(admin.describe, killed)  # finished by another worker, recorded once
    assert taken_over.state == 3 and taken_over.worker and taken_over.worker != killed_worker
    assert taken_over.result.end_reason == 1, taken_over.result.detail  # completed: its bots came back to it
    assert next(s for s in slots if s.match_id == killed).state is SlotState.DONE
    assert all(s.attempt == 0 for s in slots)  # no match played twice
    recorded = [keys.text(f[b"match_id"]) for _, f in r.xrange(keys.results())]
    ours = [m for m in recorded if m.startswith(f"event-{event.event_id}-")]  # not the ladder's beside it
    assert sorted(ours) == sorted(s.match_id for s in slots if s.state is SlotState.DONE)  # each once


def test_an_eight_bot_event_survives_a_worker_kill_and_its_standings_equal_the_transcripts(
    redis_url: str, tmp_path: Path
) -> None:
    asyncio.run(asyncio.wait_for(_event_run(redis_url, tmp_path), 420))


async def _event_run(redis_url: str, tmp_path: Path) -> None:
    async with LocalArena(tmp_path / "arena", workers=2, redis_url=redis_url, gateway_extra=host_ladder_and_events,
                          worker_args=("--lease-ms", "1500", "--capacity", "4"),
                          log_level="WARNING") as arena:  # fmt: skip
        admin = ArenaClient(arena.gateway, arena.admin_token)
        events = EventClient(arena.gateway, arena.admin_token)
        r: Any = connect(arena.redis_url)
        field = bots()
        tokens = await register(admin, *field, game=GAME)
        stale = field["stale"]
        stale.version = "2.0.0"  # the entrant is frozen at 1.0.0: this is another version
        early = {n: b for n, b in field.items() if n != "late"}
        runners = run_bots(early, tokens, arena.gateway)

        async def connected() -> bool:
            return bool(sum(b.online for b in await call(admin.list_bots)) == len(early))

        await wait_for(connected, 60, "the bots to connect")
        created = await call(events.create, "cup", GAME, "round-robin", entrants(field), games_per_pairing=2,
                             share=1.0, grace_s=GRACE_S)  # fmt: skip
        assert created.state == "active" and created.matches_remaining == 56  # 28 pairings x 2 seats
        assert {(e.name, e.version) for e in created.entrants} >= {("late", "1.0.0"), ("stale", "1.0.0")}
        runner = LadderRunner(arena.redis_url, max_matches=0, tick_s=0.2)  # no ladder match: only the event's
        threads = runner.start()
        store = EventStore(r)
        try:
            killed = killed_worker = ""
            deadline = time.monotonic() + 60
            while not killed and time.monotonic() < deadline:  # a worker killed while it runs event matches
                await asyncio.sleep(0.3)
                running = running_event_matches(r, store.slots("cup"))
                for w in arena.workers:
                    victims = [m for m, wid in running.items() if wid.startswith(f"local-{w.index}-")]
                    if victims and w.process.poll() is None:
                        await asyncio.to_thread(w.kill)
                        arena.start_worker()
                        killed, killed_worker = victims[0], running[victims[0]]
                        break
            assert killed, "no event match ran within a minute"
            runners += run_bots({"late": field["late"]}, tokens, arena.gateway)  # comes late: plays later

            async def finished() -> bool:
                return bool((await call(events.show, "cup"))["event"]["state"] == "finished")

            await wait_for(finished, 360, "the event to finish")
        finally:
            runner.stop(threads)
            for b in runners:
                b.stop()
        summary = await call(events.show, "cup")
        await check_the_event(admin, r, summary, store.slots("cup"), field, killed, killed_worker)
        r.close()
        admin.close()
        events.close()


def test_the_same_event_on_arena_serve_survives_a_worker_kill_and_its_standings_equal_the_transcripts(
    tmp_path: Path,
) -> None:
    """The event above on ``arena serve`` itself, its own process (its Redis, the gateway with its ladder and
    event scheduler, two workers it supervises), driven as an admin does: created with ``arena event create
    --json``; one of serve's workers SIGKILLed while it runs an event match (serve says so and starts
    another in its slot; the match is taken over at its lease's end); the standings of ``arena event show
    --json`` (and the JSON export) checked as above. The entrants' sessions stay off the ladder (a short
    run); two other bots play rated ladder matches beside the event, one at a time."""
    served = Served(tmp_path / "data", f"127.0.0.1:{free_port()}", new_admin_token(),
                    flags=("--workers", "2", "--web", "", "--log-level", "WARNING"))  # fmt: skip
    served.start()
    try:
        asyncio.run(asyncio.wait_for(_event_on_serve(served), 420))
    finally:
        served.stop()


async def _event_on_serve(served: Served) -> None:
    admin = ArenaClient(served.gateway, served.token)
    r: Any = connect(served.redis_url)
    store = EventStore(r)
    field = bots()
    tokens = await register(admin, *field, game=GAME)
    field["stale"].version = "2.0.0"  # the entrant is frozen at 1.0.0: this is another version
    early = {n: b for n, b in field.items() if n != "late"}
    runners = run_bots(early, tokens, served.gateway, ladder=False)
    beside: dict[str, Bot] = {n: Paced(RandomBot(seed=10 + i)) for i, n in enumerate(("ladder-a", "ladder-b"))}
    for name in beside:
        _, tokens[name] = await call(admin.register_bot, name, "tests", [GAME], 1)  # one match at a time
    runners += run_bots(beside, tokens, served.gateway)
    try:

        async def connected() -> bool:
            return bool(sum(b.online for b in await call(admin.list_bots)) == len(early) + len(beside))

        await wait_for(connected, 60, "the bots to connect")
        named = [arg for name in entrants(field) for arg in ("--bot", name)]
        done = await call(served.cli, "event", "create", "cup", "--game", GAME, *named, "--games", "2",
                          "--share", "1", "--grace-s", str(GRACE_S), "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        created = json.loads(done.stdout)
        assert created["state"] == "active" and created["matches_remaining"] == 56

        killed = killed_worker = ""
        victim = 0
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:  # a worker killed while it runs an event match
            await asyncio.sleep(0.3)
            for match_id, worker_id in running_event_matches(r, store.slots("cup")).items():
                pid = served.worker_pid(worker_id)
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    killed, killed_worker, victim = match_id, worker_id, pid
                    break
        assert killed, "no event match ran within a minute"
        slot = killed_worker.split("-")[1]  # serve's worker ids: local-SLOT-RANDOM
        said = await call(served.line, lambda text: f"worker {slot} exited" in text and "SIGKILL" in text, 30)
        assert "restarting" in said, said
        runners += run_bots({"late": field["late"]}, tokens, served.gateway, ladder=False)  # plays later

        async def finished() -> bool:
            await asyncio.sleep(1.0)  # each look computes the standings in serve's gateway
            done = await call(served.cli, "event", "show", "cup", "--json")
            assert done.returncode == 0, done.stderr
            return bool(json.loads(done.stdout)["event"]["state"] == "finished")

        await wait_for(finished, 360, "the event to finish")
    finally:
        for b in runners:
            b.stop()
    pids = served.workers()
    assert victim not in pids and len(pids) == 2, pids  # reaped and replaced
    done = await call(served.cli, "event", "show", "cup", "--json")
    summary = json.loads(done.stdout)
    await check_the_event(admin, r, summary, store.slots("cup"), field, killed, killed_worker)
    played = [m for m in await call(admin.list_matches, bot_name="ladder-a") if m.state == 3 and m.rated]
    assert played and all(sorted(m.bot_names) == sorted(beside) for m in played)  # the ladder beside the event
    done = await call(served.cli, "event", "export", "cup", "--format", "json", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(json.loads(done.stdout)["text"])["standings"] == summary["standings"]
    r.close()
    admin.close()


def test_the_admin_cli_drives_an_event_through_the_gateway(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path / "arena", workers=0, redis_url=redis_url,
                              gateway_extra=host_ladder_and_events, log_level="WARNING") as arena:  # fmt: skip
            admin = ArenaClient(arena.gateway, arena.admin_token)
            await register(admin, "a", "b", "c", game=GAME)
            env = {"ARENA_ADMIN_TOKEN": arena.admin_token}
            code, out = await arena_in_process(arena.gateway, capsys, "event", "create", "league", "--game", GAME,
                                               "--bot", "a@1", "--bot", "b@1", "--bot", "c@2", "--games", "3",
                                               "--start", "+60", "--move-ms", "2000", env=env)  # fmt: skip
            assert code == 0 and out["event_id"] == "league" and out["games_per_pairing"] == 3
            assert out["time_control"]["move_ms"] == 2000 and out["start_at"] > time.time() + 3000
            assert out["matches_remaining"] == 3 * 4  # 3 games rounded up to 4: two seeds in both seat orders
            code, err = await arena_in_process(arena.gateway, capsys, "event", "create", "league", "--game", GAME,
                                               "--bot", "a@1", "--bot", "b@1", env=env)  # fmt: skip
            assert code != 0 and "exists already" in err
            code, err = await arena_in_process(arena.gateway, capsys, "event", "create", "solo", "--game", GAME,
                                               "--bot", "a@1", env=env)  # fmt: skip
            assert code != 0 and "at least 2 bots" in err
            code, out = await arena_in_process(arena.gateway, capsys, "event", "list", env=env)
            assert [e["event_id"] for e in out] == ["league"]
            code, out = await arena_in_process(arena.gateway, capsys, "event", "pause", "league", env=env)
            assert out["state"] == "paused"
            code, out = await arena_in_process(arena.gateway, capsys, "event", "resume", "league", env=env)
            assert out["state"] == "active"
            code, out = await arena_in_process(arena.gateway, capsys, "event", "show", "league", env=env)
            assert set(out) == {"event", "standings", "matches"} and len(out["matches"]) == 12
            assert [row["points"] for row in out["standings"]["rows"]] == [0.0, 0.0, 0.0]
            assert all(m["state"] == "pending" and m["match_id"] is None for m in out["matches"])
            code, out = await arena_in_process(arena.gateway, capsys, "event", "export", "league", env=env)
            assert out["format"] == "csv" and out["text"].splitlines()[0].startswith("rank,name,version,points")
            code, out = await arena_in_process(arena.gateway, capsys, "event", "cancel", "league", env=env)
            assert out["state"] == "cancelled"
            code, err = await arena_in_process(arena.gateway, capsys, "event", "resume", "league", env=env)
            assert code != 0 and "cancelled" in err
            code, err = await arena_in_process(arena.gateway, capsys, "event", "show", "nope", env=env)
            assert code != 0 and "no event" in err
            admin.close()

    asyncio.run(main())


def test_an_events_state_survives_its_scheduler_and_a_redis_restart(tmp_path: Path) -> None:
    """Slots queued by one scheduler are found queued (not queued twice) by a new one; a paused event
    queues nothing; a redis-server killed with SIGKILL comes back from its AOF with the event as it was."""
    server = RedisProcess(tmp_path / "redis").start()
    try:
        r: Any = connect(server.url)
        registry = Registry(r)
        for name in ("x", "y", "z"):
            registry.register(name, "tests", [GAME])
            registry.seen(name, "1", {})  # online, connected with version 1
        store = EventStore(r)
        store.create(Event("keep", GAME, "round-robin", tuple(Entrant(n, "1") for n in ("x", "y", "z")), 2, share=1.0))
        assert EventScheduler(r, store).tick(queue_depth=8) == 1  # every table shares a bot with the others
        queued = [s for s in store.slots("keep") if s.state is SlotState.QUEUED]
        assert len(queued) == 1
        # written back as pending, as if the scheduler died between queueing the match and writing the slot
        store.put_slots("keep", [queued[0].but(state=SlotState.PENDING, match_id="")])
        assert EventScheduler(r, EventStore(r)).tick(queue_depth=8) == 1  # the same match id: queued once
        assert int(r.zcard(keys.matches_by_time())) == 1
        store.change("keep", "pause")
        assert EventScheduler(r, EventStore(r)).tick(queue_depth=8) == 0
        before = sorted(s.to_dict().items().__repr__() for s in store.slots("keep"))
        r.close()
        time.sleep(1.5)  # the AOF is fsynced every second
        server.kill()
        server.start()
        fresh: Any = connect(server.url)
        found = EventStore(fresh).get("keep")
        assert found is not None and found[1] is EventState.PAUSED
        assert sorted(s.to_dict().items().__repr__() for s in EventStore(fresh).slots("keep")) == before
        assert EventStore(fresh).seed("keep")
        fresh.close()
    finally:
        server.stop()
