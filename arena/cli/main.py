"""The ``arena`` command: the entry point, and the only module that imports the command modules.

    arena local                                   # the main job: a local arena with the reference bots
    arena demo | play                             # one printed engine match; local matches, no Redis
    arena bot run|register|list|rotate-token|disable|enable
    arena match request|list|watch                # (``arena matches`` is an alias)
    arena transcript show|verify|get
    arena ladder show|history|h2h|rebuild|run
    arena serve | gateway | worker | referee serve   # the services

Each command group lives in its own module of this package with an ``add_parser(subparsers)``;
``arena.cli.common`` holds what they share.

Errors end here, one way: ``main`` turns a command's CliError, an OSError (a file, a busy port), Redis
or the gateway being unreachable, a bot that cannot be loaded, into one line ``arena: error: ...`` on
stderr and a non-zero exit status (the CliError's, else 1); anything unexpected the same way, naming
its type. ``arena --debug ...`` prints the traceback as well. Output cut short by a closed pipe
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

from arena.cli import bots, demo, ladder, local, matches, owners, play, services, tournament, transcripts
from arena.cli.common import CliError, json_stdout, report

COMMANDS = (local, demo, play, bots, owners, matches, transcripts, ladder, services, tournament)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arena", description="The bot arena for Shangri-La and Shanghaien.")
    parser.add_argument("--debug", action="store_true", help="on an error, print its traceback too")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


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
        code, message, expected = describe(e)
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


def describe(e: Exception) -> tuple[int, str, bool]:
    """An exception as the CLI reports it: exit status, one-line message, and whether it is an expected
    failure (else a bug, whose type the message names)."""
    import grpc
    import redis

    from arena.service.client import ArenaError
    from referee.transcript import TranscriptError
    from sdk.client import AuthenticationError, BotLoadError

    if isinstance(e, CliError):
        return e.code, e.message, True
    if isinstance(e, BotLoadError):
        return 2, str(e), True
    if isinstance(e, redis.ConnectionError | redis.TimeoutError):
        return 1, f"Redis is unavailable: {e}", True
    if isinstance(e, redis.RedisError):
        return 1, f"Redis: {e}", True
    if isinstance(e, OSError):
        text = e.strerror or str(e)
        return 1, f"{e.filename}: {text}" if e.filename else text, True
    if isinstance(e, ArenaError | TranscriptError | AuthenticationError):
        return 1, str(e), True
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
