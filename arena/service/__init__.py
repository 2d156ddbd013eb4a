"""The match service: the Redis queue with leases (``queue``), match records, event logs and stored
transcripts (``matches``), the bot registry (``registry``), the referee workers (``worker``), the
gateway that bots and clients talk to (``gateway``) and its synchronous client (``client``).

May import ``arena.keys``, ``arena.metrics``, ``arena.redis_client``, the referee and the wire
contract; nothing of ``arena.ladder``, ``arena.local`` or ``arena.cli`` (the ladder is hosted in the
gateway's process through the gateway's ``extra`` hook, wired by the CLI).
"""
