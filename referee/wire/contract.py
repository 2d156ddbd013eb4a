"""The hand-written side of the wire contract at the gRPC edge: conversions between the wire's values
(``referee.wire.values``) and protobuf messages, the enum maps, bearer-token parsing and gRPC server
set-up.

Python code passes typed values (``MatchResult``, ``EndReason``, ``TimeControl`` ...); protobuf
messages exist only at the edges, converted here. Each Python enum's values are its proto enum's
names without the prefix, in lower case (``EndReason.COMPLETED`` <-> ``END_REASON_COMPLETED``), so
one pair of functions maps them all and a new enum value needs no new table.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any, Final, NoReturn, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from referee import games
from referee.games import TimeControl
from referee.wire._generated.arena.v1 import arena_pb2, bot_pb2, match_pb2
from referee.wire.values import EndReason, MatchResult, MatchStatus, RefusalCode, SeatStatus

MAX_MESSAGE_BYTES: Final = 256 * 1024
"""The largest message a bot may send (the referee says so in ``Welcome``)."""

SERVER_OPTIONS: Final = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", 8 * 1024 * 1024),
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.keepalive_permit_without_calls", 1),
]


# ------------------------------------------------------------------------------- enums

E = TypeVar("E", bound=StrEnum)

_PROTO_ENUMS: Final[dict[type[StrEnum], tuple[Any, str]]] = {
    EndReason: (match_pb2.EndReason, "END_REASON_"),
    SeatStatus: (match_pb2.SeatStatus, "SEAT_STATUS_"),
    MatchStatus: (arena_pb2.MatchState, "MATCH_STATE_"),
    RefusalCode: (bot_pb2.RefusalCode, "REFUSAL_CODE_"),
}


def to_proto_enum(value: StrEnum) -> int:
    """The proto enum number of a Python enum value."""
    wrapper, prefix = _PROTO_ENUMS[type(value)]
    number: int = wrapper.Value(prefix + value.value.upper())
    return number


def from_proto_enum(cls: type[E], number: int) -> E | None:
    """The Python enum value of a proto enum number; None for ``*_UNSPECIFIED`` or an unknown number."""
    wrapper, prefix = _PROTO_ENUMS[cls]
    try:
        name: str = wrapper.Name(number)
    except ValueError:
        return None
    try:
        return cls(name.removeprefix(prefix).lower())
    except ValueError:
        return None


# ------------------------------------------------------------------------------- messages


def control_to_proto(tc: TimeControl) -> match_pb2.TimeControl:
    return match_pb2.TimeControl(**tc.to_dict())


def control_from_proto(tc: match_pb2.TimeControl, game_id: str) -> TimeControl:
    """The game's default time control with the fields the message sets (0 or absent: the default).
    ValueError names a field out of range."""
    return games.get(game_id).time_control.with_overrides(**{f.name: int(v) for f, v in tc.ListFields()})


def result_to_proto(r: MatchResult) -> match_pb2.MatchResult:
    return match_pb2.MatchResult(
        match_id=r.match_id,
        game_id=r.game_id,
        end_reason=to_proto_enum(r.end_reason),  # type: ignore[arg-type]
        seats=[
            match_pb2.SeatResult(
                seat=s.seat, bot_name=s.bot_name, bot_version=s.bot_version, score=s.score, rank=s.rank,
                status=to_proto_enum(s.status), strikes=s.strikes, refusals=s.refusals,  # type: ignore[arg-type]
            )
            for s in r.seats
        ],
        seed=r.seed,
        seed_sha256=r.seed_sha256,
        plies=r.plies,
        detail=r.detail,
    )  # fmt: skip


# ------------------------------------------------------------------------------- bearer tokens


def bearer_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """The call metadata that carries ``token`` (none for an empty token)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


def bearer(context: grpc.aio.ServicerContext) -> str | None:
    """The token of a call's ``authorization: Bearer <token>`` metadata, or None."""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization" and isinstance(value, str) and value.startswith("Bearer "):
            return value[len("Bearer ") :].strip() or None
    return None


# ------------------------------------------------------------------------------- servers


async def abort(context: grpc.aio.ServicerContext, code: grpc.StatusCode, message: str) -> NoReturn:
    """End the call with ``code`` (typed NoReturn, so checkers know the handler stops here)."""
    await context.abort(code, message)
    raise AssertionError("unreachable: abort raises")


def service_name(module: Any, service: str) -> str:
    """The full name of a service of a generated module (``service_name(bot_pb2, "BotService")``)."""
    name: str = module.DESCRIPTOR.services_by_name[service].full_name
    return name


async def serve(server: grpc.aio.Server, services: Sequence[str], address: str) -> int:
    """Start ``server`` (its servicers added) on ``address`` with gRPC health checking (every one of
    ``services`` and the whole server SERVING) and reflection, so grpcurl and grpc_health_probe work.
    Returns the port (``address`` with port 0: any free port)."""
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    names = (*services, service_name(health_pb2, "Health"), reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server)
    port: int = server.add_insecure_port(address)
    await server.start()
    for name in ("", *services):
        await health.set(name, health_pb2.HealthCheckResponse.SERVING)
    return port
