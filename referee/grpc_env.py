"""gRPC's process-wide options, set before anything imports grpc (the C core reads them once, at import).

grpcio 1.80 moved the Python stack onto the EventEngine I/O experiments. On the 2-core machines the
arena is measured on, the previous poller is faster per bidirectional round trip and per move through the
referee, and the referee's and the bots' CPU per move is lower (the figures: docs/benchmarks.md, "gRPC's I/O
engine"), so every process of the project turns those experiments off: ``referee``'s package initialiser
imports this module, and ``arena`` and ``sdk`` import ``referee`` first. Whoever sets
``GRPC_EXPERIMENTS`` themselves (even to an empty string, which restores gRPC's defaults) keeps theirs.
This module imports nothing but ``os``: the engines stay free of gRPC.

The experiment names belong to the pinned grpcio; tests/test_grpc_env.py fails if an upgrade no
longer knows them (gRPC then logs "Unknown experiment" from every process).
"""

import os

SET_HERE = ("GRPC_EXPERIMENTS", "GRPC_VERBOSITY")
"""The variables this module sets for the project's own processes."""
USER_VALUES: dict[str, str | None] = {name: os.environ.get(name) for name in SET_HERE}
"""Their values before this module ran (None: not set), for ``user_environment``."""

LEGACY_IO_ENGINE = (
    "-event_engine_client,-event_engine_listener,-event_engine_for_all_other_endpoints,-event_engine_callback_cq"
)

os.environ.setdefault("GRPC_EXPERIMENTS", LEGACY_IO_ENGINE)

# gRPC's C core logs below ERROR unless told not to, on stderr, as its own text: a failed TLS handshake is
# an INFO line ("Handshake failed ...") beside the CLI's one-line error, inside a service's JSON lines,
# and at every retry of a bot. The arena says what failed itself; GRPC_VERBOSITY=INFO (or DEBUG) brings them back.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


def user_environment() -> dict[str, str]:
    """This process's environment as the user gave it, for the programs it launches that are not the
    project's (an ``arena play --cmd`` bot): a C++ or Node gRPC bot must not get this grpcio's experiment
    names (its own gRPC logs "Unknown experiment" for each) nor a quieter log level it did not ask for.
    The project's own Python processes set the two again when they import ``referee``."""
    env = dict(os.environ)
    for name, value in USER_VALUES.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env
