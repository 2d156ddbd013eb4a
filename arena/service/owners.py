"""Owners: the bot authors of a public arena, each with its own token.

The admin creates an owner (``arena owner create NAME``) and may change its ``max_bots`` later; with its
token the owner registers bots (up to ``max_bots`` that are not retired; not under a name of
``arena.service.names.RESERVED``), rotates their tokens, disables, enables and retires them, adds games to
them, reads their private refusals and requests unrated matches against the reference bots, and nothing
of another owner's. A bot belongs to the owner
whose name is in its ``owner`` field. Tokens are stored as their SHA-256 only, as bots' are.
"""

from __future__ import annotations

import re
import secrets
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import redis

from arena import keys
from arena.redis_client import replicated
from arena.service import names
from arena.service.registry import ROTATE_TOKEN, BotRecord, Registry
from arena.tokens import new_owner_token
from referee.wire.values import token_sha256

NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
DEFAULT_MAX_BOTS: Final = 10
REFERENCE_OWNER: Final = "arena"
"""The owner of the house (reference) bots (``arena local``/``arena serve`` register them so); no account
can take the name. Owners may request unrated matches of their bots against them."""
LOCK_TTL_MS: Final = 10_000
LOCK_WAIT_S: Final = 5.0

_CREATE: Final = """
-- KEYS: the owner's hash, its token's index key, the set of owners. ARGV: name, token hash, max_bots, time,
-- request id ('' for none), token keys' prefix. 1: created; 2: the same request again (a retry of a creation
-- that was made: the new token replaces the one its first answer never delivered); 0: the name is taken.
if redis.call('EXISTS', KEYS[1]) == 1 then
  local made = redis.call('HMGET', KEYS[1], 'request_id', 'token_sha256')
  if ARGV[5] == '' or made[1] ~= ARGV[5] then return 0 end
  redis.call('DEL', ARGV[6] .. made[2])
  redis.call('HSET', KEYS[1], 'token_sha256', ARGV[2])
  redis.call('SET', KEYS[2], ARGV[1])
  return 2
end
redis.call('HSET', KEYS[1], 'name', ARGV[1], 'token_sha256', ARGV[2], 'max_bots', ARGV[3], 'created_at', ARGV[4],
           'request_id', ARGV[5])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
return 1
"""

_UNLOCK: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class OwnerError(ValueError):
    """An owner operation that cannot be done; the message says why. Nothing was changed."""


class UnknownOwnerError(OwnerError):
    pass


class DuplicateOwnerError(OwnerError):
    pass


class OwnerGoneError(OwnerError):
    """The calling owner's account is not in Redis any more (its token was still in use)."""


class ReservedNameError(OwnerError):
    """A bot name of ``names.RESERVED`` (or one like it): the admin's only."""


class OwnerQuotaError(OwnerError):
    """The owner has ``max_bots`` bots already."""


class OwnerBusyError(OwnerError):
    """Another registration of this owner holds its lock; retry."""


@dataclass(frozen=True)
class Owner:
    name: str
    token_sha256: str
    max_bots: int
    created_at: float


