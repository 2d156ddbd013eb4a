"""``arena transcript``: show one readably, verify any number against the engines, download them
from the arena."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from arena.cli.common import CliError, add_settings, client, console, error, positive_int, progress, settings
from referee import games
from referee import transcript as transcripts
from referee.wire.values import MatchStatus


def cmd_transcript_verify(args: argparse.Namespace) -> int:
    bad = 0
    for path in args.files:
        try:
            error = transcripts.verify(path)
        except OSError as e:
            raise CliError(f"{path}: {e.strerror or e}", 2) from None
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
            console.print(f"{header.match_id}  {header.game_id}  rated={header.rated}")
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
            console.print(f"{event.ply:>5} {event.TYPE} {details}", highlight=False)

        def footer(self, footer: transcripts.Footer, state: games.State) -> None:
            console.print(state.render(), highlight=False)
            scores, ranks = list(footer.scores), list(footer.ranks)
            console.print(f"end: {footer.end_reason}  scores {scores}  ranks {ranks}  seed {footer.seed}")

    try:
        lines = transcripts.file_lines(args.file)
    except OSError as e:  # reading only: a closed pipe while printing is main's to handle
        raise CliError(f"{args.file}: {e.strerror or e}", 2) from None
    try:
        numbered = list(transcripts.parse_lines(lines))
        if not numbered or not isinstance(numbered[-1][1], transcripts.Footer):
            raise transcripts.TranscriptError("the last line must be the footer", numbered[-1][0] if numbered else 1)
        transcripts.walk(numbered, Show())
    except transcripts.TranscriptError as e:
        print(f"{args.file}: {e}", file=sys.stderr)
        return 1
    return 0


def _milestone(before: games.State, after: games.State) -> bool:
    """Where a board picture helps, as the engine says (``State.is_milestone``): e.g. the end of setup,
    each journey, each Shanghai."""
    return after.is_milestone(before)



def _write_html(text: str, path: Path) -> Path:
    """The HTML replay of a transcript's text (``arena.replay``), written to ``path``."""
    from arena.replay import write_replay

    return write_replay(text.splitlines(), path)


def cmd_transcript_html(args: argparse.Namespace) -> int:
    """One transcript (a file, or a match id fetched from the gateway) as a self-contained HTML replay."""
    from arena.cli.common import input_file
    from arena.replay.frames import replay_data
    from arena.replay.page import page_html

    source = Path(args.source)
    if source.exists() or source.suffix == ".jsonl" or "/" in args.source:
        try:
            lines = transcripts.file_lines(input_file(source))
        except OSError as e:
            raise CliError(f"{source}: {e.strerror or e}", 2) from None
        default = source.with_suffix(".html")
    else:  # a match id: fetched as ``arena transcript get`` does
        from arena.service.client import ArenaError

        try:
            with client(settings(args)) as c:
                text, _ = c.transcript(args.source)
        except ArenaError as e:
            return error(e)
        lines = text.splitlines()
        default = Path(f"{args.source}.html")
    out = Path(args.output) if args.output else default
    data = replay_data(lines)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page_html(data), encoding="utf-8")
    verified = data["verified"]
    problem = None if verified["ok"] else f"line {verified['line']}: {verified['message']}"
    if args.json:
        print(json.dumps({"html": str(out), "plies": len(data["moves"]), "verified": not problem, "problem": problem}))
        return 0
    console.print(f"{out} ({len(data['moves'])} plies; transcript {'verified' if problem is None else problem})")
    return 0


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
                raise CliError("no match: give match ids, or --bot / --game", 2)
            out = Path(args.output) if args.output else None
            # --bot/--game ask for a set (a folder, even when one match is found), as does a path ending in "/"
            asked_folder = bool(args.bot or args.game) or str(args.output or "").endswith("/")
            many = len(ids) > 1 or asked_folder or (out is not None and out.is_dir())
            if many:
                folder = out or Path("transcripts")
                folder.mkdir(parents=True, exist_ok=True)
                with progress() as bar:
                    task = bar.add_task("transcripts", total=len(ids))
                    for match_id in ids:
                        text, _ = c.transcript(match_id)
                        (folder / f"{match_id}.jsonl").write_text(text)
                        if args.html:
                            _write_html(text, folder / f"{match_id}.html")
                        bar.advance(task)
                replays = " with HTML replays" if args.html else ""
                console.print(f"{len(ids)} transcript(s){replays} in {folder}/")
                return 0
            text, full = c.transcript(ids[0])
            if out is None:
                sys.stdout.write(text)
            else:
                out.write_text(text)
                console.print(f"{ids[0]} -> {out} ({'with your refusals' if full else 'public'})")
            if args.html:  # beside the file; in the current folder when the transcript went to stdout
                from arena.cli.common import errors

                page = _write_html(text, out.with_suffix(".html") if out is not None else Path(f"{ids[0]}.html"))
                (console if out is not None else errors).print(f"replay: {page}")
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
    p.add_argument("--limit", type=positive_int, default=100)
    p.add_argument("--html", action="store_true", help="also write each match's HTML replay beside its transcript")
    p.set_defaults(func=cmd_transcript_get)
    p = tr.add_parser("html", help="a self-contained HTML replay of a match (opens offline in any browser)")
    p.add_argument("source", metavar="FILE_OR_MATCH_ID", help="a transcript file, or a match id to fetch")
    p.add_argument("-o", "--output", help="the HTML file (default: FILE.html, or MATCH_ID.html here)")
    add_settings(p, "gateway", "token")
    p.set_defaults(func=cmd_transcript_html)
