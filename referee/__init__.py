"""The referee: the rules engines (``referee.games``), the wire contract (``referee.wire``), and the
match runner (``match``, with its clock ``timecontrol``, chance from the seed ``chance``, the
timeout ``fallback`` and ``transcript``s) behind the gRPC server (``server``).

The engines import nothing of the project; ``wire`` imports only the engines; the runner and server
import both, and nothing of the SDK or the arena. The SDK uses ``games`` and ``wire`` only.
"""

from referee import grpc_env as _grpc_env  # noqa: F401 - before anything imports grpc
