"""What every synchronous client of a gateway service shares (``arena.service.client.ArenaClient``,
``arena.ladder.client.LadderClient``, ``arena.events.client.EventClient``): one channel, the caller's
bearer token on every call, a deadline, and a refused call raised as ``ArenaError`` naming what was
dialled and how, so that the CLI tells a client whose TLS does not fit the arena from an arena that is
down whichever service it called. On the ground floor: each service's client builds on it and none
imports another's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Self

import grpc

from arena.errors import ArenaError
from referee.wire.contract import bearer_metadata
from referee.wire.tls import ClientTls, sync_channel

Metadata = tuple[tuple[str, str], ...]


class GatewayClient:
    """``Client(target, token, timeout=..., tls=...)``; a subclass names its service's stub class."""

    STUB: ClassVar[type[Any]]  # the service's generated stub class
    OPTIONS: ClassVar[Sequence[tuple[str, Any]]] = ()  # channel options the service's answers need
    TIMEOUT: ClassVar[float] = 10.0  # seconds a call may take unless the caller says otherwise

    def __init__(
        self, target: str, token: str = "", timeout: float | None = None, tls: ClientTls | None = None
    ) -> None:
        self.target = target
        self.tls = tls
        self.token = token
        self.timeout = self.TIMEOUT if timeout is None else timeout
        self.channel = sync_channel(target, tls, self.OPTIONS)
        self.stub = type(self).STUB(self.channel)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _md(self) -> Metadata:
        return bearer_metadata(self.token)

    def _call(self, method: str, request: Any, metadata: Metadata = ()) -> Any:
        try:
            return getattr(self.stub, method)(request, metadata=self._md() + metadata, timeout=self.timeout)
        except grpc.RpcError as e:
            raise ArenaError(e.code().name, e.details() or "", self.target, self.tls) from None
