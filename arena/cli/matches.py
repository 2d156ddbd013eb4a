"""``arena match``: queue a match, list matches, follow one live (``arena matches`` is an alias)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from rich.table import Table

from arena.cli.common import (
    add_settings,
    add_time_control,
    client,
    console,
    emit_json,
    emit_json_line,
    errors,
    float_type,
    positive_int,
    print_table,
    progress,
    report,
    settings,
    time_control_overrides,
    utc,
)
from referee import games, transcript
from referee.wire.contract import from_proto_enum
from referee.wire.values import EndReason, MatchStatus


def cmd_match_request(args: argparse.Namespace) -> int:
    s = settings(args)
    overrides = time_control_overrides(args)
    with client(s, s.admin_token or s.owner_token) as c:
        match_id, seed_hash = c.request_match(
            args.game, args.bots, seed=args.seed or "", rated=args.rated, match_id=args.id or "",
            time_control=overrides,
        )  # fmt: skip
        _warn_offline(c, args.game, args.bots, match_id, games.time_control(args.game, overrides).join_timeout_ms)
        if args.wait:
            with progress(transient=True) as bar:
                bar.add_task(f"waiting for {match_id}", total=None)
                while from_proto_enum(MatchStatus, c.describe(match_id).state) is not MatchStatus.FINISHED:
                    time.sleep(0.5)
            m = c.describe(match_id)
    aborted = args.wait and from_proto_enum(EndReason, m.result.end_reason) is EndReason.ABORTED
    if args.json:
        emit_json({"match_id": match_id, "seed_sha256": seed_hash, "match": m if args.wait else None})
    else:
        console.print(f"queued {match_id} (seed hash {seed_hash})")
        if args.wait:
            _print_matches([m])
    if aborted:  # the match was not played: a script waiting for it must not take it for a result
        report(f"match {match_id} was aborted: {m.result.detail or 'a bot did not join in time'}")
        return 1
    return 0


def _warn_offline(c: Any, game_id: str, bots: list[str], match_id: str, join_timeout_ms: int) -> None:
    """Say at once, on stderr, which seated bots have no session: the match was queued all the same (a
    bot may be about to connect) and aborts unless each joins within the join timeout, which a person
    otherwise learns only from the aborted result half a minute later."""
    from arena.errors import ArenaError

    try:
        online = {b.name for b in c.list_bots(game_id) if b.online}
    except ArenaError:  # the match is queued: a listing that fails changes nothing of that
        return
    offline = sorted({name for name in bots if name not in online})
    if offline:
        seconds = join_timeout_ms / 1000
        errors.print(f"warning: {', '.join(offline)} {'is' if len(offline) == 1 else 'are'} offline: {match_id} "
                     f"aborts unless {'it connects' if len(offline) == 1 else 'they connect'} within {seconds:g} s "
                     "(arena bot run)")  # fmt: skip


def _print_matches(matches: list[Any]) -> None:
    table = Table()
    for col in ("match", "game", "state", "bots", "rated", "requested (UTC)", "result"):
        table.add_column(col)
    for m in matches:
        result = "-"
        if m.HasField("result"):
            r = m.result
            end = from_proto_enum(EndReason, r.end_reason) or "?"
            result = end + ": " + ", ".join(f"{x.bot_name} #{x.rank} ({x.score})" for x in r.seats)
        table.add_row(
            m.match_id, m.game_id, from_proto_enum(MatchStatus, m.state) or "?", ", ".join(m.bot_names),
            "yes" if m.rated else "no",
            utc(m.enqueued_at), result,
        )  # fmt: skip
    print_table(table, whole=("match", "game", "requested (UTC)"))


def cmd_match_list(args: argparse.Namespace) -> int:
    s = settings(args)
    with client(s, "") as c:
        matches = c.list_matches(
            bot_name=args.bot or "", game_id=args.game or "", owner=args.owner or "", limit=args.limit,
            since=time.time() - args.since_hours * 3600 if args.since_hours else 0,
            state=MatchStatus(args.state) if args.state else None,
        )  # fmt: skip
    if args.json:
        emit_json(matches)
        return 0
    _print_matches(matches)
    return 0


def cmd_match_watch(args: argparse.Namespace) -> int:
    class Watch(transcript.Visitor):
        def header(self, header: transcript.Header, state: games.State) -> None:
            names = ", ".join(x.bot_name for x in header.seats)
            console.print(f"{header.match_id} {header.game_id}: {names}")

        def ply(self, ply: transcript.Ply, action: Any, before: games.State, after: games.State) -> None:
            who = "chance" if ply.actor < 0 else f"seat {ply.actor}"
            think = f" ({ply.think_ms:.0f} ms)" if ply.think_ms is not None else ""
            console.print(f"{ply.ply:>4} {who:<7} {ply.action}{think}")

        def incident(self, event: transcript.Incident, state: games.State) -> None:
            details = ", ".join(f"{k}={v}" for k, v in event.to_dict().items() if k != "type")
            console.print(f"     {event.TYPE}: {details}")

        def footer(self, footer: transcript.Footer, state: games.State) -> None:
            scores, ranks = list(footer.scores), list(footer.ranks)
            console.print(f"end: {footer.end_reason}; scores {scores}; ranks {ranks}; seed {footer.seed}")

    s = settings(args)
    try:
        with client(s, "") as c:
            if args.json:
                for line in c.follow(args.match_id):  # the transcript's lines, as stored
                    emit_json_line(line)
            else:
                transcript.walk_lines(c.follow(args.match_id), Watch())  # printed as the lines come
    except KeyboardInterrupt:
        return 130
    return 0


def add_parser(sub: Any) -> None:
    match = sub.add_parser("match", help="matches on the arena").add_subparsers(dest="match_command", required=True)
    for m in (match, sub.add_parser("matches", help="alias of match").add_subparsers(dest="m2", required=True)):
        p = m.add_parser("list", help="matches, newest first")
        add_settings(p, "gateway")
        p.add_argument("--bot")
        p.add_argument("--owner", help="only matches seating a bot of this owner")
        p.add_argument("--game", choices=games.GAME_IDS)
        p.add_argument("--state", choices=[s.value for s in MatchStatus])
        p.add_argument("--since-hours", type=float_type(0), help="only matches requested in the last N hours")
        p.add_argument("--limit", type=positive_int, default=50)
        p.set_defaults(func=cmd_match_list)
    p = match.add_parser("request", help="queue a match (admin)")
    add_settings(p, "gateway", "admin_token", "owner_token")
    p.add_argument("bots", nargs="+", help="bot names by seat")
    p.add_argument("--game", required=True, choices=games.GAME_IDS)
    p.add_argument("--seed")
    p.add_argument("--rated", action="store_true")
    p.add_argument("--id", help="match id (idempotent: a second request with it is refused)")
    add_time_control(p)
    p.add_argument("--wait", action="store_true", help="wait for the result")
    p.set_defaults(func=cmd_match_request)
    p = match.add_parser("watch", help="follow a match live")
    add_settings(p, "gateway")
    p.add_argument("match_id")
    p.set_defaults(func=cmd_match_watch)
