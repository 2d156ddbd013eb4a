"""The bot registry: who may play, with which token, and whether they are online.

Tokens are 32 random bytes shown once, at registration or rotation; Redis keeps only their SHA-256
(``keys.token(hash) -> name``), so a leaked database does not leak tokens. The admin token is
stored the same way. Presence is written per gateway (``arena.service.presence``): a crashed gateway
leaves no bot "online" for longer than ``PRESENCE_TTL_S``. Every change of a bot's token or enabled flag
is also announced on ``keys.bot_changes``, so that gateways end its sessions at once instead of checking
every session's token at every heartbeat.
"""

from __future__ import annotations

import enum
import json
import re
import secrets
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Final

import redis

from arena import keys
from arena.redis_client import replicated
from arena.service.names import fold
from arena.service.presence import Presence
from arena.tokens import new_bot_token
from referee import games
from referee.wire.values import token_sha256

NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
DEFAULT_MAX_CONCURRENT: Final = 4


TOKEN_FIELDS: Final = ("token_sha256", "enabled")
"""The fields of a bot's hash that ``token_state`` reads: the Python readers and the Lua of
``arena.service.auth`` read these, by these names."""


class TokenState(enum.Enum):
    """What a token hash is to the bot it was looked up for (``token_state``)."""

    NOBODYS = "nobody's"
    """No bot's current token: never one, or rotated away (or the bot's record is gone)."""
    DISABLED = "disabled"
    """The current token of a disabled (or retired) bot: it names the bot but may not play."""
    VALID = "valid"
    """The current token of an enabled bot: it may open sessions and play."""


def enabled_flag(value: str | None) -> bool:
    """A bot hash's ``enabled`` field: "1", or none at all (a record older than the field), is enabled."""
    return value is None or value == "1"


def token_state(token_hash: str, current: str | None, enabled: bool) -> TokenState:
    """The one "current and enabled" rule for a bot token, read by ``Registry.authenticate``,
    ``Registry.valid_tokens`` and ``arena.service.auth.resolve_caller`` (whose Lua fetches
    ``TOKEN_FIELDS``), so that a session, a Play stream, a worker's check and the gateway's caller agree.
    ``current``: the hash the bot's record holds (None: no such bot); compared in constant time."""
    if current is None or not secrets.compare_digest(current, token_hash):
        return TokenState.NOBODYS
    return TokenState.VALID if enabled else TokenState.DISABLED


class RegistryError(Exception):
    """A registry operation that cannot be done; the message says why. Nothing was changed."""


class UnknownBotError(RegistryError):
    pass


class DuplicateBotError(RegistryError):
    """The name is taken: by a bot of that name, or of one that looks the same (``arena.service.names``)."""


class RetiredBotError(RegistryError):
    """The bot is retired: it plays no more and takes no change but a new token."""


@dataclass(frozen=True)
class BotRecord:
    name: str
    owner: str
    game_ids: tuple[str, ...]
    enabled: bool
    disabled_reason: str
    version: str
    token_sha256: str
    max_concurrent: int
    created_at: float
    last_seen: float
    online: bool = False
    matches_running: int = 0
    retired_at: float = 0.0

    @property
    def retired(self) -> bool:
        return self.retired_at > 0

    def public(self) -> dict[str, Any]:
        """Everything but the token hash."""
        return {
            "name": self.name,
            "owner": self.owner,
            "game_ids": list(self.game_ids),
            "enabled": self.enabled,
            "disabled_reason": self.disabled_reason,
            "version": self.version,
            "max_concurrent": self.max_concurrent,
            "created_at": self.created_at,
            "last_seen": self.last_seen,
            "online": self.online,
            "matches_running": self.matches_running,
            "retired_at": self.retired_at,
        }


_REGISTER = """
-- KEYS: the bot's hash, its token's index key, the set of bots, its folded name's key.
-- ARGV: name, owner, games, token hash, max_concurrent, time, request id ('' for none), token keys' prefix.
-- Returns 1 (registered), 2 (the same request again: a retry of a registration that was made; the new
-- token replaces the one its first answer never delivered), or the name of the bot holding the name or
-- one that looks the same (nothing changed).
if redis.call('EXISTS', KEYS[1]) == 1 then
  local bot = redis.call('HMGET', KEYS[1], 'request_id', 'owner', 'token_sha256')
  if ARGV[7] == '' or bot[1] ~= ARGV[7] or bot[2] ~= ARGV[2] then return ARGV[1] end
  redis.call('DEL', ARGV[8] .. bot[3])
  redis.call('HSET', KEYS[1], 'token_sha256', ARGV[4])
  redis.call('SET', KEYS[2], ARGV[1])
  return 2
end
local holder = redis.call('GET', KEYS[4])
if holder then return holder end
redis.call('HSET', KEYS[1], 'name', ARGV[1], 'owner', ARGV[2], 'games', ARGV[3], 'token_sha256', ARGV[4],
           'enabled', '1', 'disabled_reason', '', 'version', '', 'max_concurrent', ARGV[5],
           'created_at', ARGV[6], 'last_seen', '0', 'request_id', ARGV[7])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('SET', KEYS[4], ARGV[1])
return 1
"""

