"""Who may call what: every RPC of every service the gateway serves (ArenaService, LadderService,
EventService and the relayed BotService.Play) against every kind of caller, each answered with the expected outcome. One
pytest case per cell (ids like ``RegisterBot-bot``), so the matrix's size is the count of cases:
``pytest tests/test_authz_matrix.py -q --co`` lists them, ``-k RotateToken`` picks a row, ``-k disabled_bot``
a column; ``test_the_matrix_covers_every_rpc_of_the_gateways_services`` prints the table (``-s``).

Callers (columns): no token; a wrong token; a bot's token (bot ``mine`` of owner ``me``); another
owner's token (``them``); the bot's own owner's token (``me``); the admin token; and the refused kinds:
``mine``'s token before its rotation, ``me``'s token before its rotation, and the token of ``off``, a
disabled bot of ``me``. Outcomes: a gRPC status, or for GetTranscript ``full``/``public`` (OK, with or
without the refusal reasons a seat may see).

Adding rows (the hook): a service's RPCs join the matrix when its descriptor is in ``SERVICES`` with the
host that serves it; ``HOSTS`` starts a host for a cell (an async context manager taking the Redis URL
and yielding the address to dial), ``STUBS`` names the stub class, and each of its methods needs a
``Row`` in ``ROWS``; ``test_the_matrix_covers_every_rpc`` fails until every method has one. RefereeService
on a worker would be ``SERVICES.append(("worker", referee_pb2...RefereeService))``, ``HOSTS["worker"] =``
a worker started with ``ADMIN_TOKEN``, ``STUBS["RefereeService"] = RefereeServiceStub`` and three rows.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import grpc
import pytest

from arena import keys
from arena.events.model import Entrant, Event
from arena.events.service import host_ladder_and_events
from arena.events.store import EventStore
from arena.redis_client import connect
from arena.service.gateway import start_gateway
from arena.service.matches import MatchStore
from arena.service.owners import Owners
from arena.service.registry import Registry
from referee.transcript import Refusal
from referee.wire import (
    arena_pb2,
    arena_pb2_grpc,
    bot_pb2,
    bot_pb2_grpc,
    event_pb2,
    event_pb2_grpc,
    ladder_pb2,
    ladder_pb2_grpc,
)
from referee.wire.contract import bearer_metadata

OK = grpc.StatusCode.OK
UNAUTH = grpc.StatusCode.UNAUTHENTICATED
DENIED = grpc.StatusCode.PERMISSION_DENIED
FULL, PUBLIC_FORM = "full", "public"
Outcome: TypeAlias = "grpc.StatusCode | str"

CALLERS = ("none", "wrong", "bot", "other_owner", "own_owner", "admin", "rotated_bot", "rotated_owner", "disabled_bot")
ADMIN_TOKEN = "arena_admin_" + "Zq8" * 15 + "x9"


def row(
    none: Outcome,
    wrong: Outcome,
    bot: Outcome,
    other: Outcome,
    own: Outcome,
    admin: Outcome,
    disabled: Outcome = DENIED,
) -> dict[str, Outcome]:
    """Expected outcomes by caller. The rotated-away tokens are nobody's: UNAUTHENTICATED on every call.
    A disabled bot's token: PERMISSION_DENIED unless given (what needs no token)."""
    return {"none": none, "wrong": wrong, "bot": bot, "other_owner": other, "own_owner": own, "admin": admin,
            "rotated_bot": UNAUTH, "rotated_owner": UNAUTH, "disabled_bot": disabled}  # fmt: skip


PUBLIC = row(OK, UNAUTH, OK, OK, OK, OK, disabled=OK)
ADMIN_ONLY = row(UNAUTH, UNAUTH, DENIED, DENIED, DENIED, OK)


@dataclass(frozen=True)
class Ctx:
    """What a call needs: its metadata, the ids of the fixture's matches, and ``bot``: the calling bot's
    own name for bot tokens (``mine`` or ``off``), else ``mine`` (so bots act on themselves)."""

    md: tuple[tuple[str, str], ...]
    ids: dict[str, str]
    bot: str


@dataclass(frozen=True)
class Row:
    rpc: str  # "Service/Method"
    expect: dict[str, Outcome]
    call: Callable[[Any, Ctx], Awaitable[Any]]  # (the service's stub on its host, ctx) -> awaitable


async def _first(stream: Any) -> None:
    """A server stream's first message (a welcome, a transcript line), then let it go."""
    async for _ in stream:
        stream.cancel()
        return


