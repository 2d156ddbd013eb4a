"""The arena on one machine: a ``redis-server`` process (``redisproc``), the whole service with its
worker processes (``arena``: ``LocalArena``, used by ``arena serve``, ``arena local``, tests and
benchmarks), the ladder process wired to the service (``ladder_runner``), and matches through a loopback
referee without Redis (``play``).

May import ``arena.service``, the referee, the SDK and the wire contract; not ``arena.cli``.
"""
