"""``arena event``: the admin's competitions on the arena (``create``, ``list``, ``show``, ``pause``,
``resume``, ``cancel``, ``export``), through the gateway's EventService (docs/events.md)."""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.table import Table

from arena.cli.common import (
    CliError,
    add_settings,
    add_time_control,
    console,
    dial_tls,
    emit_json,
    float_type,
    non_negative_int,
    positive_int,
    print_table,
    settings,
    time_control_overrides,
    utc,
)
from referee import games


def start_time(text: str) -> float:
    """An argparse ``type``: ``now``, ``+MINUTES`` from now, or an ISO 8601 time (UTC unless it says)."""
    if text == "now":
        return 0.0
    if text.startswith("+"):
        try:
            return time.time() + 60 * float(text[1:])
        except ValueError:
            raise argparse.ArgumentTypeError(f"+MINUTES, not {text!r}") from None
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"now, +MINUTES or an ISO 8601 time such as 2026-12-01T18:00, not {text!r}"
        ) from None
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


def events_client(args: argparse.Namespace) -> Any:
    from arena.events.client import EventClient

    s = settings(args)
    return EventClient(s.gateway, s.admin_token or "", tls=dial_tls(s))


def print_event(e: Any) -> None:
    entrants = ", ".join(f"{x.name}@{x.version}" for x in e.entrants)
    start = "at creation" if not e.start_at or e.start_at <= e.created_at else f"{utc(e.start_at)} UTC"
    console.print(f"event {e.event_id}: {e.game_id}, {e.format}, {e.state}; starts {start}; "
                  f"{e.games_per_pairing} games a pairing{', rated' if e.rated else ''}")  # fmt: skip
    console.print(f"entrants ({len(e.entrants)}): {entrants}")
    console.print(f"matches: {e.matches_played} played, {e.matches_forfeited} forfeited, {e.matches_remaining} to play")


def cmd_event_create(args: argparse.Namespace) -> int:
    if not args.bot and not args.top:
        raise CliError("name the entrants: --bot NAME[@VERSION] (again for each), and/or --top N from the ladder", 2)
    with events_client(args) as c:
        e = c.create(
            args.event_id, args.game, args.format, args.bot or [], top=args.top, games_per_pairing=args.games,
            time_control=time_control_overrides(args), start_at=args.start, rated=args.rated, rounds=args.rounds,
            share=args.share, grace_s=args.grace_s,
        )  # fmt: skip
    if args.json:
        emit_json(e)
    else:
        print_event(e)
    return 0


def cmd_event_list(args: argparse.Namespace) -> int:
    with events_client(args) as c:
        events = c.list()
    if args.json:
        emit_json(events)
        return 0
    table = Table()
    for col in ("event", "game", "format", "state", "entrants", "played", "to play", "created (UTC)"):
        table.add_column(col)
    for e in events:
        table.add_row(e.event_id, e.game_id, e.format, e.state, str(len(e.entrants)), str(e.matches_played),
                      str(e.matches_remaining), utc(e.created_at))  # fmt: skip
    print_table(table, whole=("event", "created (UTC)"))
    return 0


def cmd_event_show(args: argparse.Namespace) -> int:
    with events_client(args) as c:
        summary = c.show(args.event_id)
    if args.json:
        emit_json(summary)
        return 0
    e, st = summary["event"], summary["standings"]
    console.print(f"event {e['event_id']}: {e['game_id']}, {e['format']}, {e['state']}; {st['matches_played']} "
                  f"played, {st['matches_forfeited']} forfeited, {st['remaining']} to play")  # fmt: skip
    table = Table(title="standings (Elo: whole-event fit, 95% bar; LOS: likelihood above the next place)")
    for col in ("#", "bot", "version", "points", "Elo", "LOS", "matches", "forfeits"):
        table.add_column(col)
    for r in st["rows"]:
        los = "-" if r["los_next"] is None else f"{100 * r['los_next']:.0f}%"
        elo = f"{r['elo']:+.0f} ± {r['elo_error']:.0f}"
        table.add_row(str(r["rank"]), r["name"], r["version"], f"{r['points']:g}/{r['pair_games']}", elo, los,
                      str(r["matches"]), str(r["forfeits"]))  # fmt: skip
    print_table(table, whole=("bot", "version"))
    names = [r["name"] for r in st["rows"]]
    cross = {(x["player"], x["opponent"]): x for x in st["cross_table"]}
    grid = Table(title="cross table (row's points against column / games)")
    grid.add_column("")
    for k in range(len(names)):
        grid.add_column(str(k + 1))
    for i, a in enumerate(names):
        cells = ["x" if a == b else f"{cross[a, b]['points']:g}/{cross[a, b]['games']}" for b in names]
        grid.add_row(f"{i + 1} {a}", *cells)
    print_table(grid)
    return 0


