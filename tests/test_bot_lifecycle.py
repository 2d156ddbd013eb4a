"""A bot's life after registration, and what strangers see: the admin changes an owner's limit, an owner
(or the admin) retires a bot or adds a game to it, names that look like another bot's or the arena's are
refused, match listings keep the workers' addresses for the admin, the leaderboard names each bot's owner,
and the CLI commands for each. Against a real Redis and a real gateway; who may call the new RPCs, cell by
cell, is in test_authz_matrix.py."""

from __future__ import annotations

import asyncio
import secrets
from functools import partial
from typing import Any

import grpc
import pytest

from arena import keys
from arena.cli.main import main as arena_main
from arena.ladder.service import host_ladder
from arena.ladder.store import Ladder
from arena.redis_client import connect
from arena.service import names
from arena.service.client import ArenaClient
from arena.service.matches import MatchStore
from arena.service.owners import Owners
from arena.service.registry import DuplicateBotError, Registry
from referee.wire import arena_pb2
from tests.helpers import arena_in_process, call, gateway, refused

ADMIN_TOKEN = "arena_admin_" + secrets.token_urlsafe(32)


@pytest.fixture
def r(redis_url: str) -> Any:
    client = connect(redis_url)
    Registry(client).set_admin_token(ADMIN_TOKEN)
    yield client
    client.close()


def _owner(r: Any, name: str, max_bots: int = 10) -> str:
    return Owners(r).create(name, max_bots)[1]


# ---------------------------------------------------------------------- the admin and an owner's limit


def test_the_admin_raises_an_owners_limit_and_the_owner_registers_again(redis_url: str, r: Any) -> None:
    token = _owner(r, "alice", 1)

    async def main() -> None:
        async with gateway(redis_url) as address:
            admin, alice = ArenaClient(address, ADMIN_TOKEN), ArenaClient(address, token)
            await call(alice.register_bot, "a1", "", ["shanghaien"])
            assert await refused(alice.register_bot, "a2", "", ["shanghaien"]) == "RESOURCE_EXHAUSTED"
            assert await refused(admin.create_owner, "alice", 5) == "ALREADY_EXISTS"  # not the way
            owner = await call(admin.set_owner_max_bots, "alice", 3)
            assert (owner.name, owner.max_bots, owner.bots) == ("alice", 3, 1)
            await call(alice.register_bot, "a2", "", ["shanghaien"])
            assert await refused(admin.set_owner_max_bots, "nobody", 3) == "NOT_FOUND"
            assert await refused(admin.set_owner_max_bots, "alice", 0) == "INVALID_ARGUMENT"
            assert await refused(alice.set_owner_max_bots, "alice", 100) == "PERMISSION_DENIED"
            assert (await call(admin.set_owner_max_bots, "alice", 1)).bots == 2  # lowered: its bots stay
            assert await refused(alice.register_bot, "a3", "", ["shanghaien"]) == "RESOURCE_EXHAUSTED"
            admin.close()
            alice.close()

    asyncio.run(main())


# ---------------------------------------------------------------------- retiring a bot, adding a game


