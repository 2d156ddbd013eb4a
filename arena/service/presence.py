"""Which bots are online: presence kept per gateway, so its Redis cost follows sessions opening and closing
rather than the number of sessions held.

A session's gateway writes the bot's presence once, when the session opens (``keys.presence``: a hash,
gateway id -> session info) and removes it when the bot's last session there closes. What keeps it true
is one key per gateway, ``keys.gateway_alive``, refreshed at every heartbeat with a time-to-live of
``PRESENCE_TTL_S``: a presence entry counts only while its gateway's key exists, so a crashed gateway's
bots read offline within that time, and the next live gateway's heartbeat sweeps their entries away.
``keys.online`` lists the bots that have entries, so readers look at the online bots, not every
registered one. A gateway that finds its own entries missing (Redis restarted empty, a failover lost
them) writes them again at its next heartbeat.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Sequence
from typing import Any, Final

import redis

from arena import keys

PRESENCE_TTL_S: Final = 30
BATCH: Final = 1_000  # commands per pipeline when reading or writing many bots

_PRESENT = """
-- KEYS: the bot's presence, the online set, the gateway's bot set, the gateways set, the gateway's alive key,
-- the bot's hash. ARGV: gateway id, bot name, session JSON, time-to-live, version ('' keeps it), now.
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then redis.call('DEL', KEYS[1]) end  -- a string: before per-gateway
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('SET', KEYS[5], '1', 'EX', ARGV[4])
if ARGV[5] ~= '' and redis.call('EXISTS', KEYS[6]) == 1 then
  redis.call('HSET', KEYS[6], 'version', ARGV[5], 'last_seen', ARGV[6])
