"""A small synchronous client of ``arena.v1.LadderService`` (served by the gateway), for the CLI and
scripts: the same reads as ``arena.ladder.store.Ladder`` and the same typed values back (``Standing``,
``Row``, ``HistoryPoint``, ``HeadToHead``), so whatever shows a ladder (``arena.ladder.report``) takes
either. The protobuf answers are converted back here, and nowhere else.

A refused or failed call raises ``arena.errors.ArenaError`` (the gRPC status name and message);
the gateway not answering is ``UNAVAILABLE``."""

from __future__ import annotations

from typing import Final

from arena.gateway_client import GatewayClient
from arena.ladder.elo import BotKey, Row
from arena.ladder.fit import Fitted
from arena.ladder.values import HeadToHead, HistoryPoint, Standing
from referee import games
from referee.wire import ladder_pb2, ladder_pb2_grpc

PAGE: Final = 10_000
"""Leaderboard rows per call (about 1 MB): a whole ladder of 100,000 versions comes in ten pages."""
MAX_MESSAGE_BYTES: Final = 8 * 1024 * 1024
"""What the client accepts in one answer: what the arena's servers send at most (a long rating history)."""


def row_from_proto(r: ladder_pb2.LadderRow) -> Row:
    """A ladder row as the store holds it (``error`` and ``provisional`` follow from ``games`` and ``info``)."""
    return Row(name=r.bot_name, version=r.bot_version, rating=r.rating, games=r.games, wins=r.wins, draws=r.draws,
               losses=r.losses, last_played=r.last_played, info=r.info)  # fmt: skip


def standing_from_proto(r: ladder_pb2.LadderRow) -> Standing:
    fitted = Fitted(r.fit_rating, r.fit_sd, r.fit_games) if r.fit_games else None
    return Standing(r.rank, row_from_proto(r), r.owner, fitted)


def history_from_proto(reply: ladder_pb2.GetRatingHistoryResponse) -> dict[BotKey, list[HistoryPoint]]:
    return {
        (s.bot_name, s.bot_version): [HistoryPoint(p.finished_at, p.rating, p.match_id) for p in s.points]
        for s in reply.series
        if s.points
    }


def h2h_from_proto(h: ladder_pb2.LadderHeadToHead) -> HeadToHead:
    return HeadToHead((h.a_name, h.a_version), (h.b_name, h.b_version), h.a_wins, h.draws, h.b_wins)


class LadderClient(GatewayClient):
    """``LadderClient(gateway_address, token, tls=...)``: the ladder's reads over gRPC."""

    STUB = ladder_pb2_grpc.LadderServiceStub
    OPTIONS = (("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),)

    def games(self) -> list[str]:
        """The games that have a ladder (at least one rated version), sorted."""
        return [g for g in sorted(games.GAME_IDS) if self.size(g)]

    def size(self, game_id: str) -> int:
        reply = self._call("GetLeaderboard", ladder_pb2.GetLeaderboardRequest(game_id=game_id, limit=1))
        return int(reply.total)

    def leaderboard(self, game_id: str, limit: int | None = None, offset: int = 0) -> list[Standing]:
        """Best first; ``limit`` rows (None: all) from place ``offset + 1``, fetched in pages of ``PAGE``."""
        out: list[Standing] = []
        while limit is None or len(out) < limit:
            want = PAGE if limit is None else min(PAGE, limit - len(out))
            request = ladder_pb2.GetLeaderboardRequest(game_id=game_id, limit=want, offset=offset + len(out))
            rows = self._call("GetLeaderboard", request).rows
            out.extend(standing_from_proto(r) for r in rows)
            if len(rows) < want:
                break
        return out

    def history(self, game_id: str, name: str, version: str | None = None) -> dict[BotKey, list[HistoryPoint]]:
        """Rating after each match, per version of ``name`` (one version if given)."""
        request = ladder_pb2.GetRatingHistoryRequest(game_id=game_id, bot_name=name, bot_version=version or "")
        return history_from_proto(self._call("GetRatingHistory", request))

    def h2h(self, game_id: str, name: str | None = None) -> list[HeadToHead]:
        """Pairwise records (of one bot name, if given), most games first."""
        request = ladder_pb2.GetHeadToHeadRequest(game_id=game_id, bot_name=name or "")
        return [h2h_from_proto(h) for h in self._call("GetHeadToHead", request).records]
