"""gRPC's process-wide options, set before anything imports grpc (the C core reads them once, at import).

grpcio 1.80 moved the Python stack onto the EventEngine I/O experiments. On the 2-core machines the
arena is measured on, the previous poller is 1.6-1.8x faster per bidirectional round trip, a move through
the referee 1.5x faster, and the referee's and the bots' CPU per move lower (docs/benchmarks.md "gRPC's I/O
engine"), so every process of the project turns those experiments off: ``referee``'s package initialiser
imports this module, and ``arena`` and ``sdk`` import ``referee`` first. Whoever sets
``GRPC_EXPERIMENTS`` themselves (even to an empty string, which restores gRPC's defaults) keeps theirs.
This module imports nothing but ``os``: the engines stay free of gRPC.

The experiment names belong to the pinned grpcio; tests/test_grpc_env.py fails if an upgrade no
longer knows them (gRPC then logs "Unknown experiment" from every process).
"""

import os

LEGACY_IO_ENGINE = (
    "-event_engine_client,-event_engine_listener,-event_engine_for_all_other_endpoints,-event_engine_callback_cq"
)

os.environ.setdefault("GRPC_EXPERIMENTS", LEGACY_IO_ENGINE)

# gRPC's C core logs below ERROR unless told not to, on stderr, as its own text: a failed TLS handshake is
# an INFO line ("Handshake failed ...") beside the CLI's one-line error, inside a service's JSON lines,
# and at every retry of a bot. The arena says what failed itself; GRPC_VERBOSITY=INFO (or DEBUG) brings them back.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
