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
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from arena.cli import bots, demo, ladder, local, matches, play, services, transcripts

COMMANDS = (local, demo, play, bots, matches, transcripts, ladder, services)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arena", description="The bot arena for Shangri-La and Shanghaien.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
