"""What every ``arena`` command shares: settings, consoles, the gateway client, progress columns,
service start-up, argument types, error reporting and what ``--json`` prints. Command modules import
this and nothing else of ``arena.cli``.

``--json`` (the section at the end): the one place the commands turn a result into JSON, and the guard
that keeps stdout for it; docs/cli.md lists each command's shape.

Errors: a command raises ``CliError`` (or lets an OSError, a Redis or gRPC error through);
``arena.cli.main`` prints one line ``arena: error: ...`` on stderr and exits non-zero. Output: the
consoles print text as it is, never as rich markup: names, versions, actions and messages come from
bots and other people, so ``[/x]`` in one must not break a table, nor an escape sequence reach the
terminal (``visible``)."""

from __future__ import annotations

import argparse
import asyncio
import base64
import dataclasses
import enum
import json
import math
import os
import re
import signal
import sys
import textwrap
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any, Final, TextIO

from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor  # type: ignore[import-untyped]
from google.protobuf.message import Message  # type: ignore[import-untyped]
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from arena import config
from referee.games import TimeControl
from referee.wire.tls import ClientTls, ServerTls, TlsConfigError, client_tls, is_loopback, server_tls, tls_advice


class CliError(Exception):
    """A command cannot go on: ``arena: error: MESSAGE`` on stderr, exit status ``code`` (2: the
    command line asked for something impossible, e.g. a file that is not there; 1: it failed)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


_UNSEEN: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def visible(text: str) -> str:
    """``text`` with control and invisible formatting characters (terminal escape sequences, bidi
    overrides) written as escapes (``\x1b``); newlines and tabs stay."""
    return _UNSEEN.sub(lambda m: ascii(m.group())[1:-1], text)


class PlainConsole(Console):
    """A rich console that prints strings as they are: no markup (``[bold]`` is text), no emoji codes,
    and control characters made ``visible``. Style comes from ``style=`` or ``Text`` objects."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(visible(text), **kwargs)

    def on_broken_pipe(self) -> None:
        """Output cut short (``arena ... | head``): ``arena.cli.main`` ends quietly, as for ``print``."""
        self.quiet = True
        raise BrokenPipeError


console = PlainConsole(soft_wrap=True)
errors = PlainConsole(stderr=True, soft_wrap=True)
PROGRESS: Final[tuple[ProgressColumn, ...]] = (
    TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
    TimeElapsedColumn(),
)  # fmt: skip
REFERENCE_ALIASES: Final = {"reference": "strong"}


def progress(**kwargs: Any) -> Progress:
    """The progress bar every long command shows (on stderr unless ``console`` is given)."""
    kwargs.setdefault("console", errors)
    return Progress(*PROGRESS, **kwargs)


def _set_replicas(value: object) -> None:
    """Every Redis client of this process obeys ``redis_replicas``; a bot author's install, without the
    server extra, has no Redis client to set (and must not import redis: tests/test_lean_install.py)."""
    try:
        from arena import redis_client
    except ImportError:
        return
    redis_client.set_replicas(value)


def settings(args: argparse.Namespace) -> config.Settings:
    """Every setting resolved for this command (flag > environment > config file > default); CliError
    (exit 2) for a config file that cannot be read or holds something wrong, or a bad environment value."""
    path = config.config_file(getattr(args, "config", None))
    try:
        file_values = config.load_file(path)
    except OSError as e:
        raise CliError(f"config file {path}: {e.strerror or e}", 2) from None
    except ValueError as e:  # not TOML, or unknown settings (the message names the file)
        raise CliError(f"config file {path}: {e}" if str(path) not in str(e) else str(e), 2) from None
    try:
        resolved = config.Settings.resolve(vars(args), file_values)
        _set_replicas(resolved.redis_replicas)
    except ValueError as e:
        raise CliError(f"settings: {e}", 2) from None
    return resolved