def test_a_retired_bot_stops_playing_keeps_its_name_and_history_and_frees_its_place(redis_url: str, r: Any) -> None:
    token = _owner(r, "alice", 1)
    registry = Registry(r)
    _, ref_token = registry.register("ref", "arena", ["shanghaien"])

    async def main() -> None:
        async with gateway(redis_url, extra=host_ladder) as address:
            alice = ArenaClient(address, token)
            _, bot_token = await call(alice.register_bot, "old", "", ["shanghaien"])
            match_id, _ = await call(alice.request_match, "shanghaien", ["old", "ref"])
            r.set(keys.transcript(match_id), '{"type":"refusal","ply":0,"seat":0,"action":"x","code":"syntax",'
                  '"reason":"r"}\n')  # fmt: skip

            bot = await call(alice.retire, "old", "replaced")
            assert bot.retired_at > 0 and not bot.enabled and bot.disabled_reason == "retired: replaced"
            assert (await call(alice.retire, "old")).retired_at == bot.retired_at  # once and for all
            # it plays no more: no session, no new match, never enabled again, no new game
            assert await refused(alice.set_enabled, "old", True) == "FAILED_PRECONDITION"
            assert await refused(alice.request_match, "shanghaien", ["old", "ref"]) == "INVALID_ARGUMENT"
            assert await refused(alice.add_games, "old", ["shangrila-3p"]) == "FAILED_PRECONDITION"

            def open_session() -> str:
                with ArenaClient(address, bot_token) as c:
                    try:
                        next(c.stub.OpenSession(arena_pb2.OpenSessionRequest(bot_version="1"), metadata=c._md()))
                    except grpc.RpcError as e:
                        return str(e.code().name)
                return "OK"

            assert await call(open_session) == "PERMISSION_DENIED"
            # its name stays taken (by anyone), its records stay readable
            assert await refused(alice.register_bot, "old", "", ["shanghaien"]) == "ALREADY_EXISTS"
            listed = {b.name: b for b in await call(ArenaClient(address).list_bots)}
            assert listed["old"].retired_at == bot.retired_at
            assert [m.match_id for m in await call(alice.list_matches, bot_name="old")] == [match_id]
            jsonl, full = await call(alice.transcript, match_id)
            assert full and '"reason"' in jsonl
            # and it no longer counts against the owner's limit
            assert (await call(alice.register_bot, "new", "", ["shanghaien"]))[0].owner == "alice"
            owners = {o.name: o.bots for o in await call(ArenaClient(address, ADMIN_TOKEN).list_owners)}
            assert owners["alice"] == 1
            assert await refused(ArenaClient(address, ref_token).retire, "ref") == "PERMISSION_DENIED"
            alice.close()

    asyncio.run(main())


def test_a_game_is_added_to_an_existing_bot_by_its_owner_or_the_admin(redis_url: str, r: Any) -> None:
    token, other = _owner(r, "alice"), _owner(r, "bob")

    async def main() -> None:
        async with gateway(redis_url) as address:
            alice, bob, admin = (ArenaClient(address, t) for t in (token, other, ADMIN_TOKEN))
            await call(alice.register_bot, "a1", "", ["shanghaien"])
            assert list((await call(alice.add_games, "a1", ["shangrila-3p"])).game_ids) == ["shanghaien",
                                                                                          "shangrila-3p"]  # fmt: skip
            both = await call(admin.add_games, "a1", ["shangrila-4p", "shanghaien"])  # one it has: kept once
            assert list(both.game_ids) == ["shanghaien", "shangrila-3p", "shangrila-4p"]
            assert await refused(bob.add_games, "a1", ["shangrila-3p"]) == "PERMISSION_DENIED"
            assert await refused(alice.add_games, "a1", ["chess"]) == "INVALID_ARGUMENT"
            assert await refused(alice.add_games, "ghost", ["shanghaien"]) == "NOT_FOUND"
            assert [b.game_ids for b in await call(alice.list_bots, "shangrila-4p")] == [both.game_ids]
            for c in (alice, bob, admin):
                c.close()

    asyncio.run(main())


# ---------------------------------------------------------------------- names


@pytest.mark.parametrize("name", ["Strong", "STRONG", "s-trong", "str_ong", "str.ong", "str0ng", "a1ice", "Alice"])
def test_names_that_look_like_a_registered_one_fold_to_it(name: str) -> None:
    registered = "strong" if "r" in name.lower() else "alice"
    assert names.fold(name) == names.fold(registered)


