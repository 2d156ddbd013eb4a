"""What every ``arena`` command shares: settings, consoles, the gateway client, progress columns,
service start-up and error reporting. Command modules import this and nothing else of ``arena.cli``."""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn

from arena import config

console = Console(soft_wrap=True)
errors = Console(stderr=True, soft_wrap=True)
PROGRESS: Final[tuple[ProgressColumn, ...]] = (
    TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
)  # fmt: skip
REFERENCE_ALIASES: Final = {"reference": "strong"}


def progress(**kwargs: Any) -> Progress:
    """The progress bar every long command shows (on stderr unless ``console`` is given)."""
    kwargs.setdefault("console", errors)
    return Progress(*PROGRESS, **kwargs)


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """Every setting resolved for this command (flag > environment > config file > default)."""
    file_values = config.load_file(config.config_file(getattr(args, "config", None)))
    return {name: config.resolve(name, getattr(args, name, None), file_values) for name in config.SETTINGS}


def add_settings(p: argparse.ArgumentParser, *names: str) -> None:
    """``--config``, a flag for each named setting (``arena.config.SETTINGS``) and ``--json``."""
    p.add_argument("--config", help="TOML settings file (default $ARENA_CONFIG or ~/.config/arena/config.toml)")
    for name in names:
        s = config.SETTINGS[name]
        flag = "--" + ("redis" if name == "redis_url" else name.replace("_", "-"))
        p.add_argument(flag, dest=name, help=f"{s.help} (env {s.env}; default {s.default!r})")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")


def client(s: dict[str, Any], token: str | None = None) -> Any:
    """A client of the gateway, with ``token`` (default: the admin token, else the bot token)."""
    from arena.service.client import ArenaClient

    return ArenaClient(s["gateway"], token if token is not None else (s["admin_token"] or s["token"]))


def run_service(main: Callable[[asyncio.Event], Any]) -> int:
    """Run an async service until SIGINT/SIGTERM, then let it stop cleanly."""

    async def runner() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await main(stop)

    asyncio.run(runner())
    return 0


def error(e: Exception) -> int:
    """Report a refused call on stderr; the command's exit status."""
    errors.print(f"[red]error:[/red] {e}")
    return 1


def utc(t: float) -> str:
    """A timestamp as UTC date and time (``-`` for none)."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S") if t else "-"

