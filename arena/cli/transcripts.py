"""``arena transcript``: show one readably, verify any number against the engines, download them
from the arena."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from arena.cli.common import add_settings, client, console, error, errors, progress, settings
from referee import games
from referee import transcript as transcripts


def cmd_transcript_verify(args: argparse.Namespace) -> int:
    bad = 0
    for path in args.files:
        try:
            error = transcripts.verify(path)
        except OSError as e:
            errors.print(f"{path}: {e}")
            return 2
        if error is None:
            print(f"{path}: OK")
        else:
            bad += 1
            print(f"{path}: {error}", file=sys.stderr)
    return 1 if bad else 0


def cmd_transcript_show(args: argparse.Namespace) -> int:
    events = transcripts.read(args.file)
    header, footer = events[0], events[-1]
    game = games.get(header["game_id"])
    names = [s["bot_name"] + (f" {s['bot_version']}" if s.get("bot_version") else "") for s in header["seats"]]
    console.print(f"[bold]{header['match_id']}[/bold]  {header['game_id']}  rated={header['rated']}")
    for seat, name in enumerate(names):
        console.print(f"  seat {seat}: {name}")
    console.print(f"  time control {header['time_control']}")
    console.print(f"  seed sha256 {header['seed_sha256']}")
    state = game.new_state()
    for e in events[1:-1]:
        kind = e["type"]
        if kind == "ply":
            actor = "chance" if e["actor"] < 0 else f"seat {e['actor']}"
            extra = ""
            if e["actor"] >= 0:
                extra = f"  {e.get('think_ms') or 0:.0f} ms, bank {e.get('bank_ms')} ms"
                extra += "  [fallback]" if e.get("fallback") else ""
            if not args.quiet:
                console.print(f"{e['ply']:>5} {actor:<7} {e['action']:<34}{extra}", highlight=False)
            before = state
            state = state.apply(state.parse_action(e["action"]))
            if args.boards and _milestone(before, state):
                console.print(state.render(), highlight=False)
        elif kind != "footer":
            details = ", ".join(f"{k}={v}" for k, v in e.items() if k not in ("type", "ply"))
            console.print(f"{e.get('ply', ''):>5} [yellow]{kind}[/yellow] {details}", highlight=False)
    console.print(state.render(), highlight=False)
    console.print(
        f"end: {footer['end_reason']}  scores {footer['scores']}  ranks {footer['ranks']}  seed {footer['seed']}"
    )
    return 0


def _milestone(before: object, after: object) -> bool:
    """Where a board picture helps: the end of setup, each journey, each Shanghai."""
    from referee.games.shanghaien import ShanghaienState
    from referee.games.shangrila import ShangriLaState

    if isinstance(before, ShanghaienState) and isinstance(after, ShanghaienState):
        return after.round != before.round
    if isinstance(before, ShangriLaState) and isinstance(after, ShangriLaState):
        return (before.in_setup() and not after.in_setup()) or after.bridges != before.bridges
    return False



def cmd_transcript_get(args: argparse.Namespace) -> int:
    from arena.service.client import ArenaError

    s = settings(args)
    try:
        with client(s) as c:
            ids = list(args.match_ids)
            if args.bot or args.game:
                found = c.list_matches(bot_name=args.bot or "", game_id=args.game or "", limit=args.limit, state=3)
                ids += [m.match_id for m in found]
            if not ids:
                errors.print("no match: give match ids, or --bot / --game")
                return 2
            out = Path(args.output) if args.output else None
            many = len(ids) > 1 or (out is not None and out.is_dir())
            if many:
                folder = out or Path("transcripts")
                folder.mkdir(parents=True, exist_ok=True)
                with progress() as bar:
                    task = bar.add_task("transcripts", total=len(ids))
                    for match_id in ids:
                        text, _ = c.transcript(match_id)
                        (folder / f"{match_id}.jsonl").write_text(text)
                        bar.advance(task)
                console.print(f"{len(ids)} transcript(s) in {folder}/")
                return 0
            text, full = c.transcript(ids[0])
            if out is None:
                sys.stdout.write(text)
            else:
                out.write_text(text)
                console.print(f"{ids[0]} -> {out} ({'with your refusals' if full else 'public'})")
    except ArenaError as e:
        return error(e)
    return 0



def add_parser(sub: Any) -> None:
    tr = sub.add_parser("transcript", help="match transcripts").add_subparsers(dest="transcript_command", required=True)
    p = tr.add_parser("show", help="print a transcript readably, with board pictures")
    p.add_argument("file")
    p.add_argument("--boards", action="store_true", help="a board picture after setup, each journey and each round")
    p.add_argument("-q", "--quiet", action="store_true", help="only events and the final board")
    p.set_defaults(func=cmd_transcript_show)
    p = tr.add_parser("verify", help="replay transcripts and check seed, chance, actions and result")
    p.add_argument("files", nargs="+")
    p.set_defaults(func=cmd_transcript_verify)
    p = tr.add_parser("get", help="download transcripts (one to a file, many to a folder)")
    add_settings(p, "gateway", "token")
    p.add_argument("match_ids", nargs="*")
    p.add_argument("-o", "--output", help="file (one match) or folder (many)")
    p.add_argument("--bot", help="every finished match of this bot (up to --limit)")
    p.add_argument("--game", choices=games.GAME_IDS)
    p.add_argument("--limit", type=int, default=100)
    p.set_defaults(func=cmd_transcript_get)
