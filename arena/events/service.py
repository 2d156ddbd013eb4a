"""``arena.v1.EventService`` on the gateway (hosted through its ``extra`` hook, as the ladder's service
is): the admin creates, lists, shows, pauses, resumes, cancels and exports events. Every call needs the
admin token: no token or an unknown one is UNAUTHENTICATED, a bot's or an owner's PERMISSION_DENIED (the
gateway's ``RefusalWatch`` logs and counts each refusal). Redis calls run in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Final, TypeVar

import grpc
import redis
import structlog

from arena.events.model import (
    DEFAULT_GRACE_S,
    DEFAULT_SHARE,
    DuplicateEventError,
    Event,
    EventError,
    EventStateError,
    UnknownEventError,
)
from arena.events.standings import to_csv
from arena.events.store import EventStore
from arena.redis_client import TROUBLE, trouble
from arena.service.auth import CallerKind, resolve_caller
from referee.wire import event_pb2, event_pb2_grpc, match_pb2
from referee.wire.contract import abort, bearer

log = structlog.get_logger("arena.events")
T = TypeVar("T")

NEEDED: Final = "events need the admin token"
STATUS: Final[dict[type[Exception], grpc.StatusCode]] = {
    EventError: grpc.StatusCode.INVALID_ARGUMENT,
    DuplicateEventError: grpc.StatusCode.ALREADY_EXISTS,
    EventStateError: grpc.StatusCode.FAILED_PRECONDITION,
    UnknownEventError: grpc.StatusCode.NOT_FOUND,
}


def record(summary: dict[str, Any]) -> event_pb2.EventRecord:
    """The ``event`` part of ``EventStore.summary`` on the wire."""
    e = summary["event"]
    return event_pb2.EventRecord(
        event_id=e["event_id"], game_id=e["game_id"], format=e["format"],
        entrants=[event_pb2.EventEntrant(name=x["name"], version=x["version"]) for x in e["entrants"]],
        games_per_pairing=e["games_per_pairing"], time_control=match_pb2.TimeControl(**e["time_control"]),
        start_at=e["start_at"], rated=e["rated"], rounds=e["rounds"], share=e["share"], grace_s=e["grace_s"],
        created_at=e["created_at"], state=e["state"], matches_played=e["matches_played"],
        matches_forfeited=e["matches_forfeited"], matches_remaining=e["matches_remaining"],
    )  # fmt: skip


class EventServicer(event_pb2_grpc.EventServiceServicer):
    def __init__(self, client: redis.Redis) -> None:
        self.r = client
        self.store = EventStore(client)

    async def _admin(self, context: grpc.aio.ServicerContext) -> None:
        token = bearer(context)
        caller = await self._call(context, resolve_caller, self.r, token)
        if caller is None:
            await abort(context, grpc.StatusCode.UNAUTHENTICATED, "unknown token (wrong, or rotated away)")
        if caller.kind is CallerKind.ANONYMOUS:
            await abort(
                context, grpc.StatusCode.UNAUTHENTICATED, "events need the admin token ('authorization: Bearer')"
            )
        if caller.kind is not CallerKind.ADMIN:
            await abort(
                context, grpc.StatusCode.PERMISSION_DENIED, f"events need the admin token, not {caller.kind.value}'s"
            )

    async def _call(self, context: grpc.aio.ServicerContext, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a thread; its refusals as their statuses, Redis's absence as UNAVAILABLE."""
        try:
            return await asyncio.to_thread(fn, *args)
        except TROUBLE as e:
            await abort(context, grpc.StatusCode.UNAVAILABLE, f"redis unavailable: {trouble(e)}")
        except (EventError, UnknownEventError) as e:
            await abort(context, STATUS[type(e)], str(e))

    async def CreateEvent(  # noqa: N802 (gRPC method names)
        self, request: event_pb2.CreateEventRequest, context: grpc.aio.ServicerContext
    ) -> event_pb2.CreateEventResponse:
        await self._admin(context)
        entrants = await self._call(context, self.store.entrants, request.game_id, list(request.entrants), request.top)
        tc = {f.name: v for f, v in request.time_control.ListFields()} if request.HasField("time_control") else {}
        event = Event(
            event_id=request.event_id, game_id=request.game_id, format=request.format,  # type: ignore[arg-type]
            entrants=entrants, games_per_pairing=request.games_per_pairing or 2, time_control=tc,
            start_at=request.start_at, rated=request.rated, rounds=request.rounds,
            share=request.share or DEFAULT_SHARE, grace_s=request.grace_s if request.grace_s >= 0 else DEFAULT_GRACE_S,
        )  # fmt: skip
        created = await self._call(context, self.store.create, event)
        log.info("event created", event_id=created.event_id, game_id=created.game_id, entrants=len(entrants))
        summary = await self._call(context, self.store.summary, created.event_id)
        return event_pb2.CreateEventResponse(event=record(summary))

    async def ListEvents(  # noqa: N802
        self, request: event_pb2.ListEventsRequest, context: grpc.aio.ServicerContext
    ) -> event_pb2.ListEventsResponse:
        await self._admin(context)
        ids = await self._call(context, self.store.ids)
        out = []
        for event_id in ids:
            try:
                out.append(record(await self._call(context, self.store.summary, event_id)))
            except UnknownEventError:
                continue
        return event_pb2.ListEventsResponse(events=out)

    async def GetEvent(  # noqa: N802
        self, request: event_pb2.GetEventRequest, context: grpc.aio.ServicerContext
    ) -> event_pb2.GetEventResponse:
        await self._admin(context)
        summary = await self._call(context, self.store.summary, request.event_id)
        return event_pb2.GetEventResponse(event=record(summary), standings_json=json.dumps(summary, allow_nan=False))

    async def ChangeEvent(  # noqa: N802
        self, request: event_pb2.ChangeEventRequest, context: grpc.aio.ServicerContext
    ) -> event_pb2.ChangeEventResponse:
        await self._admin(context)
        state = await self._call(context, self.store.change, request.event_id, request.action)
        log.info("event changed", event_id=request.event_id, action=request.action, state=state.value)
        summary = await self._call(context, self.store.summary, request.event_id)
        return event_pb2.ChangeEventResponse(event=record(summary))

    async def ExportEvent(  # noqa: N802
        self, request: event_pb2.ExportEventRequest, context: grpc.aio.ServicerContext
    ) -> event_pb2.ExportEventResponse:
        await self._admin(context)
        if request.format not in ("csv", "json"):
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "export format: csv or json")
        summary = await self._call(context, self.store.summary, request.event_id)
        text = to_csv(summary["standings"]) if request.format == "csv" else json.dumps(summary, allow_nan=False)
        return event_pb2.ExportEventResponse(text=text)


def host_events(server: grpc.aio.Server, redis_url: str) -> list[str]:
    """Add EventService to the gateway's server; returns its service name (the ``extra`` hook)."""
    from arena.redis_client import connect

    servicer = EventServicer(connect(redis_url))
    event_pb2_grpc.add_EventServiceServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    return [event_pb2.DESCRIPTOR.services_by_name["EventService"].full_name]


def host_ladder_and_events(server: grpc.aio.Server, redis_url: str) -> list[str]:
    """The gateway's ``extra`` for a whole arena: the ladder's service and the events'."""
    from arena.ladder.service import host_ladder

    return host_ladder(server, redis_url) + host_events(server, redis_url)
