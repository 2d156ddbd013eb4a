"""The public Play path through nginx (issue 32): the gateway keeps sessions and assignments, its
assignments name the proxy and each worker's route, and nginx (Debian's, config from ``arena proxy-config
--watch``) carries the bots' Play streams to the workers. TLS ends at nginx (certificates from trustme);
nginx dials the workers over TLS too.

What each test shows:
- full matches of both games through the proxy, each surviving a worker killed with SIGKILL mid-match:
  the bots follow their match to its new worker through the proxy (their session's next assignment names
  its route), nothing is lost, doubled, struck or forfeited, and the gateway relays no stream meanwhile;
- the proxy passes BotService/Play only: the workers' other services are refused at nginx (no token:
  UNAUTHENTICATED; with one: PERMISSION_DENIED) though the worker itself answers them; a route that is no
  live worker's is UNAVAILABLE; and the worker still authenticates the token of a routed Play.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import grpc
import pytest
import redis
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arena import keys
from arena.local.arena import LocalArena
from arena.local.redisproc import free_port
from arena.service.client import ArenaClient
from arena.service.playproxy import live_workers, route_of
from referee.transcript import verify
from referee.wire import arena_pb2, arena_pb2_grpc, bot_pb2, bot_pb2_grpc
from referee.wire.contract import ROUTE_HEADER, bearer_metadata
from referee.wire.tls import ClientTls, ServerTls, aio_channel
from sdk.arena_client import ArenaBotRunner
from tests.helpers import (
    FAST,
    QUICK_JOIN,
    SlowRandom,
    call,
    finished,
    nginx_play_proxy,
    results_recorded,
    tls_files,
    wait_for,
)

GAMES = ("shanghaien", "shangrila-3p")
BOTS = ("alpha", "beta", "gamma")


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, Path]:
    """A CA and a certificate for localhost and 127.0.0.1: the proxy's, the gateway's and the workers'."""
    return tls_files(tmp_path / "pki")


def proxied_arena(pki: dict[str, Path], tmp_path: Path, redis_url: str, proxy: str, workers: int) -> LocalArena:
    return LocalArena(
        tmp_path / "arena", workers=workers, redis_url=redis_url, worker_args=FAST, play_proxy=proxy,
        tls=ServerTls(pki["cert"], pki["key"]), tls_ca=pki["ca"],
    )  # fmt: skip


def test_matches_of_both_games_through_nginx_survive_killed_workers(
    redis_url: str, tmp_path: Path, pki: dict[str, Path]
) -> None:
    port = free_port()
    proxy = f"127.0.0.1:{port}"

    async def main() -> None:
        async with proxied_arena(pki, tmp_path, redis_url, proxy, workers=2) as arena:
            trust = ClientTls(pki["ca"])
            admin = ArenaClient(arena.gateway, arena.admin_token, tls=trust)
            tokens = {}
            for name in BOTS:
                _, tokens[name] = await call(admin.register_bot, name, "tests", list(GAMES), 20)
            runners = [ArenaBotRunner(SlowRandom(0.03, i), arena.gateway, tokens[n], tls=trust)
                       for i, n in enumerate(BOTS)]  # fmt: skip
            tasks = [asyncio.create_task(r.run()) for r in runners]
            ids = [
                (await call(admin.request_match, "shanghaien", ["alpha", "beta"], time_control=QUICK_JOIN))[0],
                (await call(admin.request_match, "shangrila-3p", list(BOTS), time_control=QUICK_JOIN))[0],
            ]
            r = redis.Redis.from_url(redis_url)
            killed: dict[str, str] = {}  # match id -> the worker killed under it
            for match_id in ids:
                going = int(r.xlen(keys.events(match_id))) + 20

                async def some_plies(match_id: str = match_id, going: int = going) -> bool:
                    return int(r.xlen(keys.events(match_id))) > going

                await wait_for(some_plies, 90, f"{match_id} to get going")
                servicer = arena._servicer
                assert servicer is not None and servicer.relay is not None
                assert not servicer.relay.links  # the gateway relays no stream: they go through nginx
                m = await call(admin.describe, match_id)
                assert m.state == 2, "the kill must come mid-match"
                victim = next(w for w in arena.workers if m.worker.startswith(f"local-{w.index}-"))
                await asyncio.to_thread(victim.kill)
                killed[match_id] = m.worker
                arena.start_worker()
            done = await finished(admin, ids, 180)
            for match_id in ids:
                m = done[match_id]
                assert m.worker != killed[match_id]
                assert m.result.end_reason == 1, m.result.detail  # completed: every bot followed its match
                text, _ = await call(admin.transcript, match_id)
                events = [json.loads(line) for line in text.splitlines()]
                assert sum(e["type"] == "resumed" for e in events) >= 1
                assert not [e for e in events if e["type"] in ("strike", "forfeit")], "the kill cost nobody a move"
                path = tmp_path / f"{match_id}.jsonl"
                path.write_text(text)
                assert verify(path) is None
            assert results_recorded(redis_url) == len(ids)  # once each
            expected = sorted([(ids[0], "alpha"), (ids[0], "beta")] + [(ids[1], n) for n in BOTS])

            async def everyone_told() -> bool:  # the result is recorded before the bots are told it
                told = sorted((o.match_id, runner.bot_name) for runner in runners for o in runner.outcomes)
                assert len(told) <= len(expected) and set(told) <= set(expected), told  # none twice, none wrong
                return told == expected

            await wait_for(everyone_told, 30, "every bot to be told its result")
            for runner in runners:
                runner.stop()
            await asyncio.gather(*tasks, return_exceptions=True)
            r.close()
            admin.close()

    with nginx_play_proxy(redis_url, tmp_path / "proxy", port, tls=(pki["cert"], pki["key"]),
                          worker_tls=(pki["ca"], "localhost")):  # fmt: skip
        asyncio.run(main())