end
return 1
"""

_ABSENT = """
-- KEYS: the bot's presence, the online set, the gateway's bot set, the bot's hash.
-- ARGV: gateway id, bot name, now ('' leaves last_seen). The bot leaves the online set with its last entry.
if redis.call('TYPE', KEYS[1]).ok == 'hash' then redis.call('HDEL', KEYS[1], ARGV[1])
else redis.call('DEL', KEYS[1]) end
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SREM', KEYS[2], ARGV[2]) end
redis.call('SREM', KEYS[3], ARGV[2])
if ARGV[3] ~= '' and redis.call('EXISTS', KEYS[4]) == 1 then redis.call('HSET', KEYS[4], 'last_seen', ARGV[3]) end
return 1
"""


def new_gateway_id() -> str:
    return secrets.token_hex(6)


class Presence:
    """Presence as one gateway (``gateway_id``) writes it, and as anyone reads it."""

    def __init__(self, client: redis.Redis, gateway_id: str | None = None) -> None:
        self.r = client
        self.gateway_id = gateway_id or new_gateway_id()
        self._present = client.register_script(_PRESENT)
        self._absent = client.register_script(_ABSENT)

    # ------------------------------------------------------------------ writes (this gateway)

    def _queue_present(self, pipe: Any, name: str, session: dict[str, Any], version: str, now: str) -> None:
        gid = self.gateway_id
        self._present(
            keys=[keys.presence(name), keys.online(), keys.gateway_bots(gid), keys.gateways(), keys.gateway_alive(gid),
                  keys.bot(name)],
            args=[gid, name, json.dumps(session), PRESENCE_TTL_S, version, now], client=pipe,
        )  # fmt: skip

    def present(self, name: str, version: str, session: dict[str, Any]) -> None:
        """A session of the bot opened here: the bot is online (and reported this version) while this
        gateway lives."""
        pipe = self.r.pipeline(transaction=False)
        self._queue_present(pipe, name, session, version, f"{time.time():.6f}")
        pipe.execute()

    def present_many(self, sessions: Sequence[tuple[str, str, dict[str, Any]]]) -> None:
        """``present`` again for (name, version, session) of every bot here, in batches: a gateway's
        entries were found missing."""
        now = f"{time.time():.6f}"
        for i in range(0, len(sessions), BATCH):
            pipe = self.r.pipeline(transaction=False)
            for name, version, session in sessions[i : i + BATCH]:
                self._queue_present(pipe, name, session, version, now)
            pipe.execute()

    def absent(self, name: str, gateway_id: str | None = None, *, touch: bool = True) -> None:
        """The bot's last session on this gateway (or ``gateway_id``'s) closed."""
        self._queue_absent(self.r, name, gateway_id or self.gateway_id, touch)

    def _queue_absent(self, client: Any, name: str, gid: str, touch: bool) -> None:
        self._absent(
            keys=[keys.presence(name), keys.online(), keys.gateway_bots(gid), keys.bot(name)],
            args=[gid, name, f"{time.time():.6f}" if touch else ""], client=client,
        )  # fmt: skip

    def beat(self) -> int:
        """This gateway lives (one round trip whatever its sessions); returns how many bots Redis holds
        entries of for it, which the caller compares with its own count (fewer: ``present_many``)."""
        gid = self.gateway_id
        pipe = self.r.pipeline(transaction=False)
        pipe.set(keys.gateway_alive(gid), "1", ex=PRESENCE_TTL_S)
        pipe.sadd(keys.gateways(), gid)
        pipe.scard(keys.gateway_bots(gid))
        return int(pipe.execute()[2])

    def sweep(self) -> int:
        """Clear the entries of gateways whose alive key ran out; returns how many gateways were cleared.
        Any gateway may run it, at every heartbeat: one round trip when none is dead."""
        gids = sorted(keys.text(g) for g in self.r.smembers(keys.gateways()))
        pipe = self.r.pipeline(transaction=False)
        for gid in gids:
            pipe.exists(keys.gateway_alive(gid))
        dead = [gid for gid, alive in zip(gids, pipe.execute(), strict=True) if not alive]
        for gid in dead:
            names = [keys.text(n) for n in self.r.smembers(keys.gateway_bots(gid))]
            for i in range(0, len(names), BATCH):
                pipe = self.r.pipeline(transaction=False)
                for name in names[i : i + BATCH]:
                    self._queue_absent(pipe, name, gid, touch=False)
                pipe.execute()
            pipe = self.r.pipeline(transaction=False)
            pipe.srem(keys.gateways(), gid)
            pipe.delete(keys.gateway_bots(gid))
            pipe.execute()
        return len(dead)

    # ------------------------------------------------------------------ reads

    def entries(self, names: Iterable[str]) -> tuple[dict[str, dict[str, str]], set[str]]:
        """Per bot name its presence entries (gateway id -> session JSON), live gateway or not, and the
        names whose presence is a string of a gateway before per-gateway presence (online while it
        lasts). One round trip per ``BATCH`` names."""
        entries: dict[str, dict[str, str]] = {}
        legacy: set[str] = set()
        names = list(names)
        for i in range(0, len(names), BATCH):
            pipe = self.r.pipeline(transaction=False)
            chunk = names[i : i + BATCH]
            for name in chunk:
                pipe.hgetall(keys.presence(name))
            for name, reply in zip(chunk, pipe.execute(raise_on_error=False), strict=True):
                if isinstance(reply, redis.ResponseError):  # a string with a time-to-live: a gateway of before
                    legacy.add(name)
                elif reply:
                    entries[name] = {keys.text(k): keys.text(v) for k, v in reply.items()}
        return entries, legacy

    def alive(self, gateway_ids: Iterable[str]) -> set[str]:
        """Of these gateways, those alive now (one round trip)."""
        gids = sorted(set(gateway_ids))
        pipe = self.r.pipeline(transaction=False)
        for gid in gids:
            pipe.exists(keys.gateway_alive(gid))
        return {gid for gid, up in zip(gids, pipe.execute(), strict=True) if up}

    def sessions(self, names: Iterable[str]) -> dict[str, dict[str, Any] | None]:
        """Per bot name, the info of one of its sessions on a live gateway, or None when it is offline.
        One round trip per ``BATCH`` names, then one for the gateways they name."""
        names = list(names)
        entries, legacy = self.entries(names)
        alive = self.alive(gid for e in entries.values() for gid in e)
        out: dict[str, dict[str, Any] | None] = {}
        for name in names:
            out[name] = {} if name in legacy else None
            for gid, raw in sorted(entries.get(name, {}).items()):
                if gid in alive:
                    out[name] = info(raw)
                    break
        return out

    def online(self, name: str) -> bool:
        return self.sessions([name])[name] is not None

    def online_names(self) -> list[str]:
        """The bots online now: those of ``keys.online`` with a session on a live gateway."""
        candidates = sorted(keys.text(n) for n in self.r.sscan_iter(keys.online(), count=BATCH))
        return [name for name, info in self.sessions(candidates).items() if info is not None]


def info(raw: str) -> dict[str, Any]:
    """A presence entry's session info; {} when it is not a JSON object (another version's)."""
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
