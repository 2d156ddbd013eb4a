"""A real event on a local arena: eight bots (the reference bots random and greedy and copies of them
under other names) in a round robin run by the ladder runner's event scheduler, with a referee worker
killed in the middle; one entrant comes late (its games are played later), one connects with another
version than its frozen one (it gets no event match and forfeits them once the grace is over). The
standings the gateway serves equal a recomputation from the stored transcripts. Also the admin CLI
through the gateway (``--json``), and an event's state surviving a restart of its scheduler.

Real parts throughout: redis-server, worker processes (one SIGKILLed), the gateway's gRPC server, the SDK's
bot runners dialling it.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from arena import keys
from arena.events.client import EventClient
from arena.events.model import Entrant, Event, EventState, SlotState
from arena.events.scheduler import EventScheduler
from arena.events.service import host_ladder_and_events
from arena.events.standings import standings
from arena.events.store import EventStore
from arena.local.arena import LocalArena
from arena.local.ladder_runner import LadderRunner
from arena.local.redisproc import RedisProcess
from arena.redis_client import connect
from arena.results import StoredResult
from arena.service.client import ArenaClient
from arena.service.registry import Registry
from sdk import Bot, Turn
from sdk.bots.greedy import GreedyBot
from sdk.bots.random_bot import RandomBot
from tests.helpers import arena_in_process, call, register, run_bots, wait_for

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


def running_event_matches(r: Any, slots: list[Any]) -> dict[str, str]:
    """Match id -> the worker running it, for the event's matches running now."""
    out = {}
    for s in slots:
        if s.match_id:
            status, worker = r.hmget(keys.match(s.match_id), "status", "worker")
            if status == b"running" and worker:
                out[s.match_id] = worker.decode()
    return out


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
        entrants = [n for n in field if n not in ("late", "stale")] + ["late@1.0.0", "stale@1.0.0"]
        created = await call(events.create, "cup", GAME, "round-robin", entrants, games_per_pairing=2,
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
        table = summary["standings"]
        rows = {row["name"]: row for row in table["rows"]}
        assert rows["stale"]["matches"] == 0 and rows["stale"]["forfeits"] == 14  # frozen version: no match
        for name in field.keys() - {"stale"}:  # late too: its games were played later
            assert (rows[name]["matches"], rows[name]["forfeits"], rows[name]["pair_games"]) == (12, 0, 14), name
        assert table["matches_played"] == 42 and table["matches_forfeited"] == 14 and table["remaining"] == 0
        assert rows["stale"]["points"] == 0.0 and table["rows"][-1]["name"] == "stale"

        # the recomputation: every played slot's result from its stored transcript
        slots = store.slots("cup")
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
        assert next(s for s in slots if s.match_id == killed).state is SlotState.DONE
        assert all(s.attempt == 0 for s in slots)  # no match played twice
        r.close()
        admin.close()
        events.close()


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
