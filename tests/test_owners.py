"""Owners (bot authors with their own tokens), the callers tokens name, weak secrets and per-token rate
limits: the stores against a real Redis, the rules through a real gateway (and two gateways sharing one
Redis for the limits), and the ``arena owner`` commands. Who may call what, cell by cell, is
test_authz_matrix.py."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis

from arena import config, keys
from arena.redis_client import connect
from arena.service.auth import ANONYMOUS, CallerKind, resolve_caller, weak_token_reason
from arena.service.client import ArenaClient
from arena.service.gateway import ArenaServicer
from arena.service.matches import MatchStore
from arena.service.owners import REFERENCE_OWNER, OwnerError, OwnerQuotaError, Owners, UnknownOwnerError
from arena.service.ratelimit import REQUEST, RateLimiter, RateLimits
from arena.service.registry import Registry
from referee.wire import arena_pb2, arena_pb2_grpc
from referee.wire.contract import bearer_metadata
from referee.wire.values import token_sha256
from tests.helpers import arena_in_process, call, early_in_window, gateway, refused, setup_owner_world

ADMIN_TOKEN = "arena_admin_" + secrets.token_urlsafe(32)


@pytest.fixture
def r(redis_url: str) -> Any:
    client = connect(redis_url)
    Registry(client).set_admin_token(ADMIN_TOKEN)
    yield client
    client.close()


# ---------------------------------------------------------------------- the owners store


def test_an_owners_token_is_shown_once_and_stored_as_its_hash_only(r: Any) -> None:
    owners = Owners(r)
    owner, token = owners.create("alice", max_bots=3)
    assert (owner.name, owner.max_bots) == ("alice", 3) and owner.created_at > 0
    assert token.startswith("arena_owner_") and weak_token_reason(token) is None
    stored = {k: v for k in r.keys("*") for v in ([r.get(k)] if r.type(k) == b"string" else r.hvals(k)
                                                   if r.type(k) == b"hash" else [])}  # fmt: skip
    assert all(token.encode() not in (v or b"") for v in stored.values()), "the token itself is nowhere in Redis"
    assert owner.token_sha256 == token_sha256(token)
    assert owners.authenticate(token) == owner and owners.get("alice") == owner
    assert owners.find("bob") is None and owners.authenticate("arena_owner_" + "x" * 43) is None
    assert owners.authenticate("") is None
    assert [o.name for o in owners.list()] == ["alice"]


def test_owner_names_are_checked_and_the_reference_owner_is_reserved(r: Any) -> None:
    owners = Owners(r)
    owners.create("alice")
    for name, why in (("alice", "exists already"), (REFERENCE_OWNER, "reference bots"), ("", "bad owner name"),
                      ("a b", "bad owner name"), ("x" * 41, "bad owner name")):  # fmt: skip
        with pytest.raises(OwnerError, match=why):
            owners.create(name)
    with pytest.raises(OwnerError, match="max_bots"):
        owners.create("carol", max_bots=0)
    assert [o.name for o in owners.list()] == ["alice"]


def test_rotating_an_owners_token_stops_the_old_one_at_once(r: Any) -> None:
    owners = Owners(r)
    _, old = owners.create("alice")
    new = owners.rotate_token("alice")
    assert new != old and owners.authenticate(old) is None and owners.authenticate(new) is not None
    assert resolve_caller(r, old) is None
    with pytest.raises(UnknownOwnerError):
        owners.rotate_token("nobody")


def test_an_owners_bots_are_those_naming_it_and_max_bots_holds_under_concurrent_registrations(r: Any) -> None:
    owners, registry = Owners(r), Registry(r)
    owners.create("alice", max_bots=3)
    registry.register("by-admin", "alice", ["shanghaien"])  # the admin registered it for alice: it counts
    registry.register("other", "bob", ["shanghaien"])
    assert owners.bot_names("alice") == ["by-admin"]
    assert owners.owners_of(["by-admin", "other", "ghost"]) == {"by-admin": "alice", "other": "bob", "ghost": ""}

    def register(i: int) -> str:
        try:
            owners.register_bot(registry, "alice", f"b{i}", ["shanghaien"], 4)
            return "ok"
        except OwnerQuotaError:
            return "full"

    with ThreadPoolExecutor(8) as pool:
        outcomes = sorted(pool.map(register, range(8)))
    assert outcomes == ["full"] * 6 + ["ok"] * 2
    assert len(owners.bot_names("alice")) == 3 and owners.bot_counts() == {"alice": 3, "bob": 1}
    assert not r.exists(keys.owner_registering("alice")), "the lock is released"


# ---------------------------------------------------------------------- callers and secrets


def test_a_token_names_one_caller_in_one_round_trip(r: Any) -> None:
    owners, registry = Owners(r), Registry(r)
    _, owner_token = owners.create("alice")
    _, bot_token = registry.register("b1", "alice", ["shanghaien"])
    assert resolve_caller(r, None) is ANONYMOUS and resolve_caller(r, "") is ANONYMOUS
    admin = resolve_caller(r, ADMIN_TOKEN)
    assert admin is not None and (admin.kind, admin.token_sha256) == (CallerKind.ADMIN, token_sha256(ADMIN_TOKEN))
    owner = resolve_caller(r, owner_token)
    assert owner is not None and (owner.kind, owner.name) == (CallerKind.OWNER, "alice")
    bot = resolve_caller(r, bot_token)
    assert bot is not None and (bot.kind, bot.name, bot.enabled) == (CallerKind.BOT, "b1", True)
    registry.set_enabled("b1", False, "resting")
    bot = resolve_caller(r, bot_token)
    assert bot is not None and not bot.enabled
    assert resolve_caller(r, "arena_" + secrets.token_urlsafe(32)) is None
    new = registry.rotate_token("b1")
    assert resolve_caller(r, bot_token) is None and resolve_caller(r, new) is not None

    sent: list[Any] = []
    execute = r.execute_command

    def counting(*args: Any, **kwargs: Any) -> Any:
        sent.append(args[0])
        return execute(*args, **kwargs)

    r.execute_command = counting
    try:
        resolve_caller(r, new)
    finally:
        del r.execute_command
    assert sent == ["EVALSHA"], "one round trip (the script, loaded once)"


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("change-me", "example value"),
        ("", "empty"),
        ("arena_admin_" + "a" * 60, "distinct characters"),
        ("0123456789abcdef" * 4, "one piece repeated"),
        ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "neighbouring"),
        ("arena_admin_" + secrets.token_urlsafe(24), "192 bits"),  # 24 bytes: not enough
        (secrets.token_hex(31), "248 bits"),
    ],
)
def test_weak_secrets_are_refused_with_how_to_make_a_good_one(token: str, why: str) -> None:
    reason = weak_token_reason(token)
    assert reason is not None and why in reason and "secrets.token_urlsafe(32)" in reason


def test_the_arenas_own_tokens_and_32_random_bytes_pass() -> None:
    from arena.tokens import new_admin_token, new_bot_token, new_owner_token

    for _ in range(200):
        for token in (new_bot_token(), new_owner_token(), new_admin_token(),
                      secrets.token_hex(32), secrets.token_urlsafe(32)):  # fmt: skip
            assert weak_token_reason(token) is None, token


# ---------------------------------------------------------------------- rate limits


def test_a_limit_refuses_past_its_count_until_the_window_ends_whichever_limiter_counts(r: Any) -> None:
    first = RateLimiter(r, {REQUEST: 2}, window_s=1.5)
    second = RateLimiter(redis.Redis(connection_pool=r.connection_pool), {REQUEST: 2}, window_s=1.5)
    early_in_window(r, 1.5)  # so that the three calls share a window
    assert first.check(REQUEST, "h") is None and second.check(REQUEST, "h") is None
    retry = first.check(REQUEST, "h")
    assert retry == 2.0 or retry == 1.0  # whole seconds, rounded up, at least 1
    assert second.check(REQUEST, "other-token") is None, "per token"
    assert first.check("session", "h") is None, "a kind without a limit is unlimited"
    time.sleep(1.6)
    assert second.check(REQUEST, "h") is None, "a new window"
    assert 0 < r.pttl(keys.rate(REQUEST, "h")) <= 1500


def test_limits_come_from_the_settings() -> None:
    defaults = config.Settings.defaults()
    assert RateLimits.from_settings(defaults) == RateLimits(120, 30, 60)
    flags = replace(defaults, match_requests_per_min="5", rate_window_s="2.5")  # flag values are text
    assert RateLimits.from_settings(flags) == RateLimits(120, 5, 2.5)
    with pytest.raises(ValueError, match="match_requests_per_min"):
        RateLimits.from_settings(replace(defaults, match_requests_per_min="lots"))
    with pytest.raises(ValueError):
        RateLimits(window_s=0)


def test_the_gateway_takes_its_limits(redis_url: str) -> None:
    async def main() -> None:
        servicer = ArenaServicer(redis_url, limits=RateLimits(session_opens=7, match_requests=3, window_s=9))
        try:
            assert servicer.limiter.limits == {"session": 7, "request": 3} and servicer.limiter.window_s == 9
        finally:
            await servicer.close()

    asyncio.run(main())


def test_match_requests_past_the_limit_are_refused_with_a_retry_hint_across_two_gateways(
    redis_url: str, r: Any
) -> None:
    tokens = setup_owner_world(r)
    window = 3

    async def main() -> None:
        limits = RateLimits(session_opens=100, match_requests=2, window_s=window)
        clients = [connect(redis_url), connect(redis_url)]  # each gateway its own limiter, one Redis
        async with gateway(redis_url, limiter=RateLimiter.from_limits(clients[0], limits)) as a1, \
                gateway(redis_url, limiter=RateLimiter.from_limits(clients[1], limits)) as a2:  # fmt: skip
            channels = [grpc.aio.insecure_channel(a) for a in (a1, a2)]
            stubs = [arena_pb2_grpc.ArenaServiceStub(c) for c in channels]  # type: ignore[no-untyped-call]
            md = bearer_metadata(tokens["me"])
            request = arena_pb2.RequestMatchRequest(game_id="shanghaien", bot_names=["mine", "ref"])

            async def status(stub: Any, metadata: Any = md) -> grpc.StatusCode:
                try:
                    await stub.RequestMatch(request, metadata=metadata)
                except grpc.aio.AioRpcError as e:
                    return e.code()
                return grpc.StatusCode.OK

            await asyncio.to_thread(early_in_window, r, window)  # so that the calls below share one window
            statuses = [await status(s) for s in (stubs[0], stubs[1], stubs[0])]  # one limit, in Redis
            assert statuses == [grpc.StatusCode.OK, grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED]
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await stubs[1].RequestMatch(request, metadata=md)
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "retry in" in (e.value.details() or "")
            retry = int(dict(e.value.trailing_metadata() or ())["retry-after-s"])
            assert 1 <= retry <= window and f"retry in {retry} s" in (e.value.details() or "")
            await asyncio.sleep(retry + 0.1)  # the window is over: accepted again
            assert await status(stubs[1]) == grpc.StatusCode.OK
            assert await status(stubs[0], bearer_metadata(tokens["them"])) == grpc.StatusCode.PERMISSION_DENIED
            for _ in range(4):  # the admin is not limited
                assert await status(stubs[0], bearer_metadata(ADMIN_TOKEN)) == grpc.StatusCode.OK
            for c in channels:
                await c.close()
        for client in clients:
            client.close()

    asyncio.run(main())


# ---------------------------------------------------------------------- owners through the gateway


def test_an_owners_life_through_the_gateway(redis_url: str, r: Any) -> None:
    async def main() -> None:
        async with gateway(redis_url) as address:
            admin = ArenaClient(address, ADMIN_TOKEN)
            record, token = await call(admin.create_owner, "alice", 2)
            assert (record.name, record.max_bots, record.bots) == ("alice", 2, 0)
            assert await refused(admin.create_owner, "alice") == "ALREADY_EXISTS"
            assert await refused(admin.create_owner, "arena") == "INVALID_ARGUMENT"
            assert (await call(admin.create_owner, "bob"))[0].max_bots == 10  # the default

            alice = ArenaClient(address, token)
            bot, bot_token = await call(alice.register_bot, "a1", "someone-else", ["shanghaien"])
            assert bot.owner == "alice" and weak_token_reason(bot_token) is None  # the owner field is the caller's
            await call(alice.register_bot, "a2", "", ["shanghaien"])
            assert await refused(alice.register_bot, "a3", "alice", ["shanghaien"]) == "RESOURCE_EXHAUSTED"
            assert await refused(alice.register_bot, "a1", "alice", ["shanghaien"]) == "RESOURCE_EXHAUSTED"
            listed = {o.name: (o.bots, o.max_bots) for o in await call(admin.list_owners)}
            assert listed == {"alice": (2, 2), "bob": (0, 10)}
            assert await refused(alice.list_owners) == "PERMISSION_DENIED"

            new = await call(alice.rotate_owner_token, "alice")  # the owner rotates its own token
            assert await refused(alice.list_bots) == "UNAUTHENTICATED", "the old token is nobody's, even on reads"
            alice = ArenaClient(address, new)
            assert len(await call(alice.list_bots)) == 2
            newer = await call(admin.rotate_owner_token, "alice")  # ... or the admin does
            assert await refused(alice.rotate_token, "a1") == "UNAUTHENTICATED"
            alice = ArenaClient(address, newer)
            assert await refused(admin.rotate_owner_token, "nobody") == "NOT_FOUND"
            for c in (admin, alice):
                c.close()

    asyncio.run(main())


def test_a_registration_sent_again_with_its_request_id_is_the_same_registration(redis_url: str, r: Any) -> None:
    """RegisterBot and CreateOwner sent twice with one request id (a retry whose first answer was lost): the
    same bot or owner, a fresh token that works and a first one that no longer does, past the owner's
    max_bots too; another owner's call with that id, or another id, is told the name is taken; a malformed
    id is INVALID_ARGUMENT and changes nothing. (tests/test_redis_failover.py: the same across a failover.)"""

    async def main() -> None:
        async with gateway(redis_url) as address:
            admin = ArenaClient(address, ADMIN_TOKEN)
            _, owner_token = await call(admin.create_owner, "olive", 1, "owner-request-1")
            again, owner_token2 = await call(admin.create_owner, "olive", 1, "owner-request-1")
            assert again.name == "olive" and owner_token2 != owner_token
            assert await refused(admin.create_owner, "olive", 1, "owner-request-2") == "ALREADY_EXISTS"
            olive = ArenaClient(address, owner_token)
            assert await refused(olive.list_bots) == "UNAUTHENTICATED"  # the first answer's token is gone
            olive = ArenaClient(address, owner_token2)
            _, first = await call(olive.register_bot, "olive-bot", "", ["shanghaien"], 0, "bot-request-1")
            bot, second = await call(olive.register_bot, "olive-bot", "", ["shanghaien"], 0, "bot-request-1")
            assert bot.owner == "olive" and second != first  # past max_bots 1: the retry's bot is that one
            assert Registry(r).authenticate(first) is None and Registry(r).authenticate(second) is not None
            # another id is a new registration: past max_bots (the quota is counted before the name)
            assert await refused(olive.register_bot, "olive-bot", "", ["shanghaien"], 0, "bot-request-2") == (
                "RESOURCE_EXHAUSTED")  # fmt: skip
            assert await refused(admin.register_bot, "olive-bot", "other", ["shanghaien"], 0, "bot-request-1") == (
                "ALREADY_EXISTS")  # fmt: skip
            assert await refused(admin.register_bot, "new-bot", "olive", ["shanghaien"], 0, "bad id!") == (
                "INVALID_ARGUMENT")  # fmt: skip
            assert Registry(r).find("new-bot") is None
            for c in (admin, olive):
                c.close()

    asyncio.run(main())


def test_an_owner_manages_its_own_bots_and_nothing_of_another_owners(redis_url: str, r: Any) -> None:
    tokens = setup_owner_world(r)

    async def main() -> None:
        async with gateway(redis_url) as address:
            me = ArenaClient(address, tokens["me"])
            denied = (
                lambda: me.set_enabled("theirs", False), lambda: me.rotate_token("theirs"),
                lambda: me.request_match("shanghaien", ["theirs", "ref"]),  # none of mine
                lambda: me.request_match("shanghaien", ["mine", "theirs"]),  # another owner's bot
                lambda: me.request_match("shanghaien", ["ref", "ref"]),  # reference bots only
                lambda: me.request_match("shanghaien", ["mine", "ref"], rated=True),  # rated
                lambda: me.rotate_owner_token("them"),
            )  # fmt: skip
            for fn in denied:
                assert await refused(fn) == "PERMISSION_DENIED"
            assert await refused(me.rotate_token, "ghost") == "NOT_FOUND"
            assert await refused(me.set_enabled, "ghost", False) == "NOT_FOUND"
            await call(me.register_bot, "second", "", ["shanghaien"])
            assert (await call(me.set_enabled, "second", False, "resting")).enabled is False
            assert (await call(me.set_enabled, "second", True)).enabled is True
            assert await call(me.rotate_token, "second")
            mine_vs_mine, _ = await call(me.request_match, "shanghaien", ["mine", "second"])
            mine_vs_ref, _ = await call(me.request_match, "shanghaien", ["ref", "mine"])
            admin = ArenaClient(address, ADMIN_TOKEN)
            theirs, _ = await call(admin.request_match, "shanghaien", ["theirs", "ref"], rated=True)
            owned = {m.match_id for m in await call(ArenaClient(address).list_matches, owner="me")}
            assert owned == {mine_vs_mine, mine_vs_ref}
            assert {m.match_id for m in await call(admin.list_matches, owner="them")} == {theirs}
            assert [m.match_id for m in await call(admin.list_matches, owner="me", bot_name="second")] == [mine_vs_mine]
            assert await call(admin.list_matches, owner="nobody") == []
            for c in (me, admin):
                c.close()

    asyncio.run(main())


def test_a_disabled_bots_token_reads_public_data_only(redis_url: str, r: Any) -> None:
    registry = Registry(r)
    _, token = registry.register("b1", "someone", ["shanghaien"])
    registry.register("b2", "someone", ["shanghaien"])
    match_id, _ = MatchStore(r).request("shanghaien", ["b1", "b2"])
    r.set(keys.transcript(match_id), '{"type":"refusal","ply":0,"seat":0,"action":"x","code":"syntax","reason":"r"}\n')
    registry.set_enabled("b1", False, "resting")

    async def main() -> None:
        async with gateway(redis_url) as address:
            bot = ArenaClient(address, token)
            assert [b.name for b in await call(bot.list_bots)] == ["b1", "b2"]
            jsonl, full = await call(bot.transcript, match_id)
            assert not full and '"reason"' not in jsonl
            assert await refused(bot.rotate_token, "b1") == "PERMISSION_DENIED"
            registry.set_enabled("b1", True)
            jsonl, full = await call(bot.transcript, match_id)
            assert full and '"reason"' in jsonl
            assert await call(bot.rotate_token, "b1")
            bot.close()

    asyncio.run(main())


# ---------------------------------------------------------------------- the CLI


def test_arena_owner_commands_print_json_only(
    redis_url: str, r: Any, cli_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def main() -> None:
        async with gateway(redis_url) as address:
            arena = partial(arena_in_process, address, capsys)
            code, created = await arena("owner", "create", "alice", "--max-bots", "2", "--admin-token", ADMIN_TOKEN)
            assert code == 0 and created["owner"]["name"] == "alice" and created["owner"]["max_bots"] == 2
            owner_token = created["token"]
            code, listed = await arena("owner", "list", "--admin-token", ADMIN_TOKEN)
            assert code == 0 and [o["name"] for o in listed] == ["alice"]
            code, bot = await arena("bot", "register", "a1", "--game", "shanghaien",
                                    env={"ARENA_OWNER_TOKEN": owner_token})  # fmt: skip
            assert code == 0 and bot["bot"]["owner"] == "alice" and bot["token"].startswith("arena_")
            code, rotated = await arena("bot", "rotate-token", "a1", "--owner-token", owner_token)
            assert code == 0 and rotated["name"] == "a1"
            code, rotated = await arena("owner", "rotate", "alice", "--owner-token", owner_token)
            assert code == 0 and rotated["token"] != owner_token
            code, err = await arena("owner", "list", env={"ARENA_OWNER_TOKEN": rotated["token"]})
            assert code == 1 and "needs the admin token" in err and len(err.strip().splitlines()) == 1

    asyncio.run(main())


@pytest.mark.parametrize(
    ("flags", "why"),
    [(["--rate-window-s", "0"], "rate window"), (["--session-opens-per-min", "-1"], "0 (none) or more"),
     (["--match-requests-per-min", "many"], "match_requests_per_min"), ([], "admin token"),
     (["--admin-token", ""], "admin token")],
)  # fmt: skip
def test_the_gateway_refuses_bad_settings_at_start_up(flags: list[str], why: str, tmp_path: Path) -> None:
    """A real ``arena gateway`` process (in-process, its JSON log set-up would outlive the test)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")} | {"HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "gateway", "--listen", "127.0.0.1:0", "--redis", "redis://127.0.0.1:1/0",
         *(flags if why == "admin token" else ["--admin-token", ADMIN_TOKEN, *flags])],
        check=False, capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and why in done.stderr and "refusing to start" in done.stderr, done.stderr