async def _play(stub: Any, c: Ctx) -> None:
    async def requests() -> AsyncIterator[bot_pb2.PlayRequest]:
        yield bot_pb2.PlayRequest(hello=bot_pb2.Hello(bot_name="mine", bot_version="1", match_ids=[c.ids["queued"]]))
        await asyncio.sleep(30)

    call = stub.Play(requests(), metadata=c.md)
    message = await call.read()
    if message is grpc.aio.EOF:
        await call  # raises with the status
    assert message.WhichOneof("message") == "welcome"
    call.cancel()


async def _transcript(stub: Any, c: Ctx) -> str:
    r = await stub.GetTranscript(arena_pb2.GetTranscriptRequest(match_id=c.ids["finished"]), metadata=c.md)
    reasons = '"reason"' in r.jsonl
    assert r.full == reasons, "the full flag says whether refusal reasons are in"
    return FULL if r.full else PUBLIC_FORM


a, lp, ev = arena_pb2, ladder_pb2, event_pb2
ROWS: list[Row] = [
    # an owner registers for itself (the request's owner field is ignored); a bot never
    Row("ArenaService/RegisterBot", row(UNAUTH, UNAUTH, DENIED, OK, OK, OK),
        lambda s, c: s.RegisterBot(a.RegisterBotRequest(name="fresh", owner="me", game_ids=["shanghaien"]),
                                   metadata=c.md)),
    # of the caller's own bot: the bot itself (not once disabled), its owner, the admin
    Row("ArenaService/RotateToken", row(UNAUTH, UNAUTH, OK, DENIED, OK, OK),
        lambda s, c: s.RotateToken(a.RotateTokenRequest(name=c.bot), metadata=c.md)),
    Row("ArenaService/SetBotEnabled", row(UNAUTH, UNAUTH, DENIED, DENIED, OK, OK),
        lambda s, c: s.SetBotEnabled(a.SetBotEnabledRequest(name="mine", enabled=True), metadata=c.md)),
    # of the caller's own bot, for good (mine): its owner, the admin
    Row("ArenaService/RetireBot", row(UNAUTH, UNAUTH, DENIED, DENIED, OK, OK),
        lambda s, c: s.RetireBot(a.RetireBotRequest(name="mine", reason="testing"), metadata=c.md)),
    Row("ArenaService/AddBotGames", row(UNAUTH, UNAUTH, DENIED, DENIED, OK, OK),
        lambda s, c: s.AddBotGames(a.AddBotGamesRequest(name="mine", game_ids=["shangrila-3p"]), metadata=c.md)),
    Row("ArenaService/ListBots", PUBLIC, lambda s, c: s.ListBots(a.ListBotsRequest(), metadata=c.md)),
    # unrated, mine against a reference bot
    Row("ArenaService/RequestMatch", row(UNAUTH, UNAUTH, DENIED, DENIED, OK, OK),
        lambda s, c: s.RequestMatch(a.RequestMatchRequest(game_id="shanghaien", bot_names=["mine", "ref"]),
                                    metadata=c.md)),
    Row("ArenaService/DescribeMatch", PUBLIC,
        lambda s, c: s.DescribeMatch(a.DescribeMatchRequest(match_id=c.ids["queued"]), metadata=c.md)),
    Row("ArenaService/ListMatches", PUBLIC,
        lambda s, c: s.ListMatches(a.ListMatchesRequest(owner="me"), metadata=c.md)),
    Row("ArenaService/FollowMatch", PUBLIC,
        lambda s, c: _first(s.FollowMatch(a.FollowMatchRequest(match_id=c.ids["finished"]), metadata=c.md))),
    # the finished match of mine (seat 0) and off (seat 1), a refusal each: whose reasons the caller reads
    Row("ArenaService/GetTranscript", row(PUBLIC_FORM, UNAUTH, FULL, PUBLIC_FORM, FULL, FULL, disabled=PUBLIC_FORM),
        _transcript),
    Row("ArenaService/CreateOwner", ADMIN_ONLY,
        lambda s, c: s.CreateOwner(a.CreateOwnerRequest(name="newcomer"), metadata=c.md)),
    Row("ArenaService/ListOwners", ADMIN_ONLY, lambda s, c: s.ListOwners(a.ListOwnersRequest(), metadata=c.md)),
    Row("ArenaService/SetOwnerMaxBots", ADMIN_ONLY,
        lambda s, c: s.SetOwnerMaxBots(a.SetOwnerMaxBotsRequest(name="me", max_bots=20), metadata=c.md)),
    Row("ArenaService/RotateOwnerToken", row(UNAUTH, UNAUTH, DENIED, DENIED, OK, OK),
        lambda s, c: s.RotateOwnerToken(a.RotateOwnerTokenRequest(name="me"), metadata=c.md)),
    # sessions and Play are bots' (the token of mine; Play: mine's queued match, relayed)
    Row("ArenaService/OpenSession", row(UNAUTH, UNAUTH, OK, DENIED, DENIED, DENIED),
        lambda s, c: _first(s.OpenSession(a.OpenSessionRequest(bot_version="1"), metadata=c.md))),
    Row("BotService/Play", row(UNAUTH, UNAUTH, OK, DENIED, DENIED, DENIED), _play),
    Row("LadderService/GetLeaderboard", PUBLIC,
        lambda s, c: s.GetLeaderboard(lp.GetLeaderboardRequest(game_id="shanghaien"), metadata=c.md)),
    Row("LadderService/GetRatingHistory", PUBLIC,
        lambda s, c: s.GetRatingHistory(lp.GetRatingHistoryRequest(game_id="shanghaien", bot_name="mine"),
                                        metadata=c.md)),
    Row("LadderService/GetHeadToHead", PUBLIC,
        lambda s, c: s.GetHeadToHead(lp.GetHeadToHeadRequest(game_id="shanghaien"), metadata=c.md)),
    # events: the admin's alone (the fixture's event "cup": mine@1 against theirs@1)
    Row("EventService/CreateEvent", ADMIN_ONLY,
        lambda s, c: s.CreateEvent(ev.CreateEventRequest(event_id="fresh", game_id="shanghaien", format="round-robin",
                                                         entrants=["mine@1", "ref@1"]), metadata=c.md)),
    Row("EventService/ListEvents", ADMIN_ONLY, lambda s, c: s.ListEvents(ev.ListEventsRequest(), metadata=c.md)),
    Row("EventService/GetEvent", ADMIN_ONLY,
        lambda s, c: s.GetEvent(ev.GetEventRequest(event_id="cup"), metadata=c.md)),
    Row("EventService/ChangeEvent", ADMIN_ONLY,
        lambda s, c: s.ChangeEvent(ev.ChangeEventRequest(event_id="cup", action="pause"), metadata=c.md)),
    Row("EventService/ExportEvent", ADMIN_ONLY,
        lambda s, c: s.ExportEvent(ev.ExportEventRequest(event_id="cup", format="csv"), metadata=c.md)),
]  # fmt: skip


