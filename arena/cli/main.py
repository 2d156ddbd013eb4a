"""The ``arena`` command: the entry point, and the only module that imports the command modules.

    arena local                                   # the main job: a local arena with the reference bots
    arena demo | play | tournament                # one printed engine match; local matches, no Redis
    arena bot run|check|register|list|rotate-token|disable|enable|retire|add-game
    arena owner create|list|set-max-bots|rotate
    arena match request|list|watch                # (``arena matches`` is an alias)
    arena transcript show|verify|get|html
    arena ladder show|history|h2h|rebuild|run
    arena event create|list|show|pause|resume|cancel|export   # competitions (admin)
    arena serve | gateway | worker | web | referee serve   # the services
    arena proxy-config                            # nginx's config for the public Play path (the Play proxy)

Each command group lives in its own module of this package with an ``add_parser(subparsers)``;
``arena.cli.common`` holds what they share.

Errors end here, one way: ``main`` turns a command's CliError, an OSError (a file, a busy port), Redis
or the gateway being unreachable, a bot that cannot be loaded, into one line ``arena: error: ...`` on
stderr and a non-zero exit status (the CliError's, else 1); anything unexpected the same way, naming
its type. An arena that does not answer because the client's TLS settings do not fit it (plaintext to a
TLS port, a CA that did not sign its certificate, a name not on it) is told as the flag to add.
``arena --debug ...`` prints the traceback as well. A service command run without the ``server`` extra
(a bot author's install: a module of ``arena.cli.common.SERVER_MODULES`` missing) is one line too,
``arena gateway needs the server extra: pip install ...``, exit 2. Output cut short by a closed pipe
(``arena ... | head``) ends quietly. Usage errors are argparse's: its message and exit status 2.

With ``--json`` stdout holds the command's JSON and nothing else (``arena.cli.common``'s ``--json``
section; the shapes in docs/cli.md): whatever else would have gone there goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from arena.cli import (
    bots,
    check,
    demo,
    events,
    ladder,
    local,
    matches,
    owners,
    play,
    services,
    tournament,
    transcripts,
    web,
)  # fmt: skip
from arena.cli.common import SERVER_MODULES, CliError, json_stdout, needs_server_extra, refused, report

COMMANDS = (local, demo, play, bots, owners, matches, transcripts, ladder, events, services, web, tournament)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arena", description="The bot arena for Shangri-La and Shanghaien.")
    parser.add_argument("--debug", action="store_true", help="on an error, print its traceback too")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        commands = module.add_parser(sub)
        if module is bots:
            check.add_parser(commands)  # arena bot check
    _name_commands(parser)
    return parser


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Give every (sub)command's arguments ``command_name``, its words (``arena ladder run``): the deepest
    command's default is the one parsed."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                command.set_defaults(command_name=command.prog)
                _name_commands(command)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "json", False):  # stdout is the JSON's alone (docs/cli.md)
            with json_stdout():
                result: int = args.func(args)
        else:
            result = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return result
    except BrokenPipeError:
        _discard_stdout()
        return 141  # as if killed by SIGPIPE, the way `head` leaves a writer
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        code, message, expected = describe(e, getattr(args, "command_name", "arena"))
        if args.debug:
            traceback.print_exc()
        elif not expected:
            message += " (arena --debug shows the traceback)"
        from referee import logs

        if logs.json_on_stderr():  # a service's stderr is JSON lines: its last line is one too
            import structlog

            log = structlog.get_logger("arena.cli")
            log.error("exiting", error=message, error_type=type(e).__name__, exit_code=code)
        else:
            report(message)
        return code


def describe(e: Exception, command: str = "arena") -> tuple[int, str, bool]:
    """An exception as the CLI reports it (``command``: the command's words, ``arena gateway``): exit
    status, one-line message, and whether it is an expected failure (else a bug, whose type the message
    names)."""
    import grpc

    from arena.errors import ArenaError
    from referee.transcript import TranscriptError
    from sdk.client import AuthenticationError, BotLoadError

    # Only a command that imported redis can have raised its errors: a bot author's install has none.
    redis: Any = sys.modules.get("redis")
    if isinstance(e, CliError):
        return e.code, e.message, True
    if isinstance(e, BotLoadError):
        return 2, str(e), True
    if isinstance(e, ModuleNotFoundError) and (e.name or "").partition(".")[0] in SERVER_MODULES:
        return 2, needs_server_extra(command), True
    if redis is not None and isinstance(e, redis.ConnectionError | redis.TimeoutError):
        return 1, f"Redis is unavailable: {e}", True
    if redis is not None and isinstance(e, redis.RedisError):
        return 1, f"Redis: {e}", True
    if isinstance(e, OSError):
        text = e.strerror or str(e)
        return 1, f"{e.filename}: {text}" if e.filename else text, True
    if isinstance(e, ArenaError | TranscriptError | AuthenticationError):
        return 1, refused(e), True
    if isinstance(e, grpc.RpcError) and hasattr(e, "code"):
        return 1, f"{e.details() or 'call failed'} ({e.code().name})", True
    return 1, f"{type(e).__name__}: {e}", False


def _discard_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null, so that flushing it at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (tests capture it)
        pass


if __name__ == "__main__":
    sys.exit(main())
