"""Settings of the ``arena`` command: a flag beats an environment variable, which beats the config
file, which beats the default.

The config file is TOML, flat, with the setting names below as keys; it is read from ``--config``,
else ``$ARENA_CONFIG``, else ``~/.config/arena/config.toml`` when it exists. Example::

    redis_url = "redis://10.0.0.5:6379/0"
    gateway = "arena.example.org:50051"
    admin_token = "arena_..."
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final


@dataclass(frozen=True)
class Setting:
    name: str
    env: str
    default: Any
    help: str


SETTINGS: Final = {
    s.name: s
    for s in (
        Setting("redis_url", "ARENA_REDIS_URL", "redis://127.0.0.1:6379/0", "Redis, the arena's system of record"),
        Setting(
            "redis_replicas",
            "ARENA_REDIS_REPLICAS",
            -1,
            "replicas that must hold a write the arena must not lose (a result, a registration, a token, a "
            "ladder batch) before it is done (WAIT); -1: 1 behind a Sentinel URL or when the primary has "
            "replicas, else 0",
        ),
        Setting("gateway", "ARENA_GATEWAY", "127.0.0.1:50051", "the arena's gateway (ArenaService) for clients"),
        Setting("admin_token", "ARENA_ADMIN_TOKEN", "", "the admin token, for admin calls"),
        Setting("token", "ARENA_BOT_TOKEN", "", "a bot's token"),
        Setting("owner_token", "ARENA_OWNER_TOKEN", "", "an owner's token (a bot author's: manages its own bots)"),
        Setting(
            "session_opens_per_min",
            "ARENA_SESSION_OPENS_PER_MIN",
            120,
            "sessions and Play streams a bot token may open per rate window (0: no limit)",
        ),
        Setting(
            "match_requests_per_min",
            "ARENA_MATCH_REQUESTS_PER_MIN",
            30,
            "matches an owner token may request per rate window (0: no limit)",
        ),
        Setting("rate_window_s", "ARENA_RATE_WINDOW_S", 60, "the rate limits' window, in seconds"),
        Setting(
            "archive",
            "ARENA_ARCHIVE",
            "",
            "folder of archived transcripts (shared by every gateway); empty: transcripts stay in Redis",
        ),
        Setting(
            "transcript_retention_min",
            "ARENA_TRANSCRIPT_RETENTION_MIN",
            0,
            "minutes a finished match's transcript stays in Redis before it moves to --archive (0: "
            "seconds after it ends; sooner when Redis is half full)",
        ),
        Setting(
            "ladder_games_per_hour",
            "ARENA_LADDER_GAMES_PER_HOUR",
            60,
            "ladder matches the scheduler queues per bot and hour at most (0: no limit)",
        ),
        Setting("listen", "ARENA_LISTEN", "", "address a service listens on (host:port)"),
        Setting("advertise", "ARENA_ADVERTISE", "", "address bots use to reach this worker"),
        Setting(
            "play_proxy",
            "ARENA_PLAY_PROXY",
            "",
            "the gateway's assignments send bots to play through the "
            "Play proxy (nginx, `arena proxy-config`) at this public HOST:PORT, with each worker's route; "
            "empty: through the gateway's own relay",
        ),
        Setting("metrics_port", "ARENA_METRICS_PORT", 0, "Prometheus /metrics port (0: none)"),
        Setting("log_level", "ARENA_LOG_LEVEL", "INFO", "log level"),
        Setting("tls_cert", "ARENA_TLS_CERT", "", "this service's TLS certificate chain (PEM); with --tls-key"),
        Setting("tls_key", "ARENA_TLS_KEY", "", "this service's TLS private key (PEM)"),
        Setting("tls", "ARENA_TLS", False, "dial with TLS, verifying the server (system roots or --tls-ca)"),
        Setting("tls_ca", "ARENA_TLS_CA", "", "CA bundle (PEM) that signed the server's certificate; implies --tls"),
        Setting(
            "tls_server_name",
            "ARENA_TLS_SERVER_NAME",
            "",
            "name the server's certificate must carry, when it is not the host dialled",
        ),
    )
}


NumberText = int | str
"""A number setting: a whole number from the environment, the file or the default, but a flag's text as
typed; the service that uses it parses it, so that its refusal names the setting (``RateLimits.from_settings``)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting resolved for one command, as typed attributes instead of a dict read by string key,
    so that mypy catches a misspelt or mistyped one. ``SETTINGS`` stays the one place a setting, its
    default, variable and help live: the fields are its names in its order, each typed by its default
    (``tests/test_registry.py`` checks that they agree)."""

    redis_url: str
    redis_replicas: NumberText
    gateway: str
    admin_token: str
    token: str
    owner_token: str
    session_opens_per_min: NumberText
    match_requests_per_min: NumberText
    rate_window_s: NumberText
    archive: str
    transcript_retention_min: NumberText
    ladder_games_per_hour: NumberText
    listen: str
    advertise: str
    play_proxy: str
    metrics_port: int  # its flag is parsed as a port already
    log_level: str
    tls_cert: str
    tls_key: str
    tls: bool
    tls_ca: str
    tls_server_name: str

    @classmethod
    def defaults(cls) -> Settings:
        """Every setting at its default, whatever the environment and config file say (for tests)."""
        return cls(**{name: s.default for name, s in SETTINGS.items()})

    @classmethod
    def resolve(cls, flags: Mapping[str, Any], file_values: dict[str, Any]) -> Settings:
        """Every setting from its flag in ``flags`` (absent or None: not given), else its environment
        variable, the file, the default (``resolve``). ValueError names a bad environment value."""
        return cls(**{name: resolve(name, flags.get(name), file_values) for name in SETTINGS})


def config_file(explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit)
    env = os.environ.get("ARENA_CONFIG")
    if env:
        return Path(env)
    default = Path.home() / ".config" / "arena" / "config.toml"
    return default if default.is_file() else None


def load_file(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    with path.open("rb") as f:
        data = tomllib.load(f)
    unknown = set(data) - set(SETTINGS)
    if unknown:
        raise ValueError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}; known: {', '.join(SETTINGS)}")
    for name, value in data.items():
        kind = type(SETTINGS[name].default)
        if type(value) is not kind:  # bool is an int, but not a port
            want = {int: "a whole number", bool: "true or false"}.get(kind, "a string")
            raise ValueError(f"{path}: {name} must be {want}, not {value!r}")
    return data


def resolve(name: str, flag: Any, file_values: dict[str, Any]) -> Any:
    """The setting ``name``: the flag if given, else its environment variable, the file, the default."""
    s = SETTINGS[name]
    if flag not in (None, ""):
        return flag
    env = os.environ.get(s.env)
    if env not in (None, "") and isinstance(s.default, bool):
        if env.lower() in ("1", "true", "yes", "on"):
            return True
        if env.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"${s.env} must be 1 or 0 (true or false), not {env!r}")
    if env not in (None, ""):
        try:
            return type(s.default)(env) if not isinstance(s.default, str) else env
        except ValueError:
            raise ValueError(f"${s.env} must be a whole number, not {env!r}") from None
    if name in file_values:
        return file_values[name]
    return s.default