@contextlib.asynccontextmanager
async def gateway_host(redis_url: str) -> AsyncIterator[str]:
    server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0", host_ladder_and_events)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(0)
        await servicer.close()


HOSTS: dict[str, Callable[[str], contextlib.AbstractAsyncContextManager[str]]] = {"gateway": gateway_host}
SERVICES: list[tuple[str, Any]] = [
    ("gateway", arena_pb2.DESCRIPTOR.services_by_name["ArenaService"]),
    ("gateway", ladder_pb2.DESCRIPTOR.services_by_name["LadderService"]),
    ("gateway", bot_pb2.DESCRIPTOR.services_by_name["BotService"]),
    ("gateway", event_pb2.DESCRIPTOR.services_by_name["EventService"]),
]
STUBS: dict[str, Any] = {
    "ArenaService": arena_pb2_grpc.ArenaServiceStub,
    "LadderService": ladder_pb2_grpc.LadderServiceStub,
    "BotService": bot_pb2_grpc.BotServiceStub,
    "EventService": event_pb2_grpc.EventServiceStub,
}

CELLS = [(r, caller) for r in ROWS for caller in CALLERS]


def _cell_id(r: Row, caller: str) -> str:
    method = r.rpc.split("/")[1]
    unique = sum(x.rpc.split("/")[1] == method for x in ROWS) == 1
    return f"{method if unique else r.rpc.replace('/', '.')}-{caller}"