class Owners:
    def __init__(self, client: redis.Redis) -> None:
        self.r = client
        self._create = client.register_script(_CREATE)
        self._rotate = client.register_script(ROTATE_TOKEN)
        self._unlock = client.register_script(_UNLOCK)

    def create(self, name: str, max_bots: int = DEFAULT_MAX_BOTS, request_id: str = "") -> tuple[Owner, str]:
        """A new owner and its token (the only time the token is seen). The same ``request_id`` again is a
        retry of a creation that was made (its answer lost): the owner with a fresh token
        (``Registry.register`` explains)."""
        if not NAME_RE.match(name):
            raise OwnerError(f"bad owner name {name!r}: 1-40 letters, digits, '_', '.', '-', starting alphanumeric")
        if name == REFERENCE_OWNER:
            raise OwnerError(f"{REFERENCE_OWNER!r} owns the reference bots; choose another name")
        _check_max_bots(max_bots)
        token = new_owner_token()
        done = replicated(self.r, lambda pipe: self._create(
            keys=[keys.owner(name), keys.owner_token(token_sha256(token)), keys.owners()],
            args=[name, token_sha256(token), max_bots, f"{time.time():.6f}", request_id, keys.owner_token("")],
            client=pipe,
        ), f"creating owner {name!r}")[0]  # fmt: skip
        if not done:
            raise DuplicateOwnerError(
                f"an owner named {name!r} exists already (if from a call whose answer you did not get: retry it "
                "with its request id, or rotate the owner's token)"
            )
        return self.get(name), token

    def set_max_bots(self, name: str, max_bots: int) -> Owner:
        """Change an owner's limit (the admin's call). Below its count of bots, the owner keeps them and
        registers none until it is under the limit again."""
        _check_max_bots(max_bots)
        if not self.r.exists(keys.owner(name)):
            raise UnknownOwnerError(f"no owner named {name!r}")
        self.r.hset(keys.owner(name), "max_bots", max_bots)
        return self.get(name)

    def rotate_token(self, name: str) -> str:
        token = new_owner_token()
        done = replicated(self.r, lambda pipe: self._rotate(
            keys=[keys.owner(name), keys.owner_token(token_sha256(token))],
            args=[token_sha256(token), keys.owner_token(""), name], client=pipe,
        ), f"rotating owner {name!r}'s token")[0]  # fmt: skip
        if not done:
            raise UnknownOwnerError(f"no owner named {name!r}")
        return token

    def get(self, name: str) -> Owner:
        raw = self.r.hgetall(keys.owner(name))
        if not raw:
            raise UnknownOwnerError(f"no owner named {name!r}")
        h = {keys.text(k): keys.text(v) for k, v in raw.items()}
        return Owner(h["name"], h["token_sha256"], int(h["max_bots"]), float(h["created_at"]))

    def find(self, name: str) -> Owner | None:
        try:
            return self.get(name)
        except UnknownOwnerError:
            return None

    def list(self) -> list[Owner]:
        return [o for n in sorted(keys.text(x) for x in self.r.smembers(keys.owners())) if (o := self.find(n))]

    def name_for_hash(self, token_hash: str) -> str | None:
        name = self.r.get(keys.owner_token(token_hash))
        return None if name is None else keys.text(name)

    def authenticate(self, token: str | None) -> Owner | None:
        """The owner whose current token this is, or None (no token, a wrong or rotated-away one)."""
        if not token:
            return None
        h = token_sha256(token)
        name = self.name_for_hash(h)
        owner = None if name is None else self.find(name)
        return owner if owner is not None and secrets.compare_digest(owner.token_sha256, h) else None

    # ------------------------------------------------------------------ an owner's bots

    def owners_of(self, bot_names: Sequence[str]) -> dict[str, str]:
        """Each named bot's owner ("" for a bot that does not exist), in one round trip."""
        names = list(dict.fromkeys(bot_names))
        pipe = self.r.pipeline(transaction=False)
        for name in names:
            pipe.hget(keys.bot(name), "owner")
        return {n: "" if o is None else keys.text(o) for n, o in zip(names, pipe.execute(), strict=True)}

    def bot_names(self, owner: str) -> Sequence[str]:
        """The names of the bots whose owner is ``owner``, sorted (two round trips, whatever the count)."""
        return sorted(n for n, o in self._all_owners().items() if o == owner)

    def bot_counts(self) -> Counter[str]:
        """How many bots each owner has that are not retired: what ``max_bots`` limits."""
        return Counter(owner for owner, retired in self._all_bots().values() if not retired)

    def _all_owners(self) -> dict[str, str]:
        return {name: owner for name, (owner, _) in self._all_bots().items()}

    def _all_bots(self) -> dict[str, tuple[str, bool]]:
        """Every bot's owner and whether it is retired (two round trips)."""
        every = sorted(keys.text(n) for n in self.r.smembers(keys.bots()))
        pipe = self.r.pipeline(transaction=False)
        for name in every:
            pipe.hmget(keys.bot(name), "owner", "retired_at")
        return {n: (keys.text(o or ""), float(r or 0) > 0) for n, (o, r) in zip(every, pipe.execute(), strict=True)}

    def register_bot(
        self,
        registry: Registry,
        owner: str,
        name: str,
        game_ids: Sequence[str],
        max_concurrent: int,
        request_id: str = "",
    ) -> tuple[BotRecord, str]:
        """Register a bot of ``owner`` if it has fewer than its ``max_bots`` (retired ones not counted):
        OwnerQuotaError otherwise, ReservedNameError for a name of ``names.RESERVED``,
        OwnerBusyError when another registration of this owner holds the lock for longer than
        ``LOCK_WAIT_S`` (the count and the registration are one step for each owner, so concurrent calls
        cannot pass the limit together). RegistryError as ``Registry.register``."""
        if names.reserved(name):
            raise ReservedNameError(f"the name {name!r} is reserved for the arena (or looks like such a name): only "
                                    "the admin registers it; choose another")  # fmt: skip
        lock, holder = keys.owner_registering(owner), secrets.token_hex(8)
        deadline = time.monotonic() + LOCK_WAIT_S
        while not self.r.set(lock, holder, nx=True, px=LOCK_TTL_MS):
            if time.monotonic() > deadline:
                raise OwnerBusyError(f"another registration of owner {owner} is under way; retry")
            time.sleep(0.02)
        try:
            found = self.find(owner)
            if found is None:
                raise OwnerGoneError(f"no owner named {owner!r}")
            limit = found.max_bots
            count = self.bot_counts()[owner]
            if count >= limit and not registry.is_retry(name, owner, request_id):  # a retry's bot is counted
                raise OwnerQuotaError(f"owner {owner} has {count} bots, its limit of {limit}; retire one (arena bot "
                                      "retire) or ask the arena's admin for more")  # fmt: skip
            return registry.register(name, owner, [*game_ids], max_concurrent, request_id)
        finally:
            self._unlock(keys=[lock], args=[holder])


def _check_max_bots(max_bots: int) -> None:
    if not 1 <= max_bots <= 10_000:
        raise OwnerError("max_bots is between 1 and 10,000")
