"""One "current and enabled" rule for bot tokens: the gateway's caller (``resolve_caller``, whose Lua
fetches the bot's fields), ``Registry.authenticate`` (OpenSession, the Play relay) and
``Registry.valid_tokens`` (the workers' and the sessions' checks) must make the same thing of every
kind of token, or a token could open a session that the worker then refuses, or the reverse."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis

from arena import keys
from arena.service.auth import CallerKind, resolve_caller
from arena.service.registry import Registry, TokenState, token_state
from referee.wire.values import token_sha256

H = "ab" * 32
OTHER = "cd" * 32


@pytest.mark.parametrize(
    ("current", "enabled", "state"),
    [
        (H, True, TokenState.VALID),
        (H, False, TokenState.DISABLED),
        (OTHER, True, TokenState.NOBODYS),  # rotated away
        (OTHER, False, TokenState.NOBODYS),
        (None, True, TokenState.NOBODYS),  # no such bot
        ("", True, TokenState.NOBODYS),  # a record without its hash
    ],
)
def test_the_rule(current: str | None, enabled: bool, state: TokenState) -> None:
    assert token_state(H, current, enabled) is state


def _current(reg: Registry, r: redis.Redis) -> str:
    return reg.register("alpha", "ann", ["shanghaien"])[1]


def _disabled(reg: Registry, r: redis.Redis) -> str:
    token = reg.register("alpha", "ann", ["shanghaien"])[1]
    reg.set_enabled("alpha", False, "resting")
    return token


def _retired(reg: Registry, r: redis.Redis) -> str:
    token = reg.register("alpha", "ann", ["shanghaien"])[1]
    reg.retire("alpha", "done")
    return token


def _rotated_away(reg: Registry, r: redis.Redis) -> str:
    token = reg.register("alpha", "ann", ["shanghaien"])[1]
    reg.rotate_token("alpha")
    return token


def _never_issued(reg: Registry, r: redis.Redis) -> str:
    reg.register("alpha", "ann", ["shanghaien"])
    return "arena_" + "x" * 43


def _older_record(reg: Registry, r: redis.Redis) -> str:
    """A bot stored before the ``enabled`` field existed: enabled."""
    token = reg.register("alpha", "ann", ["shanghaien"])[1]
    r.hdel(keys.bot("alpha"), "enabled")
    return token


def _stale_index(reg: Registry, r: redis.Redis) -> str:
    """The token's index key names the bot, whose record holds another token (a half-done rotation)."""
    reg.register("alpha", "ann", ["shanghaien"])
    token = "arena_" + "y" * 43
    r.set(keys.token(token_sha256(token)), "alpha")
    return token


def _record_gone(reg: Registry, r: redis.Redis) -> str:
    token = reg.register("alpha", "ann", ["shanghaien"])[1]
    r.delete(keys.bot("alpha"))
    return token


TABLE: list[tuple[Callable[[Registry, redis.Redis], str], TokenState]] = [
    (_current, TokenState.VALID),
    (_disabled, TokenState.DISABLED),
    (_retired, TokenState.DISABLED),
    (_rotated_away, TokenState.NOBODYS),
    (_never_issued, TokenState.NOBODYS),
    (_older_record, TokenState.VALID),
    (_stale_index, TokenState.NOBODYS),
    (_record_gone, TokenState.NOBODYS),
]


@pytest.mark.parametrize(("make", "state"), TABLE, ids=[make.__name__.strip("_") for make, _ in TABLE])
def test_every_reader_of_a_bot_token_agrees(
    redis_url: str, make: Callable[[Registry, redis.Redis], str], state: TokenState
) -> None:
    r = redis.Redis.from_url(redis_url)
    reg = Registry(r)
    token = make(reg, r)

    caller = resolve_caller(r, token)  # the Lua's fields, the Python rule
    by_lua = TokenState.NOBODYS if caller is None else TokenState.VALID if caller.enabled else TokenState.DISABLED
    assert caller is None or (caller.kind is CallerKind.BOT and caller.name == "alpha")

    bot = reg.authenticate(token)
    by_authenticate = TokenState.NOBODYS if bot is None else TokenState.VALID if bot.enabled else TokenState.DISABLED

    valid = reg.valid_tokens([token_sha256(token)])
    assert set(valid.values()) <= {"alpha"}

    assert by_lua is by_authenticate is state
    assert bool(valid) is (state is TokenState.VALID)
