"""The bot registry against a real Redis: tokens shown once and stored only as hashes, rotation,
disabling, presence; and the settings precedence of the CLI (flag > environment > file > default)."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

import pytest
import redis

from arena import config
from arena.service.registry import DuplicateBotError, Registry, RegistryError, UnknownBotError
from referee.wire.values import token_sha256


def test_tokens_are_shown_once_and_only_their_hashes_are_stored(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    reg = Registry(r)
    bot, token = reg.register("alpha", "ann", ["shanghaien", "shangrila-4p"])
    assert bot.game_ids == ("shanghaien", "shangrila-4p") and bot.enabled and not bot.online
    assert token.startswith("arena_") and len(token) > 40
    read: dict[Any, Any] = {b"string": r.get, b"hash": r.hgetall, b"set": r.smembers}
    dump = repr([(k, read[r.type(k)](k)) for k in r.keys("*")]).encode()  # every key and value
    assert token.encode() not in dump and token_sha256(token).encode() in dump
    assert reg.authenticate(token) == reg.get("alpha")
    assert reg.authenticate("arena_guess") is None and reg.authenticate(None) is None


def test_rotation_invalidates_the_old_token_at_once(redis_url: str) -> None:
    reg = Registry(redis.Redis.from_url(redis_url))
    _, old = reg.register("alpha", "ann", ["shanghaien"])
    new = reg.rotate_token("alpha")
    assert new != old
    assert reg.authenticate(old) is None
    found = reg.authenticate(new)
    assert found is not None and found.name == "alpha"
    with pytest.raises(UnknownBotError):
        reg.rotate_token("nobody")


def test_registration_errors_change_nothing(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    reg = Registry(r)
    reg.register("alpha", "ann", ["shanghaien"])
    before = sorted(r.keys("*"))
    for name, owner, games, fragment in [
        ("alpha", "bob", ["shanghaien"], "exists"),
        ("bad name", "bob", ["shanghaien"], "bad bot name"),
        ("beta", "", ["shanghaien"], "owner"),
        ("beta", "bob", [], "at least one game"),
        ("beta", "bob", ["chess"], "unknown game"),
    ]:
        with pytest.raises(RegistryError, match=fragment):
            reg.register(name, owner, games)
    assert sorted(r.keys("*")) == before
    with pytest.raises(DuplicateBotError):
        reg.register("alpha", "ann", ["shanghaien"])


def test_disabling_presence_and_the_admin_token(redis_url: str) -> None:
    reg = Registry(redis.Redis.from_url(redis_url))
    reg.register("alpha", "ann", ["shanghaien"])
    assert reg.set_enabled("alpha", False, "flooding").disabled_reason == "flooding"
    assert not reg.get("alpha").enabled
    assert reg.set_enabled("alpha", True).enabled
    reg.seen("alpha", "3.1", {"session_id": "s"})
    assert reg.online("alpha") and reg.get("alpha").version == "3.1"
    reg.gone("alpha")
    assert not reg.online("alpha")
    assert not reg.is_admin("secret")
    reg.set_admin_token("secret")
    assert reg.is_admin("secret") and not reg.is_admin("Secret") and not reg.is_admin(None)


def test_settings_flag_beats_environment_beats_file_beats_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "arena.toml"
    f.write_text('redis_url = "redis://file:1/0"\ngateway = "file:2"\nmetrics_port = 9000\n')
    values = config.load_file(f)
    monkeypatch.setenv("ARENA_GATEWAY", "env:3")
    monkeypatch.delenv("ARENA_REDIS_URL", raising=False)
    monkeypatch.delenv("ARENA_METRICS_PORT", raising=False)
    assert config.resolve("redis_url", "redis://flag:4/0", values) == "redis://flag:4/0"
    assert config.resolve("redis_url", None, values) == "redis://file:1/0"
    assert config.resolve("gateway", None, values) == "env:3"
    assert config.resolve("metrics_port", None, values) == 9000
    assert config.resolve("log_level", None, values) == "INFO"
    bad = tmp_path / "bad.toml"
    bad.write_text('redis = "x"\n')
    with pytest.raises(ValueError, match="unknown setting"):
        config.load_file(bad)


def test_the_typed_settings_are_the_tables_names_in_order_each_typed_by_its_default() -> None:
    """``config.Settings`` is derived from ``config.SETTINGS``: a setting added to the table without its field
    (or a field without its row, or typed apart from its default) fails here."""
    hints = typing.get_type_hints(config.Settings)
    assert [f.name for f in dataclasses.fields(config.Settings)] == list(config.SETTINGS)
    for name, s in config.SETTINGS.items():
        kind = type(s.default)
        assert isinstance(s.default, hints[name]), name
        assert hints[name] is kind or (kind is int and hints[name] == config.NumberText), name  # a flag's text
    assert config.Settings.defaults() == config.Settings(**{n: s.default for n, s in config.SETTINGS.items()})


def test_the_typed_settings_resolve_each_setting_as_the_table_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "arena.toml"
    f.write_text('gateway = "file:2"\nmetrics_port = 9000\n')
    values = config.load_file(f)
    for s in config.SETTINGS.values():
        monkeypatch.delenv(s.env, raising=False)
    monkeypatch.setenv("ARENA_TLS", "1")
    monkeypatch.setenv("ARENA_MATCH_REQUESTS_PER_MIN", "7")
    got = config.Settings.resolve({"redis_url": "redis://flag:4/0", "rate_window_s": "2.5", "log_level": None}, values)
    assert got == dataclasses.replace(
        config.Settings.defaults(), redis_url="redis://flag:4/0", gateway="file:2", metrics_port=9000, tls=True,
        match_requests_per_min=7, rate_window_s="2.5",
    )  # fmt: skip
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.gateway = "x"  # type: ignore[misc]
