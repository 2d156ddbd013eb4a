"""One public address: bots play through the gateway's relay, over TLS, with real certificates made at
test time (trustme), and a worker killed mid-match does not make them look anywhere else.

What each test shows:
- a whole match through the gateway over TLS, a worker SIGKILLed mid-match: the relay re-attaches the
  bots' streams to the worker that takes the match over, the result is recorded once, and the
  transcript verifies;
- a client that does not trust the arena's CA, or speaks plaintext to the TLS port, gets no answer
  (UNAVAILABLE) and learns nothing;
- the relay refuses what it must before any worker sees it: no token, an unknown token, no Hello, no
  named match, a match that is not the bot's, a match that does not exist;
- one gateway holds hundreds of sessions (more than the 100 that failed when each held its own Redis
  connection), lists every bot online and hands each its assignment, with a bounded number of Redis
  connections.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
import trustme

from arena import keys
from arena.local.arena import LocalArena
from arena.service.client import ArenaClient
from referee.transcript import verify
from referee.wire import arena_pb2, arena_pb2_grpc, bot_pb2, bot_pb2_grpc
from referee.wire.contract import bearer_metadata
from referee.wire.tls import ClientTls, ServerTls, aio_channel
from sdk.arena_client import ArenaBotRunner
from tests.helpers import (
    FAST,
    QUICK_JOIN,
    SlowRandom,
    call,
    finished,
    register,
    results_recorded,
    service_exit_error,
    wait_for,
)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA made now, and a certificate it signed for this host's loopback names."""
    folder = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    paths = {"ca": folder / "ca.pem", "cert": folder / "cert.pem", "key": folder / "key.pem"}
    ca.cert_pem.write_to_path(str(paths["ca"]))
    cert.private_key_pem.write_to_path(str(paths["key"]))
    cert.cert_chain_pems[0].write_to_path(str(paths["cert"]))
    for blob in cert.cert_chain_pems[1:]:
        blob.write_to_path(str(paths["cert"]), append=True)
    other = trustme.CA()  # a CA the arena never used
    paths["other_ca"] = folder / "other-ca.pem"
    other.cert_pem.write_to_path(str(paths["other_ca"]))
    return paths


def tls_arena(pki: dict[str, Path], tmp_path: Path, redis_url: str, workers: int = 2) -> LocalArena:
    return LocalArena(
        tmp_path, workers=workers, redis_url=redis_url, worker_args=FAST,
        tls=ServerTls(pki["cert"], pki["key"]), tls_ca=pki["ca"],
    )  # fmt: skip


def test_a_match_over_tls_through_the_one_address_survives_a_killed_worker(
    redis_url: str, tmp_path: Path, pki: dict[str, Path]
) -> None:
    async def main() -> None:
        async with tls_arena(pki, tmp_path, redis_url) as arena:
            trust = ClientTls(pki["ca"])
            admin = ArenaClient(arena.gateway, arena.admin_token, tls=trust)
            tokens = await register(admin, "alpha", "beta")
            runners = [
                ArenaBotRunner(SlowRandom(0.03, seed), arena.gateway, tokens[name], tls=trust)
                for name, seed in (("alpha", 1), ("beta", 2))
            ]
            tasks = [asyncio.create_task(r.run()) for r in runners]
            match_id, _ = await call(admin.request_match, "shanghaien", ["alpha", "beta"], time_control=QUICK_JOIN)
            r = redis.Redis.from_url(redis_url)

            async def some_plies() -> bool:
                return int(r.xlen(keys.events(match_id))) > 30

            await wait_for(some_plies, 60, "the match to get going")
            running_on = (await call(admin.describe, match_id)).worker
            victim = next(w for w in arena.workers if running_on.startswith(f"local-{w.index}-"))
            victim.kill()
            m = (await finished(admin, [match_id], 120))[match_id]
            assert m.worker != running_on
            assert m.result.end_reason == 1, m.result.detail  # completed: both bots followed, through the gateway
            assert results_recorded(redis_url) == 1
            text, _ = await call(admin.transcript, match_id)
            events = [json.loads(line) for line in text.splitlines()]
            assert sum(e["type"] == "resumed" for e in events) == 1
            assert not [e for e in events if e["type"] in ("strike", "forfeit")], "the takeover cost nobody a move"
            path = tmp_path / "over-tls.jsonl"
            path.write_text(text)
            assert verify(path) is None
            outcomes = [o for runner in runners for o in runner.outcomes]
            assert {o.match_id for o in outcomes} == {match_id} and len(outcomes) == 2
            for runner in runners:
                runner.stop()
            await asyncio.gather(*tasks, return_exceptions=True)
            r.close()
            admin.close()

    asyncio.run(main())