_RETIRE = """
-- KEYS: the bot's hash. ARGV: the reason, the time. 0: no such bot; else 1 (a retired bot stays as it was).
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local since = tonumber(redis.call('HGET', KEYS[1], 'retired_at') or '0') or 0
if since > 0 then return 1 end
redis.call('HSET', KEYS[1], 'retired_at', ARGV[2], 'enabled', '0', 'disabled_reason', 'retired: ' .. ARGV[1])
return 1
"""

_SET_ENABLED = """
-- KEYS: the bot's hash. ARGV: 1 or 0, the reason. 0: no such bot; -1: retired (nothing changed); 1: done.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if (tonumber(redis.call('HGET', KEYS[1], 'retired_at') or '0') or 0) > 0 then return -1 end
redis.call('HSET', KEYS[1], 'enabled', ARGV[1], 'disabled_reason', ARGV[2])
return 1
"""

_ADD_GAMES = """
-- KEYS: the bot's hash. ARGV: the game ids to add. 0: no such bot; -1: retired; else 1.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if (tonumber(redis.call('HGET', KEYS[1], 'retired_at') or '0') or 0) > 0 then return -1 end
local games = cjson.decode(redis.call('HGET', KEYS[1], 'games') or '[]')
local have = {}
for _, g in ipairs(games) do have[g] = true end
for _, g in ipairs(ARGV) do
  if not have[g] then table.insert(games, g); have[g] = true end
end
table.sort(games)
redis.call('HSET', KEYS[1], 'games', cjson.encode(games))
return 1
"""

ROTATE_TOKEN: Final = """
-- KEYS: the holder's hash, the new token's index key; ARGV: the new hash, the index keys' prefix, the name.
-- Shared with arena.service.owners: a bot's and an owner's token rotate the same way.
local old = redis.call('HGET', KEYS[1], 'token_sha256')
if not old then return 0 end
redis.call('DEL', ARGV[2] .. old)
redis.call('HSET', KEYS[1], 'token_sha256', ARGV[1])
redis.call('SET', KEYS[2], ARGV[3])
return 1
"""


BOT_CHANGES_MAXLEN: Final = 10_000
"""Entries kept on ``keys.bot_changes``: a gateway reads them within a block's time; one that lost its place
(Redis away) checks all of its sessions instead."""


def announce(pipe: Any, name: str) -> Any:
    """Queue the entry that tells every gateway to check bot ``name``'s sessions now; returns the pipeline."""
    return pipe.xadd(keys.bot_changes(), {"bot": name}, maxlen=BOT_CHANGES_MAXLEN, approximate=True)


