"""The Elo ladder: the rating rules (``elo``, pure), ratings and records in Redis applied exactly once
(``store``), who plays whom (``scheduler``, no transport), the ladder process (``runner``), its gRPC
service (``service``) and its client (``client``), the values a read returns (``values``) and how it is shown
(``report``). ``elo``, ``values``, ``client`` and ``report`` import no Redis: a bot author's install (no
``server`` extra) reads the ladder from the gateway with them.

May import ``arena.keys``, ``arena.metrics``, ``arena.redis_client``, the service's queue, match
store and registry, and the wire contract; never the gateway, the worker or ``arena.cli``.
"""
