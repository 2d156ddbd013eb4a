"""The wire contract that the referee, the SDK and the arena share, and nothing else.

``referee.wire`` re-exports the protobuf and gRPC modules that ``proto/generate.py`` writes into
``_generated/`` (never edited by hand); ``referee.wire.contract`` holds the only hand-written code
that touches them: the values that cross the wire, their enum maps, bearer-token parsing and the
gRPC server set-up. It may import the engines (``referee.games``) and nothing else of the project,
so the referee and the SDK both use it without depending on each other.
"""

from referee.wire._generated.arena.v1 import (
    arena_pb2,
    arena_pb2_grpc,
    bot_pb2,
    bot_pb2_grpc,
    event_pb2,
    event_pb2_grpc,
    ladder_pb2,
    ladder_pb2_grpc,
    match_pb2,
    referee_pb2,
    referee_pb2_grpc,
)

__all__ = [
    "arena_pb2",
    "arena_pb2_grpc",
    "bot_pb2",
    "bot_pb2_grpc",
    "event_pb2",
    "event_pb2_grpc",
    "ladder_pb2",
    "ladder_pb2_grpc",
    "match_pb2",
    "referee_pb2",
    "referee_pb2_grpc",
]