def cmd_event_change(args: argparse.Namespace) -> int:
    with events_client(args) as c:
        e = c.change(args.event_id, args.event_command)
    if args.json:
        emit_json(e)
    else:
        console.print(f"event {e.event_id} is {e.state}")
    return 0


def cmd_event_export(args: argparse.Namespace) -> int:
    with events_client(args) as c:
        text = c.export(args.event_id, args.format)
    if args.output:
        Path(args.output).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    if args.json:
        emit_json({"event_id": args.event_id, "format": args.format, "file": args.output,
                   "text": None if args.output else text})  # fmt: skip
    elif args.output:
        console.print(f"wrote {args.output}")
    else:
        print(text.rstrip("\n"))
    return 0


def add_parser(sub: Any) -> None:
    event = sub.add_parser("event", help="competitions on the arena (admin)").add_subparsers(
        dest="event_command", required=True
    )
    p = event.add_parser("create", help="a new event: frozen entrants, their matches played beside the ladder")
    add_settings(p, "gateway", "admin_token")
    p.add_argument("event_id", help="1-40 lowercase letters, digits, - and _")
    p.add_argument("--game", required=True, choices=games.GAME_IDS)
    p.add_argument("--format", default="round-robin", choices=("round-robin", "gauntlet", "swiss"),
                   help="gauntlet: the first --bot against the field")  # fmt: skip
    p.add_argument("--bot", action="append", metavar="NAME[@VERSION]",
                   help="an entrant, frozen at VERSION (default: the one it last connected with); repeat")  # fmt: skip
    p.add_argument("--top", type=non_negative_int, default=0, help="also enter the ladder's best N bots now")
    p.add_argument("--games", type=positive_int, default=2,
                   help="games per pairing (table), rounded up to whole rotations of seats (default 2)")  # fmt: skip
    p.add_argument("--rounds", type=non_negative_int, default=0, help="Swiss rounds")
    p.add_argument("--start", type=start_time, default=0.0, help="now (default), +MINUTES or an ISO 8601 time (UTC)")
    p.add_argument("--rated", action="store_true", help="its results move the ladder too")
    p.add_argument("--share", type=float_type(0.01), default=0.0,
                   help="fraction of the ladder's queue its waiting matches may fill (default 0.5)")  # fmt: skip
    p.add_argument("--grace-s", type=float_type(0), default=-1.0,
                   help="how long a match waits for an absent bot before it forfeits (default 600)")  # fmt: skip
    add_time_control(p)
    p.set_defaults(func=cmd_event_create)
    p = event.add_parser("list", help="every event, newest first")
    add_settings(p, "gateway", "admin_token")
    p.set_defaults(func=cmd_event_list)
    p = event.add_parser("show", help="an event's standings and cross table")
    add_settings(p, "gateway", "admin_token")
    p.add_argument("event_id")
    p.set_defaults(func=cmd_event_show)
    for action, what in (("pause", "queue no new match until resumed"), ("resume", "go on after a pause"),
                         ("cancel", "stop for good; the standings stay as they are")):  # fmt: skip
        p = event.add_parser(action, help=what)
        add_settings(p, "gateway", "admin_token")
        p.add_argument("event_id")
        p.set_defaults(func=cmd_event_change)
    p = event.add_parser("export", help="the standings as CSV or JSON")
    add_settings(p, "gateway", "admin_token")
    p.add_argument("event_id")
    p.add_argument("--format", default="csv", choices=("csv", "json"))
    p.add_argument("--output", "-o", help="write to this file instead of stdout")
    p.set_defaults(func=cmd_event_export)