def _setup(redis_url: str) -> tuple[dict[str, str], dict[str, str]]:
    """Owners ``me`` and ``them``; bots ``mine`` and ``off`` (me's, off disabled), ``theirs`` and ``ref`` (a
    reference bot, owner ``arena``); a queued match of mine against ref, a finished one of mine against off
    with a refusal on each seat; both tokens rotated once (the old ones kept). The token of each caller."""
    r = connect(redis_url)
    registry, owners = Registry(r), Owners(r)
    registry.set_admin_token(ADMIN_TOKEN)
    _, me_before = owners.create("me")
    me = owners.rotate_token("me")
    _, them = owners.create("them")
    _, mine_before = registry.register("mine", "me", ["shanghaien"])
    mine = registry.rotate_token("mine")
    _, off = registry.register("off", "me", ["shanghaien"])
    registry.register("theirs", "them", ["shanghaien"])
    registry.register("ref", "arena", ["shanghaien"])
    store = MatchStore(r)
    queued, _ = store.request("shanghaien", ["mine", "ref"])
    finished, _ = store.request("shanghaien", ["mine", "off"])
    refusals = [Refusal(ply=p, seat=p, action="nonsense", code="syntax", reason=f"seat {p}: not a move").to_line()
                for p in (0, 1)]  # fmt: skip
    r.set(keys.transcript(finished), "\n".join(refusals) + "\n")
    EventStore(r).create(Event("cup", "shanghaien", "round-robin", (Entrant("mine", "1"), Entrant("theirs", "1")), 2))
    registry.set_enabled("off", False, "testing")
    r.close()
    tokens = {"none": "", "wrong": "arena_" + "Q" * 43, "bot": mine, "other_owner": them, "own_owner": me,
              "admin": ADMIN_TOKEN, "rotated_bot": mine_before, "rotated_owner": me_before,
              "disabled_bot": off}  # fmt: skip
    return tokens, {"queued": queued, "finished": finished}


async def _outcome(call: Awaitable[Any]) -> Outcome:
    try:
        result = await call
    except grpc.aio.AioRpcError as e:
        return e.code()
    return result if isinstance(result, str) else OK


def test_the_matrix_covers_every_rpc_of_the_gateways_services() -> None:
    served = {f"{d.name}/{m.name}" for _, d in SERVICES for m in d.methods}
    assert [r.rpc for r in ROWS] == list(dict.fromkeys(r.rpc for r in ROWS)), "one row per RPC"
    assert {r.rpc for r in ROWS} == served
    assert all(set(r.expect) == set(CALLERS) for r in ROWS)
    assert {d.name for _, d in SERVICES} <= set(STUBS) and {h for h, _ in SERVICES} <= set(HOSTS)
    assert len(CELLS) == len(served) * len(CALLERS) == 25 * 9  # the matrix's size: update it with new rows
    width = max(len(r.rpc) for r in ROWS)
    SHORT: dict[Outcome, str] = {OK: "OK", UNAUTH: "UNAUTH", DENIED: "DENIED"}  # noqa: N806
    print(f"\n{len(ROWS)} RPCs x {len(CALLERS)} callers = {len(CELLS)} cells")
    print(" " * width, *(f"{c[:13]:>13}" for c in CALLERS))
    for r in ROWS:
        print(f"{r.rpc:<{width}}", *(f"{SHORT.get(r.expect[c], r.expect[c]):>13}" for c in CALLERS))


@pytest.mark.parametrize(("r", "caller"), CELLS, ids=[_cell_id(r, c) for r, c in CELLS])
def test_authorization(r: Row, caller: str, redis_url: str) -> None:
    tokens, ids = _setup(redis_url)
    service = r.rpc.split("/")[0]
    host = next(h for h, d in SERVICES if d.name == service)
    ctx = Ctx(bearer_metadata(tokens[caller]) if tokens[caller] else (), ids,
              {"bot": "mine", "disabled_bot": "off"}.get(caller, "mine"))  # fmt: skip

    async def main() -> Outcome:
        async with HOSTS[host](redis_url) as address, grpc.aio.insecure_channel(address) as channel:
            stub = STUBS[service](channel)
            return await asyncio.wait_for(_outcome(r.call(stub, ctx)), 20)

    assert asyncio.run(main()) == r.expect[caller]


def test_a_token_is_checked_on_every_call_whatever_came_before(redis_url: str) -> None:
    """One gateway, one method, callers in turn: an interceptor's handler is kept per method, so a check
    that lived in the handler's choice (not its behaviour) would let the first caller decide for all."""
    tokens, _ = _setup(redis_url)

    async def main() -> list[Outcome]:
        async with gateway_host(redis_url) as address, grpc.aio.insecure_channel(address) as channel:
            stub = ladder_pb2_grpc.LadderServiceStub(channel)  # type: ignore[no-untyped-call]
            request = ladder_pb2.GetLeaderboardRequest(game_id="shanghaien")
            out = []
            for caller in ("none", "wrong", "none", "admin", "wrong", "bot"):
                md = bearer_metadata(tokens[caller]) if tokens[caller] else ()
                out.append(await _outcome(stub.GetLeaderboard(request, metadata=md)))
            return out

    assert asyncio.run(main()) == [OK, UNAUTH, OK, OK, UNAUTH, OK]
