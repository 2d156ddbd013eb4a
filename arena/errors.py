"""What a client of the arena raises for a refused call: every gateway client does
(``arena.gateway_client.GatewayClient``), and the CLI reports it in one place. On the ground floor so
that the service clients share it without importing one another."""

from __future__ import annotations

from referee.wire.tls import ClientTls


class ArenaError(Exception):
    """A refused call: ``code`` is the gRPC status name, the message the arena's reason. ``target`` and
    ``tls``: what was dialled and how, so that an unreachable arena can be told apart from a client whose
    TLS settings do not fit it (``arena.cli.common.refused``)."""

    def __init__(self, code: str, message: str, target: str = "", tls: ClientTls | None = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.target = target
        self.tls = tls


DATABASE_TROUBLE = "the arena's database"
"""How every UNAVAILABLE for Redis trouble begins (``arena.redis_client.trouble``): a client may retry
such a call (with its request id, for a registration) once the failover is over."""