def int_type(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: a whole number in [minimum, maximum]; anything else is a usage error (exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            bound = f"between {minimum:,} and {maximum:,}" if maximum is not None else f"at least {minimum:,}"
            raise argparse.ArgumentTypeError(f"must be {bound}, not {text}")
        return value

    parse.__name__ = "whole number"
    return parse


def float_type(minimum: float) -> Callable[[str], float]:
    """An argparse ``type``: a number at least ``minimum``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value >= minimum:  # NaN too
            raise argparse.ArgumentTypeError(f"must be at least {minimum:g}, not {text}")
        return value

    parse.__name__ = "number"
    return parse


positive_int: Final = int_type(1)
"""``--games``, ``--concurrency``, ``--limit``, ``--workers`` ...: 1 or more."""
non_negative_int: Final = int_type(0)
port_number: Final = int_type(0, 65_535)

TIME_CONTROL_FLAGS: Final = {
    "first_move_ms": (1, "first-move allowance"),
    "move_ms": (1, "per-move limit"),
    "bank_ms": (0, "a seat's reserve that overruns of the move limit draw on"),
    "grace_ms": (1, "network margin added to every deadline, never told to the bot"),
    "disconnect_grace_ms": (1, "how long a dropped bot may take to come back"),
    "join_timeout_ms": (1, "how long a match waits for its bots to join"),
}
"""Each ``TimeControl`` field's flag: its least value and what it is (tests check these are the fields)."""


def add_time_control(p: argparse.ArgumentParser) -> None:
    """A flag per ``TimeControl`` field (``--move-ms`` ...), for every command that sets up matches, so
    that each takes the same fields with the same bounds. The upper bounds are the control's own, so a
    value it would refuse is a usage error here; a flag not given keeps the game's default."""
    for name, (least, what) in TIME_CONTROL_FLAGS.items():
        top = TimeControl.FIELD_MAX_MS.get(name, TimeControl.MAX_MS)
        p.add_argument("--" + name.replace("_", "-"), type=int_type(least, top), help=f"{what} (default: the game's)")


def time_control_overrides(args: argparse.Namespace) -> dict[str, int]:
    """The time control fields given on the command line (``add_time_control``): what a match request
    sends, or what ``referee.games.time_control`` applies to the game's default."""
    return {name: value for name in TIME_CONTROL_FLAGS if (value := getattr(args, name)) is not None}


def host_port(text: str) -> str:
    """An argparse ``type``: ``HOST:PORT`` (port 0: any free one)."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65_535:
        raise argparse.ArgumentTypeError(f"write HOST:PORT (port 0: any free one), not {text!r}")
    return text


def add_launch_options(p: argparse.ArgumentParser) -> None:
    """``--listen`` and ``--wait-s``: where the referee of ``arena play``/``arena tournament`` listens, and
    how long it waits for a bot started by hand (``external:NAME``)."""
    p.add_argument("--listen", type=host_port, default="127.0.0.1:0", metavar="HOST:PORT",
                   help="the referee's address, for a bot started by hand elsewhere (default 127.0.0.1, any "
                        "free port)")  # fmt: skip
    p.add_argument("--wait-s", type=float_type(1), default=600.0,
                   help="seconds to wait for a bot started by hand to connect (default 600)")  # fmt: skip


def input_file(path: str | Path) -> Path:
    """A file named on the command line, readable: CliError (exit 2) naming it otherwise."""
    p = Path(path)
    if not p.exists():
        raise CliError(f"{path}: no such file", 2)
    if p.is_dir():
        raise CliError(f"{path}: is a folder, not a file", 2)
    return p


def add_settings(p: argparse.ArgumentParser, *names: str, prints_result: bool = True) -> None:
    """``--config``, a flag for each named setting (``arena.config.SETTINGS``) and, unless the command
    prints no result (the services), ``--json``."""
    p.add_argument("--config", help="TOML settings file (default $ARENA_CONFIG or ~/.config/arena/config.toml)")
    if "gateway" in names:  # every command that dials the gateway can verify it
        names = (*names, "tls", "tls_ca", "tls_server_name")
    if "redis_url" in names:  # every command that writes to Redis says how many replicas must hold a write
        names = (*names, "redis_replicas")
    for name in dict.fromkeys(names):
        s = config.SETTINGS[name]
        flag = "--" + ("redis" if name == "redis_url" else name.replace("_", "-"))
        kind: dict[str, Any] = {"type": port_number} if name.endswith("_port") else {}
        if isinstance(s.default, bool):
            kind = {"action": "store_true", "default": None}
        p.add_argument(flag, dest=name, help=f"{s.help} (env {s.env}; default {s.default!r})", **kind)
    if prints_result:
        add_json(p)


def add_json(p: argparse.ArgumentParser, what: str = "the result") -> None:
    """``--json``: the command prints ``what`` as JSON (docs/cli.md), and stdout holds nothing else."""
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON (stdout holds nothing else)")


def dial_tls(s: config.Settings) -> ClientTls | None:
    """How a command verifies the server it dials (None: plaintext); CliError (exit 2) for a CA file
    that cannot be read."""
    try:
        return client_tls(bool(s.tls), s.tls_ca or None, s.tls_server_name)
    except TlsConfigError as e:
        raise CliError(str(e), 2) from None


def listen_tls(s: config.Settings, listen: str) -> ServerTls | None:
    """A service's TLS from ``--tls-cert``/``--tls-key`` (CliError, exit 2, for unusable files); without
    them on an address other hosts can reach, a warning on stderr that tokens cross the network in clear."""
    try:
        tls = server_tls(s.tls_cert or None, s.tls_key or None)
    except TlsConfigError as e:
        raise CliError(str(e), 2) from None
    if tls is None and not is_loopback(listen):
        errors.print(
            Text.assemble(("arena: warning: ", "yellow bold"), f"{listen} is reachable from other hosts and serves "
                          "plaintext: bot and admin tokens cross the network in clear. Give --tls-cert and --tls-key "
                          "(or ARENA_TLS_CERT and ARENA_TLS_KEY)."),
            highlight=False,
        )  # fmt: skip
    return tls


def strong_admin_token(token: str, required: bool = False) -> str:
    """The configured admin token, refused at start-up (CliError, exit 2) when it is weak: an example
    value, or less than 32 bytes of randomness (``arena.tokens``). Empty is allowed unless ``required``."""
    from arena.tokens import weak_token_reason

    token = token or ""
    if token or required:
        reason = weak_token_reason(token, "the admin token (--admin-token / ARENA_ADMIN_TOKEN)")
        if reason is not None:
            raise CliError(f"refusing to start: {reason}", 2)
    return token


def rate_limits(s: config.Settings) -> Any:
    """The per-token rate limits from the settings (``arena.service.ratelimit.RateLimits``); CliError
    (exit 2) names a bad value."""
    from arena.service.ratelimit import RateLimits

    try:
        return RateLimits.from_settings(s)
    except ValueError as e:
        raise CliError(f"refusing to start: {e}", 2) from None


def transcript_archive(s: config.Settings, default: str = "") -> tuple[Any, float | None]:
    """The transcript archive and the retention in seconds from ``--archive`` (else ``default``) and
    ``--transcript-retention-min``: (None, None) without a folder; CliError (exit 2) for a bad value."""
    from arena.service.archive import TranscriptArchive

    folder = str(s.archive or default)
    try:
        minutes = float(s.transcript_retention_min)
    except (TypeError, ValueError):
        raise CliError(
            f"refusing to start: --transcript-retention-min {s.transcript_retention_min!r} is not a number", 2
        ) from None
    if not math.isfinite(minutes) or minutes < 0:
        raise CliError("refusing to start: --transcript-retention-min is 0 or more minutes", 2)
    if not folder:
        return None, None
    return TranscriptArchive(Path(folder)), minutes * 60


def client(s: config.Settings, token: str | None = None) -> Any:
    """A client of the gateway, with ``token`` (default: the admin token, else the owner's, else the bot's)."""
    from arena.service.client import ArenaClient

    return ArenaClient(
        s.gateway,
        token if token is not None else (s.admin_token or s.owner_token or s.token),
        tls=dial_tls(s),
    )


def run_service(main: Callable[[asyncio.Event], Any], *, uvloop: bool = True) -> int:
    """Run an async service until SIGINT/SIGTERM, then let it stop cleanly; on uvloop's event loop when
    ``uvloop`` (the service's default), else asyncio's own; ``ARENA_UVLOOP`` (1 or 0) overrides both."""

    async def runner() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await main(stop)

    chosen = os.environ.get("ARENA_UVLOOP", "1" if uvloop else "0") != "0"
    if chosen:  # libuv's loop: relayed moves cost less (docs/benchmarks.md)
        import uvloop as libuv

        libuv.run(runner())
    else:
        asyncio.run(runner())
    return 0


SERVER_MODULES: Final = frozenset({"redis", "prometheus_client", "matplotlib", "uvloop", "aiohttp", "jinja2"})
"""The top-level modules of the ``server`` extra's packages (pyproject.toml). Only the services import them,
inside their commands: a bot author's install (``pip install .`` in a clone) has none of them, and
``arena.cli.main`` turns a command's missing one into ``needs_server_extra``'s line (exit 2)."""


def needs_server_extra(command: str) -> str:
    """The one line for ``command`` (``arena gateway``) run without the ``server`` extra. The package is not
    on PyPI: the extra is installed from a clone of the repository."""
    return f"{command} needs the server extra: pip install '.[server]' in a clone of the repository"


def report(message: str) -> None:
    """The one way the CLI reports an error: ``arena: error: MESSAGE``, one line on stderr."""
    errors.print(Text.assemble(("arena: error: ", "red"), visible(" ".join(message.split()))), highlight=False)


def refused(e: Exception) -> str:
    """A refused call (``ArenaError``) as one line. When the arena does not answer because this client's
    TLS settings do not fit it, the line is the flag to add: gRPC's own text names none, so the handshake
    is tried again with Python's ssl, which says why (``referee.wire.tls.tls_advice``)."""
    target = getattr(e, "target", "")
    if getattr(e, "code", "") == "UNAVAILABLE" and target:
        advice = tls_advice(target, getattr(e, "tls", None))
        if advice is not None:
            return f"cannot talk to the arena at {target}: {advice}"
    return str(e)


def utc(t: float) -> str:
    """A timestamp as UTC date and minute, ``2026-11-26 22:43`` (``-`` for none): every time the CLI, the
    ladder's pages and charts and the replay page show is UTC, and the column or label says so."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M") if t else "-"


def print_table(table: Table, whole: Collection[str] = ()) -> None:
    """Print ``table`` on stdout without cutting anything: the columns whose header is in ``whole`` (ids,
    dates: what another command is given or a person reads as one) never wrap, the others wrap between
    words. A console too narrow even for that (``COLUMNS=80`` and a 46-character ladder match id) gets
    each row as a block instead, its first cell on a line of its own and the others as ``header: value``
    below it, since rich would otherwise shorten cells to ``ladder-s…``."""
    for column in table.columns:
        if str(column.header) in whole:
            column.no_wrap = True
            column.min_width = max(cell_len(str(c)) for c in [column.header, *column.cells])
    need = Measurement.get(console, console.options.update_width(100_000), table).minimum
    if need <= console.width:
        console.print(table)
        return
    if table.title:
        console.print(str(table.title), style="italic")
    columns = table.columns
    for row in range(table.row_count):
        cells = [str(list(c.cells)[row]) for c in columns]
        console.print(cells[0], style="bold")  # whole: a terminal wraps a line longer than itself
        items = []
        for column, value in zip(columns[1:], cells[1:], strict=True):
            item = f"{column.header}: {value}"
            items.append(item.replace(" ", "\xa0") if str(column.header) in whole else item)  # kept on one line
        for line in textwrap.wrap("; ".join(items), console.width - 2, break_long_words=False, break_on_hyphens=False):
            console.print("  " + line.replace("\xa0", " "))
    if table.caption:
        console.print("\n".join(textwrap.wrap(str(table.caption), console.width)), style="dim")


# ------------------------------------------------------------------------------------------ --json
#
# The rules, the same for every command (docs/cli.md):
# - every field is there, at its default value too (an offline bot has ``"online": false``, seat 0
#   ``"seat": 0``); a message field that is not set is ``null``;
# - enum values are spelled as the command line spells them: lowercase, without the enum's prefix
#   (``MATCH_STATE_FINISHED`` is ``"finished"``, as in ``arena match list --state finished``); the
#   ``*_UNSPECIFIED`` value is ``null``;
# - numbers are finite: an infinite or NaN float is ``null`` (JSON has no such numbers), and the text is
#   written with ``allow_nan=False``, so a value that slipped past this fails loudly instead of printing
#   ``Infinity``;
# - stdout holds the JSON and nothing else (``json_stdout``).
#
# Protobuf's own ``MessageToDict`` is not used: even with ``always_print_fields_with_no_presence`` it leaves
# unset message fields out, writes 64-bit integers as strings, infinities as the string ``"Infinity"`` and
# enum values with their prefix.

_targets: list[TextIO] = []  # where ``emit_json`` writes while a ``json_stdout`` block runs (innermost last)


def enum_text(descriptor: EnumDescriptor, number: int) -> str | None:
    """A proto enum value as the CLI spells it: ``MATCH_STATE_FINISHED`` -> ``finished``; None for the
    ``*_UNSPECIFIED`` value and for a number the enum does not have."""
    value = descriptor.values_by_number.get(number)
    if value is None or value.name.endswith("_UNSPECIFIED"):
        return None
    return str(value.name.removeprefix(_enum_prefix(descriptor)).lower())


def _enum_prefix(descriptor: EnumDescriptor) -> str:
    """``MATCH_STATE_`` for ``MatchState``: the zero value's name without ``UNSPECIFIED`` (buf's rule that
    every value carries the enum's name), else the enum's name in upper snake case."""
    zero = descriptor.values_by_number.get(0)
    if zero is not None and zero.name.endswith("_UNSPECIFIED"):
        return str(zero.name.removesuffix("UNSPECIFIED"))
    return re.sub(r"(?<!^)(?=[A-Z])", "_", descriptor.name).upper() + "_"


def proto_json(msg: Message) -> dict[str, Any]:
    """A protobuf message as a JSON object: every field of its type by its proto name, in declaration order."""
    out: dict[str, Any] = {}
    for field in msg.DESCRIPTOR.fields:
        value = getattr(msg, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = {str(k): _field_value(value_field, v) for k, v in value.items()}
        elif field.is_repeated:
            out[field.name] = [_field_value(field, v) for v in value]
        elif field.has_presence and not msg.HasField(field.name):
            out[field.name] = None
        else:
            out[field.name] = _field_value(field, value)
    return out


def _field_value(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return proto_json(value)
    if field.type == FieldDescriptor.TYPE_ENUM:
        return enum_text(field.enum_type, value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    return json_value(value)


def json_value(value: Any) -> Any:
    """``value`` as JSON's types: messages as ``proto_json``, dataclasses as their fields, enums as their
    value, paths as text, tuples and sets as lists, and every float that is not finite as None."""
    if isinstance(value, enum.Enum):
        return json_value(value.value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Message):
        return proto_json(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: json_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_value(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"no JSON form for {type(value).__name__}")


def standing_json(s: Any) -> dict[str, Any]:
    """A ladder ``Standing`` (``arena ladder show``, ``arena local``): its rank, the bot's owner, the row's
    fields, the 95% error bar, whether the rating is still provisional and the whole-history fit (null
    before the ladder has one of the version)."""
    fitted = None if s.fit is None else {"rating": s.fit.rating, "error": s.fit.error, "sd": s.fit.sd,
                                         "games": s.fit.games}  # fmt: skip
    return {"rank": s.rank, "owner": s.owner, **s.row.to_dict(), "error": s.row.error,
            "provisional": s.row.provisional, "fit": fitted}  # fmt: skip


def json_text(value: Any) -> str:
    """The JSON text of ``value`` (through ``json_value``), on one line; ValueError if a non-finite number remains."""
    return json.dumps(json_value(value), allow_nan=False)


def emit_json(value: Any) -> None:
    """Print ``value`` as one line of JSON on stdout: a command's whole ``--json`` output, or one line of a
    stream of JSON Lines."""
    out = _targets[-1] if _targets else sys.stdout
    out.write(json_text(value) + "\n")
    out.flush()


def emit_json_line(text: str) -> None:
    """Print one line that is JSON already (a transcript line) as it is, after checking that it is one
    JSON value with finite numbers: ValueError otherwise."""
    json.loads(text, parse_constant=_refuse_constant)
    out = _targets[-1] if _targets else sys.stdout
    out.write(text.rstrip("\n") + "\n")
    out.flush()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


@contextmanager
def json_stdout() -> Iterator[None]:
    """While a ``--json`` command runs, stdout is kept for ``emit_json``: anything else written to it, a message,
    a progress bar, a library's print, a bot's print in a child process, goes to stderr instead. At the
    file-descriptor level when stdout is a real file (child processes inherit descriptor 1), else (tests
    that capture ``sys.stdout``) by swapping ``sys.stdout``."""
    real = sys.stdout
    real.flush()
    fd: int | None = None
    try:
        fd, err_fd = real.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # not backed by a descriptor (a test's capture)
        fd = None
    target: TextIO = real
    if fd is not None:
        sys.stderr.flush()
        target = os.fdopen(os.dup(fd), "w", encoding="utf-8", closefd=True)
        os.dup2(err_fd, fd)
    sys.stdout = sys.stderr
    _targets.append(target)
    try:
        yield
    finally:
        _targets.pop()
        sys.stdout = real
        if fd is not None:
            sys.stderr.flush()
            os.dup2(target.fileno(), fd)
            target.close()
