"""The ladder over gRPC (``arena.v1.LadderService``): leaderboards, rating histories, head-to-head.

Read-only; protobuf conversion happens here (to the wire) and in ``arena.ladder.client`` (back). Redis calls are
synchronous (redis-py), so each handler runs them in a worker thread and the event loop stays free.
"""

from __future__ import annotations

import asyncio

import grpc

from arena.ladder.elo import Row
from arena.ladder.fit import Fitted
from arena.ladder.store import Ladder
from referee.wire import ladder_pb2, ladder_pb2_grpc


def row_to_proto(rank: int, row: Row, owner: str = "", fitted: Fitted | None = None) -> ladder_pb2.LadderRow:
    status = ladder_pb2.RATING_STATUS_PROVISIONAL if row.provisional else ladder_pb2.RATING_STATUS_ESTABLISHED
    wire = ladder_pb2.LadderRow(
        rank=rank, bot_name=row.name, bot_version=row.version, rating=row.rating, error=row.error,
        games=row.games, wins=row.wins, draws=row.draws, losses=row.losses, last_played=row.last_played,
        status=status, info=row.info, owner=owner,
    )  # fmt: skip
    if fitted is not None:
        wire.fit_rating, wire.fit_sd, wire.fit_games = fitted.rating, fitted.sd, fitted.games
    return wire


class LadderServicer(ladder_pb2_grpc.LadderServiceServicer):
    def __init__(self, ladder: Ladder) -> None:
        self.ladder = ladder

    async def GetLeaderboard(  # noqa: N802 (gRPC method names)
        self, request: ladder_pb2.GetLeaderboardRequest, context: grpc.aio.ServicerContext
    ) -> ladder_pb2.GetLeaderboardResponse:
        if not request.game_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "game_id is required")
        limit = request.limit or None
        standings = await asyncio.to_thread(self.ladder.leaderboard, request.game_id, limit, request.offset)
        total = await asyncio.to_thread(self.ladder.size, request.game_id)
        rows = [row_to_proto(s.rank, s.row, s.owner, s.fit) for s in standings]
        return ladder_pb2.GetLeaderboardResponse(rows=rows, total=total)

    async def GetRatingHistory(  # noqa: N802
        self, request: ladder_pb2.GetRatingHistoryRequest, context: grpc.aio.ServicerContext
    ) -> ladder_pb2.GetRatingHistoryResponse:
        if not request.game_id or not request.bot_name:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "game_id and bot_name are required")
        history = await asyncio.to_thread(
            self.ladder.history, request.game_id, request.bot_name, request.bot_version or None
        )
        series = [
            ladder_pb2.LadderRatingSeries(
                bot_name=name,
                bot_version=version,
                points=[
                    ladder_pb2.LadderRatingPoint(finished_at=p.finished_at, rating=p.rating, match_id=p.match_id)
                    for p in points
                ],
            )
            for (name, version), points in history.items()
        ]
        return ladder_pb2.GetRatingHistoryResponse(series=series)

    async def GetHeadToHead(  # noqa: N802
        self, request: ladder_pb2.GetHeadToHeadRequest, context: grpc.aio.ServicerContext
    ) -> ladder_pb2.GetHeadToHeadResponse:
        if not request.game_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "game_id is required")
        records = await asyncio.to_thread(self.ladder.h2h, request.game_id, request.bot_name or None)
        return ladder_pb2.GetHeadToHeadResponse(
            records=[
                ladder_pb2.LadderHeadToHead(
                    a_name=h.a[0],
                    a_version=h.a[1],
                    b_name=h.b[0],
                    b_version=h.b[1],
                    a_wins=h.a_wins,
                    draws=h.draws,
                    b_wins=h.b_wins,
                )
                for h in records
            ]
        )


def add_to_server(ladder: Ladder, server: grpc.aio.Server) -> LadderServicer:
    """Register the ladder service on an aio server (the arena's, or one of its own)."""
    servicer = LadderServicer(ladder)
    ladder_pb2_grpc.add_LadderServiceServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    return servicer


def host_ladder(server: grpc.aio.Server, redis_url: str) -> list[str]:
    """Add LadderService to another process's server (the gateway's); returns the service names.
    The gateway's ``extra`` hook: the ladder stays out of the gateway's imports."""
    from arena.redis_client import connect

    add_to_server(Ladder(connect(redis_url)), server)
    return [ladder_pb2.DESCRIPTOR.services_by_name["LadderService"].full_name]