def test_the_proxy_passes_play_only_and_the_worker_still_checks_the_token(
    redis_url: str, tmp_path: Path, pki: dict[str, Path]
) -> None:
    port = free_port()
    proxy = f"127.0.0.1:{port}"

    async def main() -> None:
        async with proxied_arena(pki, tmp_path, redis_url, proxy, workers=1) as arena:
            trust = ClientTls(pki["ca"])
            admin = ArenaClient(arena.gateway, arena.admin_token, tls=trust)
            _, token = await call(admin.register_bot, "alpha", "tests", ["shanghaien"], 5)
            r = redis.Redis.from_url(redis_url)
            (worker,) = live_workers(r)
            route = ((ROUTE_HEADER, route_of(worker)),)

            async with aio_channel(proxy, trust) as via_proxy, aio_channel(worker, ClientTls(pki["ca"], "localhost")) \
                    as direct:  # fmt: skip

                async def play(metadata: tuple[tuple[str, str], ...], hello: bool = False) -> grpc.aio.AioRpcError:
                    """A Play call's status. nginx answers a route it has not without reading the stream: a
                    Hello still on its way then meets a reset stream (INTERNAL, grpc/grpc#36066), so those
                    calls send none; the worker reads the Hello before it refuses."""
                    first = bot_pb2.PlayRequest(hello=bot_pb2.Hello(bot_name="alpha", bot_version="1"))
                    call_ = bot_pb2_grpc.BotServiceStub(via_proxy).Play(  # type: ignore[no-untyped-call]
                        iter([first] if hello else []), metadata=metadata, timeout=15
                    )
                    with pytest.raises(grpc.aio.AioRpcError) as caught:
                        async for _ in call_:
                            pass
                    return caught.value

                async def routed() -> bool:  # the worker in nginx's map, and nginx reloaded
                    refused = await play(route + bearer_metadata("not-a-token"), hello=True)
                    return bool(refused.code() == grpc.StatusCode.UNAUTHENTICATED)  # the worker's answer

                await wait_for(routed, 30, "nginx to route to the worker")
                check = health_pb2.HealthCheckRequest()
                # the worker answers its health service itself; the proxy passes none of it
                reply = await health_pb2_grpc.HealthStub(direct).Check(check, timeout=10)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
                health = health_pb2_grpc.HealthStub(via_proxy)
                for metadata, code in (
                    (route, grpc.StatusCode.UNAUTHENTICATED),
                    (route + bearer_metadata(arena.admin_token), grpc.StatusCode.PERMISSION_DENIED),
                    (route + bearer_metadata(token), grpc.StatusCode.PERMISSION_DENIED),
                ):
                    with pytest.raises(grpc.aio.AioRpcError) as caught:
                        await health.Check(check, metadata=metadata, timeout=10)
                    assert caught.value.code() == code, caught.value
                arena_stub = arena_pb2_grpc.ArenaServiceStub(via_proxy)  # type: ignore[no-untyped-call]
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await arena_stub.ListBots(arena_pb2.ListBotsRequest(), metadata=route + bearer_metadata(token),
                                              timeout=10)  # fmt: skip
                assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
                assert "Play only" in (caught.value.details() or "")

                unknown_route = await play(((ROUTE_HEADER, route_of("10.9.9.9:1")), *bearer_metadata(token)))
                assert unknown_route.code() == grpc.StatusCode.UNAVAILABLE, unknown_route
                no_route = await play(bearer_metadata(token))
                assert no_route.code() == grpc.StatusCode.UNAVAILABLE, no_route
                wrong_token = await play(route + bearer_metadata("not-a-token"), hello=True)  # the worker's refusal
                assert wrong_token.code() == grpc.StatusCode.UNAUTHENTICATED, wrong_token
                assert "unknown bot token" in (wrong_token.details() or ""), wrong_token
            r.close()
            admin.close()

    with nginx_play_proxy(redis_url, tmp_path / "proxy", port, tls=(pki["cert"], pki["key"]),
                          worker_tls=(pki["ca"], "localhost"), child=True):  # fmt: skip
        # nginx as the config process's child, as the containers run it
        asyncio.run(main())