def test_look_alikes_of_a_bot_and_the_arenas_names_are_refused(redis_url: str, r: Any) -> None:
    token = _owner(r, "mallory")
    registry = Registry(r)
    registry.register("strong", "arena", ["shanghaien"])
    registry.register("oliver", "alice", ["shanghaien"])
    r.sadd(keys.bots(), "legacy")  # a bot from before the name index: the gateway indexes it at start
    r.hset(keys.bot("legacy"), mapping={"name": "legacy", "owner": "alice", "games": '["shanghaien"]'})

    async def main() -> None:
        async with gateway(redis_url) as address:
            mallory, admin = ArenaClient(address, token), ArenaClient(address, ADMIN_TOKEN)
            for look_alike in ("Oliver", "o-liver", "oli.ver", "0liver", "OL1VER", "Legacy", "1egacy"):
                assert await refused(mallory.register_bot, look_alike, "", ["shanghaien"]) == "ALREADY_EXISTS"
                assert await refused(admin.register_bot, look_alike, "x", ["shanghaien"]) == "ALREADY_EXISTS"
            for look_alike in ("Strong", "s-trong", "STR0NG"):  # the admin may use reserved names, not look-alikes
                assert await refused(admin.register_bot, look_alike, "x", ["shanghaien"]) == "ALREADY_EXISTS"
            for reserved in ("arena", "Admin", "gateway", "referee", "system", "random", "greedy", "reference",
                             "r-e-f-e-r-e-e"):  # fmt: skip
                assert await refused(mallory.register_bot, reserved, "", ["shanghaien"]) == "PERMISSION_DENIED"
            assert (await call(admin.register_bot, "greedy", "arena", ["shanghaien"]))[0].name == "greedy"
            assert (await call(mallory.register_bot, "strongest", "", ["shanghaien"]))[0].owner == "mallory"
            mallory.close()
            admin.close()

    asyncio.run(main())
    with pytest.raises(DuplicateBotError, match="looks like"):
        Registry(r).register("GREEDY", "arena", ["shanghaien"])


# ---------------------------------------------------------------------- what strangers see


def test_match_listings_show_the_workers_to_the_admin_only(redis_url: str, r: Any) -> None:
    registry = Registry(r)
    _, bot_token = registry.register("b1", "alice", ["shanghaien"])
    registry.register("b2", "alice", ["shanghaien"])
    owner_token = _owner(r, "alice")
    match_id, _ = MatchStore(r).request("shanghaien", ["b1", "b2"])
    r.hset(keys.match(match_id), mapping={"worker": "worker-7f3a", "address": "10.0.3.17:50061"})

    async def main() -> None:
        async with gateway(redis_url) as address:
            for token in ("", bot_token, owner_token):
                c = ArenaClient(address, token)
                for m in [*await call(c.list_matches), await call(c.describe, match_id)]:
                    assert (m.match_id, m.worker, m.referee_address) == (match_id, "", ""), token[:6]
                c.close()
            admin = ArenaClient(address, ADMIN_TOKEN)
            for m in [*await call(admin.list_matches), await call(admin.describe, match_id)]:
                assert (m.worker, m.referee_address) == ("worker-7f3a", "10.0.3.17:50061")
            admin.close()

    asyncio.run(main())


def _rate(r: Any) -> None:
    """One rated result of b1 (alice's) against ref (the arena's), applied to the ladder."""
    seats = [{"seat": s, "bot_name": n, "bot_version": "1", "score": 2 - s, "rank": 1 + s, "status": "active",
              "strikes": 0, "refusals": 0} for s, n in enumerate(("b1", "ref"))]  # fmt: skip
    assert Ladder(r).apply({"match_id": "m1", "game_id": "shanghaien", "end_reason": "completed", "rated": True,
                            "finished_at": 1_700_000_000.0, "seats": seats, "plies": 50, "seed": "1",
                            "seed_sha256": "x", "detail": ""})  # fmt: skip


# ---------------------------------------------------------------------- the CLI


