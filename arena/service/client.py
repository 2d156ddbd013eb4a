"""A small synchronous client of the gateway's ArenaService, for the CLI and for scripts."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any, Final

import grpc

from arena.errors import DATABASE_TROUBLE, ArenaError
from arena.gateway_client import GatewayClient
from referee.wire import arena_pb2, arena_pb2_grpc, match_pb2
from referee.wire.contract import request_id_metadata, to_proto_enum
from referee.wire.values import MatchStatus

REGISTRATION_RETRY_S: Final = 30.0
"""How long a registration is sent again while the arena's database fails over (a failover takes the
sentinels' down-after time plus a few seconds: docs/deploy.md)."""


class ArenaClient(GatewayClient):
    STUB = arena_pb2_grpc.ArenaServiceStub

    def _registration(self, method: str, request: Any, request_id: str | None) -> Any:
        """A registration (a bot's, an owner's) under one request id, sent again with it while the arena's
        database fails over (UNAVAILABLE for Redis trouble, up to ``REGISTRATION_RETRY_S``): the call is
        idempotent by that id, so a retry of one that was made answers with the same bot or owner and a
        fresh token, never "exists already"."""
        metadata = request_id_metadata(request_id or secrets.token_hex(16))
        deadline = time.monotonic() + REGISTRATION_RETRY_S
        pause = 0.5
        while True:
            try:
                return self._call(method, request, metadata)
            except ArenaError as e:
                if e.code != "UNAVAILABLE" or not e.message.startswith(DATABASE_TROUBLE) or time.monotonic() > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 4.0)

    def register_bot(
        self, name: str, owner: str, game_ids: list[str], max_concurrent: int = 0, request_id: str | None = None
    ) -> tuple[Any, str]:
        r = self._registration("RegisterBot", arena_pb2.RegisterBotRequest(
            name=name, owner=owner, game_ids=game_ids, max_concurrent=max_concurrent), request_id)  # fmt: skip
        return r.bot, r.token

    def rotate_token(self, name: str) -> str:
        token: str = self._call("RotateToken", arena_pb2.RotateTokenRequest(name=name)).token
        return token

    def set_enabled(self, name: str, enabled: bool, reason: str = "") -> Any:
        return self._call(
            "SetBotEnabled", arena_pb2.SetBotEnabledRequest(name=name, enabled=enabled, reason=reason)
        ).bot

    def retire(self, name: str, reason: str = "") -> Any:
        """Retire a bot for good (its owner or the admin): the bot record, retired."""
        return self._call("RetireBot", arena_pb2.RetireBotRequest(name=name, reason=reason)).bot

    def add_games(self, name: str, game_ids: list[str]) -> Any:
        """Add game ids to a bot (its owner or the admin): the bot record."""
        return self._call("AddBotGames", arena_pb2.AddBotGamesRequest(name=name, game_ids=game_ids)).bot

    # owners: CreateOwner, ListOwners and SetOwnerMaxBots need the admin token; RotateOwnerToken the
    # admin's or the owner's

    def create_owner(self, name: str, max_bots: int = 0, request_id: str | None = None) -> tuple[Any, str]:
        """A new owner (``max_bots`` 0: the arena's default) and its token, shown this once."""
        r = self._registration("CreateOwner", arena_pb2.CreateOwnerRequest(name=name, max_bots=max_bots), request_id)
        return r.owner, r.token

    def list_owners(self) -> list[Any]:
        return list(self._call("ListOwners", arena_pb2.ListOwnersRequest()).owners)

    def set_owner_max_bots(self, name: str, max_bots: int) -> Any:
        """Change an owner's limit of bots: the owner record."""
        return self._call("SetOwnerMaxBots", arena_pb2.SetOwnerMaxBotsRequest(name=name, max_bots=max_bots)).owner

    def rotate_owner_token(self, name: str) -> str:
        token: str = self._call("RotateOwnerToken", arena_pb2.RotateOwnerTokenRequest(name=name)).token
        return token

    def list_bots(self, game_id: str = "") -> list[Any]:
        return list(self._call("ListBots", arena_pb2.ListBotsRequest(game_id=game_id)).bots)

    def request_match(
        self,
        game_id: str,
        bot_names: list[str],
        *,
        seed: str = "",
        rated: bool = False,
        match_id: str = "",
        time_control: dict[str, int] | None = None,
    ) -> tuple[str, str]:
        request = arena_pb2.RequestMatchRequest(
            game_id=game_id, bot_names=bot_names, seed=seed, rated=rated, match_id=match_id
        )
        if time_control:
            request.time_control.CopyFrom(match_pb2.TimeControl(**time_control))
        r = self._call("RequestMatch", request)
        return r.match_id, r.seed_sha256

    def describe(self, match_id: str) -> Any:
        return self._call("DescribeMatch", arena_pb2.DescribeMatchRequest(match_id=match_id)).match

    def list_matches(self, *, state: MatchStatus | None = None, **kwargs: Any) -> list[Any]:
        """Matches newest first; ``kwargs`` are ListMatchesRequest's other fields (``bot_name``, ``game_id``,
        ``owner``: seating a bot of that owner, ``since``, ``until``, ``limit``)."""
        request = arena_pb2.ListMatchesRequest(state=to_proto_enum(state) if state else 0, **kwargs)  # type: ignore[arg-type]
        return list(self._call("ListMatches", request).matches)

    def transcript(self, match_id: str) -> tuple[str, bool]:
        r = self._call("GetTranscript", arena_pb2.GetTranscriptRequest(match_id=match_id))
        return r.jsonl, r.full

    def follow(self, match_id: str) -> Iterator[str]:
        try:
            for r in self.stub.FollowMatch(arena_pb2.FollowMatchRequest(match_id=match_id), metadata=self._md()):
                yield r.transcript_line
        except grpc.RpcError as e:
            raise ArenaError(e.code().name, e.details() or "", self.target, self.tls) from None
