"""``arena match``: queue a match, list matches, follow one live (``arena matches`` is an alias)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
from rich.table import Table

from arena.cli.common import add_settings, client, console, error, progress, settings, utc
from referee import games


def _time_control(args: argparse.Namespace) -> dict[str, int]:
    return {k: v for k, v in (("move_ms", args.move_ms), ("first_move_ms", args.first_move_ms),
                              ("bank_ms", args.bank_ms)) if v is not None}  # fmt: skip


def cmd_match_request(args: argparse.Namespace) -> int:
    from arena.service.client import ArenaError

    s = settings(args)
    try:
        with client(s, s["admin_token"]) as c:
            match_id, seed_hash = c.request_match(
                args.game, args.bots, seed=args.seed or "", rated=args.rated, match_id=args.id or "",
                time_control=_time_control(args),
            )  # fmt: skip
            if args.wait:
                with progress(transient=True) as bar:
                    bar.add_task(f"waiting for {match_id}", total=None)
                    while c.describe(match_id).state != 3:
                        time.sleep(0.5)
                m = c.describe(match_id)
    except ArenaError as e:
        return error(e)
    if args.json:
        out: dict[str, Any] = {"match_id": match_id, "seed_sha256": seed_hash}
        if args.wait:
            out["match"] = MessageToDict(m, preserving_proto_field_name=True)
        print(json.dumps(out))
        return 0
    console.print(f"queued {match_id} (seed hash {seed_hash})")
    if args.wait:
        _print_matches([m])
    return 0


def _print_matches(matches: list[Any]) -> None:
    table = Table()
    for col in ("match", "game", "state", "bots", "rated", "requested", "result"):
        table.add_column(col)
    states = {1: "queued", 2: "running", 3: "finished"}
    for m in matches:
        result = "-"
        if m.HasField("result"):
            r = m.result
            end = {1: "completed", 2: "aborted", 3: "forfeit"}.get(r.end_reason, "?")
            result = end + ": " + ", ".join(f"{x.bot_name} #{x.rank} ({x.score})" for x in r.seats)
        table.add_row(
            m.match_id, m.game_id, states.get(m.state, "?"), ", ".join(m.bot_names), "yes" if m.rated else "no",
            utc(m.enqueued_at), result,
        )  # fmt: skip
    console.print(table)


def cmd_match_list(args: argparse.Namespace) -> int:
    from arena.service.client import ArenaError

    s = settings(args)
    states = {"queued": 1, "running": 2, "finished": 3}
    try:
        with client(s, "") as c:
            matches = c.list_matches(
                bot_name=args.bot or "", game_id=args.game or "", limit=args.limit,
                since=time.time() - args.since_hours * 3600 if args.since_hours else 0,
                state=states.get(args.state or "", 0),
            )  # fmt: skip
    except ArenaError as e:
        return error(e)
    if args.json:
        print(json.dumps([MessageToDict(m, preserving_proto_field_name=True) for m in matches]))
        return 0
    _print_matches(matches)
    return 0


def cmd_match_watch(args: argparse.Namespace) -> int:
    from arena.service.client import ArenaError

    s = settings(args)
    try:
        with client(s, "") as c:
            for line in c.follow(args.match_id):
                if args.json:
                    print(line, flush=True)
                    continue
                e = json.loads(line)
                kind = e["type"]
                if kind == "header":
                    names = ", ".join(x["bot_name"] for x in e["seats"])
                    console.print(f"[bold]{e['match_id']}[/bold] {e['game_id']}: {names}")
                elif kind == "ply":
                    who = "chance" if e["actor"] < 0 else f"seat {e['actor']}"
                    think = f" ({e['think_ms']:.0f} ms)" if e.get("think_ms") is not None else ""
                    console.print(f"{e['ply']:>4} {who:<7} {e['action']}{think}")
                elif kind == "footer":
                    console.print(f"end: {e['end_reason']}; scores {e['scores']}; ranks {e['ranks']}; seed {e['seed']}")
                else:
                    console.print(f"     {kind}: " + ", ".join(f"{k}={v}" for k, v in e.items() if k != "type"))
    except ArenaError as e:
        return error(e)
    except KeyboardInterrupt:
        return 130
    return 0



def add_parser(sub: Any) -> None:
    match = sub.add_parser("match", help="matches on the arena").add_subparsers(dest="match_command", required=True)
    for m in (match, sub.add_parser("matches", help="alias of match").add_subparsers(dest="m2", required=True)):
        p = m.add_parser("list", help="matches, newest first")
        add_settings(p, "gateway")
        p.add_argument("--bot")
        p.add_argument("--game", choices=games.GAME_IDS)
        p.add_argument("--state", choices=("queued", "running", "finished"))
        p.add_argument("--since-hours", type=float, help="only matches requested in the last N hours")
        p.add_argument("--limit", type=int, default=50)
        p.set_defaults(func=cmd_match_list)
    p = match.add_parser("request", help="queue a match (admin)")
    add_settings(p, "gateway", "admin_token")
    p.add_argument("bots", nargs="+", help="bot names by seat")
    p.add_argument("--game", required=True, choices=games.GAME_IDS)
    p.add_argument("--seed")
    p.add_argument("--rated", action="store_true")
    p.add_argument("--id", help="match id (idempotent: a second request with it is refused)")
    p.add_argument("--move-ms", type=int)
    p.add_argument("--first-move-ms", type=int)
    p.add_argument("--bank-ms", type=int)
    p.add_argument("--wait", action="store_true", help="wait for the result")
    p.set_defaults(func=cmd_match_request)
    p = match.add_parser("watch", help="follow a match live")
    add_settings(p, "gateway")
    p.add_argument("match_id")
    p.set_defaults(func=cmd_match_watch)
