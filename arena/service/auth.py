"""Who calls: the caller a bearer token names (no token, a bot, an owner or the admin), and whether a
secret is strong enough to be one.

``resolve_caller`` answers in one round trip to Redis: a Lua script reads the admin token's hash, the
owner token key and the bot token key of the token's hash, and then the named owner's or bot's current
token hash (and a bot's enabled flag): keys known only after the first reads, hence a script rather than
a pipeline. The gateway's authorization rules are in ``arena.service.gateway`` and docs/arena.md, "Owners
and tokens".

The bot's two fields are ``registry.TOKEN_FIELDS``, passed to the script, and what they make of the
token is ``registry.token_state``'s answer, the rule every reader of a bot token applies.
"""

from __future__ import annotations

import enum
import secrets
from dataclasses import dataclass
from typing import Any, Final

import redis

from arena import keys
from arena.service.registry import TOKEN_FIELDS, TokenState, enabled_flag, token_state
from arena.tokens import weak_token_reason
from referee.wire.values import token_sha256

__all__ = ["ANONYMOUS", "Caller", "CallerKind", "resolve_caller", "weak_token_reason"]

_RESOLVE: Final = """
local admin = redis.call('GET', KEYS[1])
local owner = redis.call('GET', KEYS[2])
local bot = redis.call('GET', KEYS[3])
local owner_current = false
if owner then owner_current = redis.call('HGET', ARGV[2] .. owner, 'token_sha256') end
local current, enabled = false, false
if bot then
  local fields = redis.call('HMGET', ARGV[1] .. bot, ARGV[3], ARGV[4])
  current, enabled = fields[1], fields[2]
end
return {admin, owner, owner_current, bot, current, enabled}
"""


class CallerKind(enum.Enum):
    ANONYMOUS = "anonymous"
    """No token."""
    BOT = "bot"
    OWNER = "owner"
    ADMIN = "admin"


@dataclass(frozen=True)
class Caller:
    """Who makes a call, from its bearer token. ``name``: the bot's or the owner's name ("admin" for the
    admin, "" for nobody); ``enabled``: False for a disabled bot's token."""

    kind: CallerKind
    name: str = ""
    token_sha256: str = ""
    enabled: bool = True


ANONYMOUS: Final = Caller(CallerKind.ANONYMOUS)


def resolve_caller(client: redis.Redis, token: str | None) -> Caller | None:
    """The caller ``token`` names: ANONYMOUS without one; None for a token that is nobody's (wrong, or
    rotated away: the call is UNAUTHENTICATED). The admin beats an owner beats a bot, should one hash
    ever be two things."""
    if not token:
        return ANONYMOUS
    h = token_sha256(token)
    script = client.register_script(_RESOLVE)
    reply: Any = script(
        keys=[keys.admin_token(), keys.owner_token(h), keys.token(h)],
        args=[keys.bot(""), keys.owner(""), *TOKEN_FIELDS],
    )
    admin, owner, owner_current, bot, current, enabled = (None if v is None else keys.text(v) for v in reply)
    if admin is not None and secrets.compare_digest(admin, h):
        return Caller(CallerKind.ADMIN, "admin", h)
    if owner is not None and owner_current is not None and secrets.compare_digest(owner_current, h):
        return Caller(CallerKind.OWNER, owner, h)
    state = token_state(h, current, enabled_flag(enabled))
    if bot is not None and state is not TokenState.NOBODYS:
        return Caller(CallerKind.BOT, bot, h, state is TokenState.VALID)
    return None
