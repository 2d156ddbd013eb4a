"""The arena's control plane, around the referee: the match service (``service``), the ladder
(``ladder``), everything on one machine (``local``) and the ``arena`` command (``cli``).

Shared by them: every Redis key (``keys``), the one Redis client factory (``redis_client``), the
settings (``config``) and the Prometheus metrics (``metrics``). Dependencies point one way:
``cli`` -> ``local`` -> ``ladder`` -> ``service`` -> the referee and the SDK -> the engines.
"""

import referee as _referee  # noqa: F401 - first: gRPC's process options (referee/grpc_env.py)
