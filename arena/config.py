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
        Setting("gateway", "ARENA_GATEWAY", "127.0.0.1:50051", "the arena's gateway (ArenaService) for clients"),
        Setting("admin_token", "ARENA_ADMIN_TOKEN", "", "the admin token, for admin calls"),
        Setting("token", "ARENA_BOT_TOKEN", "", "a bot's token"),
        Setting("listen", "ARENA_LISTEN", "", "address a service listens on (host:port)"),
        Setting("advertise", "ARENA_ADVERTISE", "", "address bots use to reach this worker"),
        Setting("metrics_port", "ARENA_METRICS_PORT", 0, "Prometheus /metrics port (0: none)"),
        Setting("log_level", "ARENA_LOG_LEVEL", "INFO", "log level"),
    )
}


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
            raise ValueError(f"{path}: {name} must be {'a whole number' if kind is int else 'a string'}, not {value!r}")
    return data


def resolve(name: str, flag: Any, file_values: dict[str, Any]) -> Any:
    """The setting ``name``: the flag if given, else its environment variable, the file, the default."""
    s = SETTINGS[name]
    if flag not in (None, ""):
        return flag
    env = os.environ.get(s.env)
    if env not in (None, ""):
        try:
            return type(s.default)(env) if not isinstance(s.default, str) else env
        except ValueError:
            raise ValueError(f"${s.env} must be a whole number, not {env!r}") from None
    if name in file_values:
        return file_values[name]
    return s.default