def test_a_bot_plays_all_its_matches_over_one_tls_connection_to_the_gateway(
    redis_url: str, tmp_path: Path, pki: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's runner opens its session's connection and one more for every match's Play stream: two
    TLS handshakes for any number of matches, not one more each (it was one per match). Closed at the end."""
    opened: list[str] = []

    def counting(address: str, tls: ClientTls | None, *args: Any) -> grpc.aio.Channel:
        opened.append(address)
        return aio_channel(address, tls, *args)

    monkeypatch.setattr("sdk.arena_client.aio_channel", counting)

    async def main() -> None:
        async with tls_arena(pki, tmp_path, redis_url, workers=1) as arena:
            trust = ClientTls(pki["ca"])
            admin = ArenaClient(arena.gateway, arena.admin_token, tls=trust)
            tokens = await register(admin, "alpha", "beta")
            runners = [ArenaBotRunner(SlowRandom(0, i), arena.gateway, tokens[n], tls=trust, max_matches=3)
                       for i, n in enumerate(("alpha", "beta"))]  # fmt: skip
            tasks = [asyncio.create_task(r.run()) for r in runners]
            ids = [(await call(admin.request_match, "shanghaien", ["alpha", "beta"], time_control=QUICK_JOIN))[0]
                   for _ in range(3)]  # fmt: skip
            done = await finished(admin, ids, 120)
            assert all(m.result.end_reason == 1 for m in done.values())
            outcomes = await asyncio.wait_for(asyncio.gather(*tasks), 30)  # max_matches: they return
            assert [sorted(o.match_id for o in out) for out in outcomes] == [sorted(ids)] * 2
            assert opened == [arena.gateway] * 4  # two runners, two connections each
            assert all(r._gateway_channel is None for r in runners)  # closed when the runner returned
            admin.close()

    asyncio.run(main())


def test_untrusted_or_plaintext_clients_get_nothing_from_a_tls_gateway(
    redis_url: str, tmp_path: Path, pki: dict[str, Path]
) -> None:
    async def main() -> None:
        async with tls_arena(pki, tmp_path, redis_url, workers=1) as arena:
            for tls in (None, ClientTls(pki["other_ca"])):
                client = ArenaClient(arena.gateway, arena.admin_token, tls=tls, timeout=3)
                with pytest.raises(Exception) as caught:
                    await call(client.list_bots)
                assert getattr(caught.value, "code", "") == "UNAVAILABLE"
                client.close()
            trusted = ArenaClient(arena.gateway, arena.admin_token, tls=ClientTls(pki["ca"]))
            assert await call(trusted.list_bots) == []
            trusted.close()
            # the name on the certificate is checked: 127.0.0.1 is on it, another name is not
            named = ArenaClient(arena.gateway, "", tls=ClientTls(pki["ca"], "arena.example.org"), timeout=3)
            with pytest.raises(Exception) as caught:
                await call(named.list_bots)
            assert getattr(caught.value, "code", "") == "UNAVAILABLE"
            named.close()

    asyncio.run(main())


async def _play_status(gateway: str, token: str | None, first: bot_pb2.PlayRequest | None) -> grpc.StatusCode:
    """The status a Play stream on the gateway ends with, after sending ``first`` (None: nothing)."""
    async with aio_channel(gateway, None) as channel:
        stub = bot_pb2_grpc.BotServiceStub(channel)  # type: ignore[no-untyped-call]

        async def requests() -> AsyncIterator[bot_pb2.PlayRequest]:
            if first is not None:
                yield first
            await asyncio.sleep(30)

        call_ = stub.Play(requests(), metadata=bearer_metadata(token) if token else ())
        try:
            async for _ in call_:
                pass
        except grpc.aio.AioRpcError as e:
            return e.code()
        return grpc.StatusCode.OK


def test_the_relay_refuses_what_is_not_the_bots_before_any_worker_sees_it(redis_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta", "gamma")
            match_id, _ = await call(admin.request_match, "shanghaien", ["alpha", "beta"], time_control=QUICK_JOIN)

            def hello(*match_ids: str) -> bot_pb2.PlayRequest:
                return bot_pb2.PlayRequest(hello=bot_pb2.Hello(bot_name="x", bot_version="1", match_ids=match_ids))

            action = bot_pb2.PlayRequest(action=bot_pb2.SubmitAction(match_id=match_id, action="x"))
            cases = {
                "no token": (None, hello(match_id), grpc.StatusCode.UNAUTHENTICATED),
                "unknown token": ("arena_" + "x" * 43, hello(match_id), grpc.StatusCode.UNAUTHENTICATED),
                "no hello first": (tokens["alpha"], action, grpc.StatusCode.INVALID_ARGUMENT),
                "no match named": (tokens["alpha"], hello(), grpc.StatusCode.INVALID_ARGUMENT),
                "not its match": (tokens["gamma"], hello(match_id), grpc.StatusCode.PERMISSION_DENIED),
                "no such match": (tokens["alpha"], hello("nope-1"), grpc.StatusCode.NOT_FOUND),
            }
            for what, (token, first, expected) in cases.items():
                assert await _play_status(arena.gateway, token, first) == expected, what
            await call(admin.set_enabled, "alpha", False, "testing")
            status = await _play_status(arena.gateway, tokens["alpha"], hello(match_id))
            assert status == grpc.StatusCode.PERMISSION_DENIED, "a disabled bot"
            admin.close()

    asyncio.run(main())


SESSIONS = 400


def test_one_gateway_holds_hundreds_of_sessions_lists_them_online_and_assigns_each(
    redis_url: str, tmp_path: Path
) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            r = redis.Redis.from_url(redis_url)
            names = [f"b{i:03d}" for i in range(SESSIONS)]
            tokens = {}
            pipe_tokens = await call(lambda: [admin.register_bot(n, "tests", ["shanghaien"], 4)[1] for n in names])
            tokens = dict(zip(names, pipe_tokens, strict=True))
            assigned: dict[str, list[str]] = {n: [] for n in names}
            welcomed: set[str] = set()
            channels = [aio_channel(arena.gateway, None) for _ in range(8)]

            async def session(i: int, name: str) -> None:
                stub = arena_pb2_grpc.ArenaServiceStub(channels[i % len(channels)])  # type: ignore[no-untyped-call]
                stream = stub.OpenSession(arena_pb2.OpenSessionRequest(bot_version="1"),
                                          metadata=bearer_metadata(tokens[name]))  # fmt: skip
                try:
                    async for event in stream:
                        kind = event.WhichOneof("event")
                        if kind == "welcome":
                            welcomed.add(name)
                        elif kind == "assigned":
                            assigned[name].append(event.assigned.match_id)
                except grpc.aio.AioRpcError:
                    return  # the test ends: channels closing cancel the streams

            tasks = [asyncio.create_task(session(i, n)) for i, n in enumerate(names)]
            await wait_for(lambda: _true(len(welcomed) == SESSIONS), 60, "every session's welcome")
            online = [b for b in await call(admin.list_bots) if b.online]
            assert len(online) == SESSIONS
            clients_before = _gateway_clients(r)
            pairs = [(names[i], names[i + 1]) for i in range(0, SESSIONS, 2)]
            match_ids = {}
            for a, b in pairs:
                match_ids[(a, b)], _ = await call(admin.request_match, "shanghaien", [a, b], time_control=QUICK_JOIN)
            await wait_for(
                lambda: _true(all(assigned[n] for n in names)), 120, "every bot's assignment through its session"
            )
            for (a, b), match_id in match_ids.items():
                assert assigned[a][0] == match_id and assigned[b][0] == match_id
            assert not [t for t in tasks if t.done()], "no session ended"
            # Redis connections do not grow with the sessions: the gateway holds at most its thread pool's and
            # two readers' whatever its load (the worker and this test hold a few more)
            assert clients_before < 20 and _gateway_clients(r) < 30, (clients_before, _gateway_clients(r))
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for c in channels:
                await c.close()
            r.close()
            admin.close()

    asyncio.run(main())


async def _true(value: bool) -> bool:
    return value


def _gateway_clients(r: redis.Redis) -> int:
    """Connections to Redis now, all processes together (the gateway is most of them here)."""
    info: Any = r.info("clients")
    return int(info["connected_clients"])


def test_an_arena_on_a_password_protected_redis_plays_and_a_wrong_password_is_a_clear_error(tmp_path: Path) -> None:
    from arena.local.redisproc import RedisProcess

    with RedisProcess(tmp_path / "redis", password="s3cret/with:odd@chars") as server:
        assert "s3cret" not in server.url.split("@")[1]
        anonymous = redis.Redis(port=server.port)
        with pytest.raises(redis.AuthenticationError):
            anonymous.ping()
        anonymous.close()

        async def main() -> None:
            async with LocalArena(tmp_path / "arena", workers=1, redis_url=server.url, worker_args=FAST) as arena:
                admin = ArenaClient(arena.gateway, arena.admin_token)
                tokens = await register(admin, "alpha", "beta")
                runners = [ArenaBotRunner(SlowRandom(0, i), arena.gateway, tokens[n]) for i, n in enumerate(tokens)]
                tasks = [asyncio.create_task(r.run()) for r in runners]
                match_id, _ = await call(admin.request_match, "shanghaien", ["alpha", "beta"])
                m = (await finished(admin, [match_id], 120))[match_id]
                assert m.result.end_reason == 1
                for runner in runners:
                    runner.stop()
                await asyncio.gather(*tasks, return_exceptions=True)
                admin.close()

        asyncio.run(main())
        wrong = server.url.replace("s3cret", "wrong")
        with pytest.raises(redis.AuthenticationError):
            redis.Redis.from_url(wrong).ping()


@pytest.mark.parametrize(
    "token",
    [
        "change-me",
        "arena_admin_" + "x" * 60,
        "0123456789abcdef" * 2,
        "arena_admin_" + "Ab3-" * 12,
        "short-but-Random-9",
    ],
)
def test_a_weak_admin_token_is_refused_at_start_up_with_a_clear_message(token: str, redis_url: str) -> None:
    """Every service refuses to start with the example token or one with less than 32 bytes of randomness."""
    import subprocess

    from arena.local.arena import arena_command

    for name in ("gateway", "worker", "serve"):
        command = [name, "--redis", redis_url]
        done = subprocess.run(
            arena_command(*command, "--listen", "127.0.0.1:0", "--admin-token", token),
            check=False, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, (command, done.stderr)
        # gateway and worker log JSON to stderr, so their exit report is a JSON line too; serve logs to files
        # and speaks to the person who started it
        prefix = "arena: error: "
        error = done.stderr.removeprefix(prefix) if name == "serve" else service_exit_error(done.stderr)
        assert name != "serve" or done.stderr.startswith(prefix), done.stderr
        assert error.startswith("refusing to start: the admin token"), done.stderr
        assert "secrets.token_urlsafe(32)" in error and done.stdout == ""


def test_strong_tokens_pass_the_strength_check() -> None:
    import secrets

    from arena.tokens import new_bot_token, weak_token_reason

    for _ in range(500):
        admin = "arena_admin_" + secrets.token_urlsafe(32)
        for token in (secrets.token_urlsafe(32), secrets.token_hex(32), new_bot_token(), admin):
            assert weak_token_reason(token) is None, token


def test_the_deploy_files_expose_only_the_gateway_and_wire_tls_and_the_redis_password() -> None:
    """deploy/check_public.py (also run by deploy/validate.sh) finds nothing wrong with the shipped files."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(root / "deploy" / "check_public.py")], check=False,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout
