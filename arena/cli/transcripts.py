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
from referee.wire.values import MatchStatus


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
    class Show(transcripts.Visitor):
        def header(self, header: transcripts.Header, state: games.State) -> None:
            names = [s.bot_name + (f" {s.bot_version}" if s.bot_version else "") for s in header.seats]
            console.print(f"[bold]{header.match_id}[/bold]  {header.game_id}  rated={header.rated}")
            for seat, name in enumerate(names):
                console.print(f"  seat {seat}: {name}")
            console.print(f"  time control {header.time_control}")
            console.print(f"  seed sha256 {header.seed_sha256}")

        def ply(self, ply: transcripts.Ply, action: Any, before: games.State, after: games.State) -> None:
            actor = "chance" if ply.actor < 0 else f"seat {ply.actor}"
            extra = ""
            if ply.actor >= 0:
                extra = f"  {ply.think_ms or 0:.0f} ms, bank {ply.bank_ms} ms"
                extra += "  [fallback]" if ply.fallback else ""
            if not args.quiet:
                console.print(f"{ply.ply:>5} {actor:<7} {ply.action:<34}{extra}", highlight=False)
            if args.boards and _milestone(before, after):
                console.print(after.render(), highlight=False)

        def incident(self, event: transcripts.Incident, state: games.State) -> None:
            details = ", ".join(f"{k}={v}" for k, v in event.to_dict().items() if k not in ("type", "ply"))
            console.print(f"{event.ply:>5} [yellow]{event.TYPE}[/yellow] {details}", highlight=False)

        def footer(self, footer: transcripts.Footer, state: games.State) -> None:
            console.print(state.render(), highlight=False)
            scores, ranks = list(footer.scores), list(footer.ranks)
            console.print(f"end: {footer.end_reason}  scores {scores}  ranks {ranks}  seed {footer.seed}")

    try:
        numbered = list(transcripts.parse_lines(transcripts.file_lines(args.file)))
        if not numbered or not isinstance(numbered[-1][1], transcripts.Footer):
            raise transcripts.TranscriptError("the last line must be the footer", numbered[-1][0] if numbered else 1)
        transcripts.walk(numbered, Show())
    except OSError as e:
        errors.print(f"{args.file}: {e}")
        return 2
    except transcripts.TranscriptError as e:
        print(f"{args.file}: {e}", file=sys.stderr)
        return 1
    return 0


def _milestone(before: games.State, after: games.State) -> bool:
    """Where a board picture helps, as the engine says (``State.is_milestone``): e.g. the end of setup,
    each journey, each Shanghai."""
    return after.is_milestone(before)



def cmd_transcript_get(args: argparse.Namespace) -> int:
    from arena.service.client import ArenaError

    s = settings(args)
    try:
        with client(s) as c:
            ids = list(args.match_ids)
            if args.bot or args.game:
                found = c.list_matches(
                    bot_name=args.bot or "", game_id=args.game or "", limit=args.limit, state=MatchStatus.FINISHED
                )
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