def test_the_cli_sets_an_owners_limit_retires_a_bot_and_adds_a_game(
    redis_url: str, r: Any, cli_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    owner_token = _owner(r, "alice", 1)
    admin, owner = ("--admin-token", ADMIN_TOKEN), ("--owner-token", owner_token)

    async def main() -> None:
        async with gateway(redis_url, extra=host_ladder) as address:
            arena = partial(arena_in_process, address, capsys)

            assert (await arena("bot", "register", "b1", "--game", "shanghaien", *owner))[0] == 0
            code, raised = await arena("owner", "set-max-bots", "alice", "2", *admin)
            assert code == 0 and (raised["name"], raised["max_bots"], raised["bots"]) == ("alice", 2, 1)
            code, err = await arena("owner", "set-max-bots", "alice", "5", "--admin-token", owner_token)
            assert code == 1 and "PERMISSION_DENIED" in err
            code, bot = await arena("bot", "add-game", "b1", "--game", "shangrila-3p", *owner)
            assert code == 0 and bot["game_ids"] == ["shanghaien", "shangrila-3p"]
            assert (await arena("bot", "register", "b2", "--game", "shanghaien", *owner))[0] == 0
            code, retired = await arena("bot", "retire", "b2", "--reason", "spare", *owner)
            assert code == 0 and retired["retired_at"] > 0 and retired["enabled"] is False

    asyncio.run(main())


def test_matches_list_takes_an_owner(
    redis_url: str, r: Any, cli_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = Registry(r)
    registry.register("ref", "arena", ["shanghaien"])
    registry.register("b1", "alice", ["shanghaien"])

    async def main() -> None:
        async with gateway(redis_url, extra=host_ladder) as address:
            arena = partial(arena_in_process, address, capsys)

            mine, _ = MatchStore(r).request("shanghaien", ["b1", "ref"])
            MatchStore(r).request("shanghaien", ["ref", "ref"])
            code, listed = await arena("matches", "list", "--owner", "alice")
            assert code == 0 and [m["match_id"] for m in listed] == [mine]
            assert all(m["worker"] == "" and m["referee_address"] == "" for m in listed)

    asyncio.run(main())


def test_the_ladder_shows_each_bots_owner_in_its_table_and_json(
    redis_url: str, r: Any, cli_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = Registry(r)
    registry.register("ref", "arena", ["shanghaien"])
    registry.register("b1", "alice", ["shanghaien"])

    async def main() -> None:
        async with gateway(redis_url, extra=host_ladder) as address:
            _rate(r)
            code, board = await arena_in_process(address, capsys, "ladder", "show", "--game", "shanghaien")
            assert code == 0 and {row["name"]: row["owner"] for row in board["rows"]} == {"b1": "alice", "ref": "arena"}
            assert await call(arena_main, ["ladder", "show", "--game", "shanghaien", "--gateway", address]) == 0
            table = capsys.readouterr().out
            assert "owner" in table and "alice" in table

    asyncio.run(main())


def test_transcript_get_says_which_tokens_read_refusals_and_takes_the_owners(
    redis_url: str, r: Any, cli_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        arena_main(["transcript", "get", "--help"])
    helped = " ".join(capsys.readouterr().out.split())
    assert "--owner-token" in helped and "ARENA_OWNER_TOKEN" in helped and "refusals" in helped
    registry = Registry(r)
    registry.register("b1", "alice", ["shanghaien"])
    registry.register("b2", "bob", ["shanghaien"])
    owner_token = _owner(r, "alice")
    match_id, _ = MatchStore(r).request("shanghaien", ["b1", "b2"])
    r.set(keys.transcript(match_id), '{"type":"refusal","ply":0,"seat":0,"action":"x","code":"syntax","reason":"r"}\n')

    async def main() -> None:
        async with gateway(redis_url) as address:
            arena = partial(arena_in_process, address, capsys)
            code, (got,) = await arena("transcript", "get", match_id, "--owner-token", owner_token)
            assert code == 0 and got["full"] is True and got["transcript"][0]["reason"] == "r"
            code, (public,) = await arena("transcript", "get", match_id)
            assert code == 0 and public["full"] is False

    asyncio.run(main())