class Registry:
    def __init__(self, client: redis.Redis, gateway_id: str | None = None) -> None:
        """``gateway_id``: whose presence ``seen`` and ``gone`` write (None: a new id for this registry)."""
        self.r = client
        self.presence = Presence(client, gateway_id)
        self._register = client.register_script(_REGISTER)
        self._rotate = client.register_script(ROTATE_TOKEN)
        self._retire = client.register_script(_RETIRE)
        self._set_enabled = client.register_script(_SET_ENABLED)
        self._add_games = client.register_script(_ADD_GAMES)

    # ------------------------------------------------------------------ admin token

    def set_admin_token(self, token: str) -> None:
        self.r.set(keys.admin_token(), token_sha256(token))

    def is_admin(self, token: str | None) -> bool:
        if not token:
            return False
        stored = self.r.get(keys.admin_token())
        return stored is not None and secrets.compare_digest(keys.text(stored), token_sha256(token))

    # ------------------------------------------------------------------ bots

    def register(
        self,
        name: str,
        owner: str,
        game_ids: list[str],
        max_concurrent: int = DEFAULT_MAX_CONCURRENT,
        request_id: str = "",
    ) -> tuple[BotRecord, str]:
        """A new bot and its token (the only time the token is seen). ``request_id`` (the caller's, kept
        with the bot): the same owner registering the same name with the same id again is a retry (its
        first answer was lost, e.g. NotReplicatedError during a failover, though the bot was made): it gets
        the bot with a fresh token, never "exists already"."""
        if not NAME_RE.match(name):
            raise RegistryError(f"bad bot name {name!r}: 1-40 letters, digits, '_', '.', '-', starting alphanumeric")
        if not owner.strip():
            raise RegistryError("a bot needs an owner")
        _check_games(game_ids)
        if not 1 <= max_concurrent <= 1000:
            raise RegistryError("max_concurrent is between 1 and 1000")
        token = new_bot_token()
        created: Any = replicated(self.r, lambda pipe: self._register(
            keys=[keys.bot(name), keys.token(token_sha256(token)), keys.bots(), keys.bot_name_fold(fold(name))],
            args=[name, owner.strip(), json.dumps(sorted(set(game_ids))), token_sha256(token), max_concurrent,
                  f"{time.time():.6f}", request_id, keys.token("")], client=pipe,
        ), f"registering bot {name!r}")[0]  # fmt: skip
        if created not in (1, 2):
            holder = keys.text(created)
            if holder != name:
                raise DuplicateBotError(f"the name {name!r} looks like that of bot {holder!r}; choose another")
            raise DuplicateBotError(
                f"a bot named {name!r} exists already (if it is yours, from a registration whose answer you did "
                "not get, retry that call with its request id, or rotate the bot's token: arena bot rotate-token)"
            )
        return self.get(name), token

    def is_retry(self, name: str, owner: str, request_id: str) -> bool:
        """Whether registering ``name`` for ``owner`` with ``request_id`` is the retry of one already made."""
        if not request_id:
            return False
        made, by = self.r.hmget(keys.bot(name), "request_id", "owner")
        return made is not None and keys.text(made) == request_id and by is not None and keys.text(by) == owner

    def index_names(self) -> int:
        """Give every bot its folded-name key (those registered before the keys existed); the first of two
        look-alikes keeps it. Returns how many were added; run at a gateway's start."""
        names = sorted(keys.text(n) for n in self.r.smembers(keys.bots()))
        pipe = self.r.pipeline(transaction=False)
        for name in names:
            pipe.set(keys.bot_name_fold(fold(name)), name, nx=True)
        return sum(bool(done) for done in pipe.execute())

    def rotate_token(self, name: str) -> str:
        token = new_bot_token()
        done = replicated(self.r, lambda pipe: (self._rotate(
            keys=[keys.bot(name), keys.token(token_sha256(token))],
            args=[token_sha256(token), keys.token(""), name], client=pipe,
        ), announce(pipe, name)), f"rotating bot {name!r}'s token")[0]  # fmt: skip
        if not done:
            raise UnknownBotError(f"no bot named {name!r}")
        return token

    def set_enabled(self, name: str, enabled: bool, reason: str = "") -> BotRecord:
        reply = replicated(self.r, lambda pipe: (self._set_enabled(
            keys=[keys.bot(name)], args=[int(enabled), "" if enabled else reason], client=pipe,
        ), announce(pipe, name)), f"{'enabling' if enabled else 'disabling'} bot {name!r}")[0]  # fmt: skip
        self._changed(name, reply)
        return self.get(name)

    def retire(self, name: str, reason: str = "") -> BotRecord:
        """Retire the bot for good: disabled (no sessions, no Play, no new matches, off the ladder's
        schedule) and marked ``retired_at``, which nothing undoes. Its hash stays, so its name stays
        taken, and its matches, transcripts and ladder rows are kept. Retiring it again changes nothing."""
        reply = replicated(self.r, lambda pipe: (self._retire(
            keys=[keys.bot(name)], args=[reason, f"{time.time():.6f}"], client=pipe,
        ), announce(pipe, name)), f"retiring bot {name!r}")[0]  # fmt: skip
        self._changed(name, reply)
        return self.get(name)

    def add_games(self, name: str, game_ids: Sequence[str]) -> BotRecord:
        """Add game ids to the bot's (those it has already are kept once); not to a retired bot."""
        _check_games(game_ids)
        self._changed(name, self._add_games(keys=[keys.bot(name)], args=list(game_ids)))
        return self.get(name)

    @staticmethod
    def _changed(name: str, reply: Any) -> None:
        """A change script's answer: 0 no such bot, -1 a retired bot (nothing changed), 1 done."""
        if reply == 0:
            raise UnknownBotError(f"no bot named {name!r}")
        if reply == -1:
            raise RetiredBotError(f"bot {name} is retired: it takes no change")

    def get(self, name: str) -> BotRecord:
        raw = self.r.hgetall(keys.bot(name))
        if not raw:
            raise UnknownBotError(f"no bot named {name!r}")
        return self._record({keys.text(k): keys.text(v) for k, v in raw.items()})

    def find(self, name: str) -> BotRecord | None:
        try:
            return self.get(name)
        except UnknownBotError:
            return None

    def list(self, game_id: str | None = None) -> list[BotRecord]:
        names = sorted(keys.text(n) for n in self.r.smembers(keys.bots()))
        pipe = self.r.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(keys.bot(name))
            pipe.scard(keys.bot_running(name))
        replies = pipe.execute()
        online = self.presence.sessions(names)
        out = []
        for i, name in enumerate(names):
            raw, running = replies[2 * i : 2 * i + 2]
            if not raw:
                continue
            rec = self._record({keys.text(k): keys.text(v) for k, v in raw.items()}, online[name] is not None,
                               int(running))  # fmt: skip
            if game_id is None or game_id in rec.game_ids:
                out.append(rec)
        return out

    def authenticate(self, token: str | None) -> BotRecord | None:
        """The bot whose current token this is, enabled or not (the caller says which refusal a disabled
        bot gets), or None (``token_state``)."""
        if not token:
            return None
        h = token_sha256(token)
        name = self.r.get(keys.token(h))
        bot = None if name is None else self.find(keys.text(name))
        if bot is None or token_state(h, bot.token_sha256, bot.enabled) is TokenState.NOBODYS:
            return None
        return bot

    def name_for_hash(self, token_sha256: str) -> str | None:
        name = self.r.get(keys.token(token_sha256))
        return None if name is None else keys.text(name)

    def valid_tokens(self, hashes: Collection[str]) -> dict[str, str]:
        """Of these token hashes, those that may play now (``TokenState.VALID``), each with its bot's
        name. Two round trips whatever the count."""
        hashes = list(hashes)
        pipe = self.r.pipeline(transaction=False)
        for h in hashes:
            pipe.get(keys.token(h))
        names = [None if n is None else keys.text(n) for n in pipe.execute()]
        pipe = self.r.pipeline(transaction=False)
        for name in names:
            pipe.hmget(keys.bot(name or ""), *TOKEN_FIELDS)
        out = {}
        for h, name, fields in zip(hashes, names, pipe.execute(), strict=True):
            current, enabled = (None if v is None else keys.text(v) for v in fields)
            if name is not None and token_state(h, current, enabled_flag(enabled)) is TokenState.VALID:
                out[h] = name
        return out

    # ------------------------------------------------------------------ presence

    def seen(self, name: str, version: str, session: dict[str, Any]) -> None:
        """A session of the bot opened on this registry's gateway: it is online, at this version."""
        self.presence.present(name, version, session)

    def gone(self, name: str) -> None:
        """The bot's last session on this registry's gateway closed."""
        self.presence.absent(name)

    def online(self, name: str) -> bool:
        return self.presence.online(name)

    def _record(self, h: dict[str, str], online: bool | None = None, running: int | None = None) -> BotRecord:
        name = h["name"]
        if online is None:
            online = self.online(name)
        if running is None:
            running = int(self.r.scard(keys.bot_running(name)))
        return BotRecord(
            name=name,
            owner=h.get("owner", ""),
            game_ids=tuple(json.loads(h.get("games", "[]"))),
            enabled=enabled_flag(h.get("enabled")),
            disabled_reason=h.get("disabled_reason", ""),
            version=h.get("version", ""),
            token_sha256=h.get("token_sha256", ""),
            max_concurrent=int(h.get("max_concurrent", DEFAULT_MAX_CONCURRENT)),
            created_at=float(h.get("created_at", 0)),
            last_seen=float(h.get("last_seen", 0)),
            online=online,
            matches_running=running,
            retired_at=float(h.get("retired_at", 0)),
        )


def _check_games(game_ids: Sequence[str]) -> None:
    """RegistryError unless ``game_ids`` is one or more known game ids."""
    if not game_ids:
        raise RegistryError(f"a bot plays at least one game id: {', '.join(games.GAME_IDS)}")
    unknown = [g for g in game_ids if g not in games.GAME_IDS]
    if unknown:
        raise RegistryError(f"unknown game id(s) {', '.join(unknown)}; known: {', '.join(games.GAME_IDS)}")
