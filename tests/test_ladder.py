"""The Redis ladder against a real redis-server: exactly once (twice delivered, two OS processes at
once, a consumer restarted), rebuild equal to the increments, queries, the CLI and the gRPC service."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis

from arena import keys
from arena.ladder import fit
from arena.ladder.elo import Table
from arena.ladder.store import Ladder
from arena.results import record
from tests.ladder_results import GAMES, batch, store


def client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=None)


def expected_snapshot(results: list[dict[str, Any]], game_id: str) -> dict[Any, Any]:
    t = Table()
    t.apply_all(results)
    return {k: r.to_dict() for k, r in t.rows.get(game_id, {}).items()}


def test_a_result_delivered_twice_counts_once(redis_url: str) -> None:
    r = client(redis_url)
    ladder = Ladder(r)
    res = batch(1, seed=5)[0] | {"end_reason": "completed", "rated": True}
    store(r, res)
    assert ladder.apply(res) is True
    assert ladder.apply(res) is False
    assert ladder.sync() == 0 and ladder.consume("c1", burst=True) == 0  # the stream path knows it too
    rows = ladder.leaderboard(res["game_id"])
    assert [s.row.games for s in rows] == [1] * len(res["seats"])
    assert all(len(p) == 1 for p in ladder.snapshot(res["game_id"])["history"].values())


def test_aborted_and_unrated_results_change_nothing(redis_url: str) -> None:
    ladder = Ladder(client(redis_url))
    res = batch(1, seed=5)[0]
    assert ladder.apply(res | {"end_reason": "aborted"}) is False
    assert ladder.apply(res | {"rated": False}) is False
    for stored in (res | {"end_reason": "aborted"}, res | {"rated": False}):  # their records, as stored
        assert ladder.apply(record(stored)) is False
    assert ladder.games() == []


def _apply_all(url: str, start: Any, out: Any) -> None:
    """One ladder process: wait for the start signal, apply every stored result in stream order."""
    ladder = Ladder(client(url))
    results = list(ladder.stored_records())
    start.wait()
    out.put(sum(ladder.apply(res) for res in results))


def _consume(url: str, name: str, start: Any, out: Any) -> None:
    ladder = Ladder(client(url))
    start.wait()
    out.put(ladder.consume(name, burst=True, block_ms=200))


@pytest.mark.parametrize("how", ["apply", "consume"])
def test_two_ladder_processes_apply_each_result_once(redis_url: str, how: str) -> None:
    r = client(redis_url)
    results = batch(300, seed=2)
    for res in results:
        store(r, res)
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    if how == "apply":
        procs = [ctx.Process(target=_apply_all, args=(redis_url, start, out)) for _ in range(2)]
    else:
        procs = [ctx.Process(target=_consume, args=(redis_url, f"ladder-{i}", start, out)) for i in range(2)]
    for p in procs:
        p.start()
    start.set()
    applied = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    counting = Table().apply_all(results)
    assert sum(applied) == counting  # each counting result applied by exactly one of them
    ladder = Ladder(r)
    for game_id in GAMES:
        snap = ladder.snapshot(game_id)
        assert {k: v for k, v in snap["rows"].items()} == expected_snapshot(results, game_id)  # and in stream order
        assert sum(len(h) for h in snap["history"].values()) == sum(
            len({(s["bot_name"], s["bot_version"]) for s in res["seats"]})
            for res in results
            if res["game_id"] == game_id and res["rated"] and res["end_reason"] != "aborted"
        )


def test_rebuild_equals_the_incremental_updates(redis_url: str) -> None:
    r = client(redis_url)
    ladder = Ladder(r)
    results = batch(150, seed=3)
    for res in results[:100]:
        store(r, res)
    ladder.consume("c1", burst=True)
    for res in results[100:]:
        store(r, res)
    assert ladder.sync() > 0
    before = {g: ladder.snapshot(g) for g in GAMES}
    assert before["shanghaien"]["latest"]["bot1"] == "2"
    assert [ladder.refit(g) for g in GAMES] == [len(before[g]["applied"]) for g in GAMES]
    fits = {g: ladder.fitted(g) for g in GAMES}
    for g in GAMES:  # the live ladder's fit is the fit of its results, recomputed here
        assert fits[g] == fit.fit_records([record(r) for r in results if r["game_id"] == g]) and fits[g]
    assert [ladder.rebuild(g) for g in GAMES] == [len(before[g]["applied"]) for g in GAMES]
    after = {g: ladder.snapshot(g) for g in GAMES}
    assert after == before  # rows, board, latest versions, head to head, every history point, applied set
    assert all(ladder.fitted(g) == {} for g in GAMES)  # a rebuild drops the fit of the results it replaced
    assert [ladder.refit(g) for g in GAMES] == [len(before[g]["applied"]) for g in GAMES]
    assert {g: ladder.fitted(g) for g in GAMES} == fits  # the rebuilt ladder's fit, to the last bit
    assert ladder.sync() == 0  # nothing is applied again after a rebuild


def test_a_restarted_consumer_applies_its_pending_entries_once(redis_url: str) -> None:
    r = client(redis_url)
    ladder = Ladder(r)
    results = batch(20, seed=4)
    for res in results[:10]:
        store(r, res)
    r.xgroup_create(keys.results(), keys.LADDER_GROUP, id="0", mkstream=True)
    r.xreadgroup(keys.LADDER_GROUP, "c1", {keys.results(): ">"}, count=10)  # read, then "crashed" before acking
    assert r.xpending(keys.results(), keys.LADDER_GROUP)["pending"] == 10
    for res in results[10:]:
        store(r, res)
    ladder.consume("c1", burst=True, block_ms=100)
    assert r.xpending(keys.results(), keys.LADDER_GROUP)["pending"] == 0
    for g in GAMES:
        assert ladder.snapshot(g)["rows"] == expected_snapshot(results, g)
    assert ladder.consume("c1", burst=True, block_ms=100) == 0


def test_queries_leaderboard_history_and_head_to_head(redis_url: str) -> None:
    r = client(redis_url)
    ladder = Ladder(r)
    results = batch(120, seed=6)
    for res in results:
        store(r, res)
    ladder.sync()
    board = ladder.leaderboard("shanghaien")
    assert [s.rank for s in board] == list(range(1, len(board) + 1))
    assert [s.row.rating for s in board] == sorted((s.row.rating for s in board), reverse=True)
    assert [s.row.key for s in ladder.leaderboard("shanghaien", limit=2, offset=1)] == [s.row.key for s in board[1:3]]
    history = ladder.history("shanghaien", "bot1")
    assert set(history) <= {("bot1", "1"), ("bot1", "2")}
    for key, points in history.items():
        assert points[-1].rating == ladder.row("shanghaien", *key).rating  # type: ignore[union-attr]
        assert [p.finished_at for p in points] == sorted(p.finished_at for p in points)
    h2h = ladder.h2h("shangrila-4p")
    table = Table()
    table.apply_all(results)
    assert {(h.a, h.b): [h.a_wins, h.draws, h.b_wins] for h in h2h} == table.h2h["shangrila-4p"]
    assert all("bot3" in (h.a[0], h.b[0]) for h in ladder.h2h("shangrila-4p", "bot3"))


def test_cli_show_history_h2h_read_the_gateway_and_rebuild_works_on_redis(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``arena ladder show|history|h2h`` read LadderService on the gateway (no Redis URL: a dead one in the
    environment changes nothing) and print what the store holds, to the last bit; ``rebuild`` stays on Redis."""
    from arena.cli.main import main
    from arena.ladder.service import host_ladder
    from arena.service.gateway import start_gateway
    from referee.logs import configure

    r = client(redis_url)
    for res in batch(80, seed=7):
        store(r, res)
    ladder = Ladder(r)
    ladder.sync()
    ladder.refit("shanghaien")
    monkeypatch.setenv("ARENA_REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setattr("arena.ladder.client.PAGE", 3)  # the leaderboard comes in pages

    def rows(game_id: str) -> list[dict[str, Any]]:
        return [{"rank": s.rank, "owner": s.owner, **s.row.to_dict(), "error": s.row.error,
                 "provisional": s.row.provisional,
                 "fit": s.fit and {"rating": s.fit.rating, "error": s.fit.error, "sd": s.fit.sd, "games": s.fit.games}}
                for s in ladder.leaderboard(game_id)]  # fmt: skip

    async def run() -> None:
        configure(json=True, level="INFO")  # the gateway's log to stderr, whenever it comes: stdout is the CLI's
        server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0", host_ladder)
        gateway = f"127.0.0.1:{port}"
        capsys.readouterr()  # the gateway's own log

        async def cli(*argv: str) -> str:
            assert await asyncio.to_thread(main, [*argv, "--gateway", gateway]) == 0
            return capsys.readouterr().out

        try:
            shown = json.loads(await cli("ladder", "show", "--game", "shanghaien", "--json"))
            assert shown == {"game_id": "shanghaien", "rows": rows("shanghaien")} and len(shown["rows"]) > 3
            assert all(row["fit"]["games"] > 0 for row in shown["rows"])  # the fit beside the running Elo
            limited = json.loads(await cli("ladder", "show", "--game", "shanghaien", "--json", "--limit", "4"))
            assert limited["rows"] == shown["rows"][:4]
            text = await cli("ladder", "show", "--game", "shanghaien")
            assert "±" in text and shown["rows"][0]["name"] in text
            fitted = shown["rows"][0]["fit"]
            assert f"{fitted['rating']:.0f} ± {fitted['error']:.0f}" in text
            chart = tmp_path / "h.png"
            out = await cli(
                "ladder", "history", "bot1", "--game", "shanghaien", "--compare", "bot2", "--plot", str(chart)
            )
            assert chart.read_bytes()[:4] == b"\x89PNG" and "bot2" in out
            every_game = json.loads(await cli("ladder", "history", "bot1", "--json"))  # every game bot1 plays
            assert [(s["game_id"], s["bot_version"], [tuple(p.values()) for p in s["points"]]) for s in every_game] == [
                (g, v, [(p.finished_at, p.rating, p.match_id) for p in pts])
                for g in ladder.games() for (_, v), pts in ladder.history(g, "bot1").items()
            ]  # fmt: skip
            assert "head to head" in await cli("ladder", "h2h", "--game", "shangrila-3p")
            pairs = json.loads(await cli("ladder", "h2h", "--game", "shangrila-4p", "--bot", "bot3", "--json"))
            assert pairs == [{"a": list(h.a), "b": list(h.b), "a_wins": h.a_wins, "draws": h.draws,
                              "b_wins": h.b_wins} for h in ladder.h2h("shangrila-4p", "bot3")]  # fmt: skip
            rebuild = ["ladder", "rebuild", "--game", "shanghaien", "--redis", redis_url]
            assert await asyncio.to_thread(main, rebuild) == 0
            assert "replayed" in capsys.readouterr().out
            assert json.loads(await cli("ladder", "show", "--game", "shanghaien", "--json")) == shown
            assert await asyncio.to_thread(main, ["ladder", "history", "nobody", "--gateway", gateway]) == 1
            assert "no rated matches for nobody" in capsys.readouterr().err
        finally:
            await server.stop(None)
            await servicer.close()

    asyncio.run(run())


def test_ladder_rows_cross_the_wire_exactly(redis_url: str) -> None:
    """A row sent by the service and read back by the client is the stored row: every field, so the
    error bar and the provisional mark the CLI shows are the store's."""
    from arena.ladder.client import row_from_proto, standing_from_proto
    from arena.ladder.service import row_to_proto

    r = client(redis_url)
    for res in batch(60, seed=9):
        store(r, res)
    ladder = Ladder(r)
    ladder.sync()
    ladder.refit("shanghaien")  # the others have no fit yet
    standings = [s for g in GAMES for s in ladder.leaderboard(g)]
    assert any(s.row.provisional for s in standings) and any(not s.row.provisional for s in standings)
    assert any(s.fit is None for s in standings) and any(s.fit is not None for s in standings)
    for s in standings:
        wire = row_to_proto(s.rank, s.row, s.owner, s.fit)
        assert row_from_proto(wire) == s.row and standing_from_proto(wire) == s
        assert row_from_proto(wire).error == wire.error


def test_grpc_ladder_service(redis_url: str) -> None:
    asyncio.run(_grpc_roundtrip(redis_url))


async def _grpc_roundtrip(redis_url: str) -> None:
    from arena.ladder.service import add_to_server
    from referee.wire import ladder_pb2, ladder_pb2_grpc

    r = client(redis_url)
    for res in batch(60, seed=8):
        store(r, res)
    ladder = Ladder(r)
    ladder.sync()
    server = grpc.aio.server()
    add_to_server(ladder, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = ladder_pb2_grpc.LadderServiceStub(channel)  # type: ignore[no-untyped-call]
            board = await stub.GetLeaderboard(ladder_pb2.GetLeaderboardRequest(game_id="shanghaien", limit=3))
            assert board.total == ladder.size("shanghaien") and len(board.rows) == 3
            top = ladder.leaderboard("shanghaien", 1)[0].row
            assert (board.rows[0].bot_name, board.rows[0].rating) == (top.name, top.rating)
            assert board.rows[0].status != ladder_pb2.RATING_STATUS_UNSPECIFIED
            hist = await stub.GetRatingHistory(
                ladder_pb2.GetRatingHistoryRequest(game_id="shanghaien", bot_name="bot1")
            )
            assert {s.bot_version for s in hist.series} == {v for _, v in ladder.history("shanghaien", "bot1")}
            h2h = await stub.GetHeadToHead(ladder_pb2.GetHeadToHeadRequest(game_id="shangrila-4p"))
            assert len(h2h.records) == len(ladder.h2h("shangrila-4p"))
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.GetLeaderboard(ladder_pb2.GetLeaderboardRequest())
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        await server.stop(None)


def test_a_seeded_ladder_runner_derives_each_match_seed_and_its_pairings_from_the_seed(redis_url: str) -> None:
    """``arena local --seed S``: match n queued by the ladder has seed ``S:n``; the scheduler's chance too."""
    from arena.ladder.scheduler import Pairing
    from arena.local.ladder_runner import LadderRunner
    from arena.service.registry import Registry
    from referee.chance import seed_hash

    r = client(redis_url)
    for name in ("ann", "bea"):
        Registry(r).register(name, "me", ["shanghaien"])
    runner = LadderRunner(redis_url, seed="S")
    for n in (1, 2):
        runner._enqueue(Pairing(f"lm{n}", "shanghaien", ("ann", "bea"), rated=True))
        assert r.get(keys.match_seed(f"lm{n}")) == f"S:{n}".encode()
        assert runner.store.describe(f"lm{n}").seed_sha256 == seed_hash(f"S:{n}")  # type: ignore[union-attr]
    draws = [LadderRunner(redis_url, seed="S").scheduler.rng.random() for _ in range(2)]
    assert draws[0] == draws[1]
    r.close()


def test_the_ladder_process_keeps_the_fit_beside_the_running_elo(redis_url: str) -> None:
    """``arena ladder run``'s consumer makes the whole-history fit when it starts and again after new results
    (at most every ``fit_every_s``): readers see a fit of every applied result, equal to a recomputation."""
    import time

    from arena.local.ladder_runner import LadderRunner
    from arena.results import counts

    r = client(redis_url)
    results = batch(60, seed=11)
    for res in results[:30]:
        store(r, res)
    runner = LadderRunner(redis_url, schedule=False, tick_s=0.05, fit_every_s=0.0)
    ladder = Ladder(r)
    threads = runner.start()
    try:
        for part, upto in ((results[:30], 30), (results[30:], 60)):
            if upto == 60:
                for res in part:
                    store(r, res)
            counted = {g: [rec for x in results[:upto] if counts(rec := record(x)) and rec[0] == g] for g in GAMES}
            deadline = time.monotonic() + 60
            while not all(r.hget(keys.ladder_fit(g), "results") == str(len(counted[g])).encode() for g in GAMES):
                assert time.monotonic() < deadline, "no fit of every applied result"
                time.sleep(0.05)
            for g in GAMES:
                assert ladder.fitted(g) == fit.fit_records(counted[g]) and ladder.fitted(g)
    finally:
        runner.stop(threads)
        r.close()
