"""``arena transcript``: show one readably, verify any number against the engines, download them
from the arena."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from arena.cli.common import (
    CliError,
    add_json,
    add_settings,
    client,
    console,
    emit_json,
    errors,
    json_value,
    positive_int,
    progress,
    settings,
)
from referee import games
from referee import transcript as transcripts
from referee.wire.values import MatchStatus


def cmd_transcript_verify(args: argparse.Namespace) -> int:
    checked: list[dict[str, Any]] = []
    for path in args.files:
        try:
            problem = transcripts.verify(path)
        except OSError as e:
            raise CliError(f"{path}: {e.strerror or e}", 2) from None
        if problem is None:
            if not args.json:
                print(f"{path}: OK")
        else:
            print(f"{path}: {problem}", file=sys.stderr)
        checked.append({"file": path, "ok": problem is None, "line": problem.line if problem else None,
                        "problem": problem.message if problem else None})  # fmt: skip
    if args.json:
        emit_json(checked)
    return 1 if any(not c["ok"] for c in checked) else 0


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
                if ply.note:  # the bot's own note (its owner's copy only)
                    console.print(f"{'':>5} {'':<7} note: {ply.note}", highlight=False)
            if args.boards and _milestone(before, after):
                console.print(after.render(), highlight=False)

        def incident(self, event: transcripts.Incident, state: games.State) -> None:
            details = ", ".join(f"{k}={v}" for k, v in event.to_dict().items() if k not in ("type", "ply"))
            console.print(f"{event.ply:>5} {event.TYPE} {details}", highlight=False)

        def footer(self, footer: transcripts.Footer, state: games.State) -> None:
            console.print(state.render(), highlight=False)
            scores, ranks = list(footer.scores), list(footer.ranks)
            console.print(f"end: {footer.end_reason}  scores {scores}  ranks {ranks}  seed {footer.seed}")

    class Collect(transcripts.Visitor):
        """``--json``: the events, every field of each (docs/cli.md), and the board pictures as text."""

        def __init__(self) -> None:
            self.doc: dict[str, Any] = {"file": args.file, "header": None, "events": [], "footer": None,
                                        "boards": [], "final_board": None}  # fmt: skip

        def header(self, header: transcripts.Header, state: games.State) -> None:
            self.doc["header"] = _event(header)

        def ply(self, ply: transcripts.Ply, action: Any, before: games.State, after: games.State) -> None:
            if not args.quiet:
                self.doc["events"].append(_event(ply))
            if args.boards and _milestone(before, after):
                self.doc["boards"].append({"ply": ply.ply, "board": after.render()})

        def incident(self, event: transcripts.Incident, state: games.State) -> None:
            self.doc["events"].append(_event(event))

        def footer(self, footer: transcripts.Footer, state: games.State) -> None:
            self.doc["footer"] = _event(footer)
            self.doc["final_board"] = state.render()

    try:
        lines = transcripts.file_lines(args.file)
    except OSError as e:  # reading only: a closed pipe while printing is main's to handle
        raise CliError(f"{args.file}: {e.strerror or e}", 2) from None
    try:
        numbered = list(transcripts.parse_lines(lines))
        if not numbered or not isinstance(numbered[-1][1], transcripts.Footer):
            raise transcripts.TranscriptError("the last line must be the footer", numbered[-1][0] if numbered else 1)
        collect = Collect()
        transcripts.walk(numbered, collect if args.json else Show())
    except transcripts.TranscriptError as e:
        print(f"{args.file}: {e}", file=sys.stderr)
        return 1
    if args.json:
        emit_json(collect.doc)
    return 0


def _event(event: transcripts.Event) -> dict[str, Any]:
    """A transcript event for ``--json``: its ``type`` and every field, one its line leaves out as null
    (a chance ply's ``think_ms``, ``bank_ms`` and ``fallback``, a ply's absent ``note``, the hidden part of a
    public refusal)."""
    doc: dict[str, Any] = {"type": event.TYPE, **json_value(event)}
    if isinstance(event, transcripts.Ply):
        doc["note"] = event.note or None
        if event.actor < 0:
            doc.update(think_ms=None, bank_ms=None, fallback=None)
    return doc


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
        with client(settings(args)) as c:
            text, _ = c.transcript(args.source)
        lines = text.splitlines()
        default = Path(f"{args.source}.html")
    out = Path(args.output) if args.output else default
    data = replay_data(lines)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page_html(data), encoding="utf-8")
    verified = data["verified"]
    problem = None if verified["ok"] else f"line {verified['line']}: {verified['message']}"
    if args.json:
        emit_json({"html": out, "plies": len(data["moves"]), "verified": not problem, "problem": problem})
        return 0
    console.print(f"{out} ({len(data['moves'])} plies; transcript {'verified' if problem is None else problem})")
    return 0


def cmd_transcript_get(args: argparse.Namespace) -> int:
    """One transcript to a file or stdout, many to a folder. ``--json``: a list with one entry per match
    (docs/cli.md), the transcript's lines in it when they went to no file."""
    s = settings(args)
    say = errors if args.json else console  # messages; with --json stdout is the JSON's
    got: list[dict[str, Any]] = []
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
                    text, full = c.transcript(match_id)
                    path = folder / f"{match_id}.jsonl"
                    path.write_text(text)
                    page = _write_html(text, folder / f"{match_id}.html") if args.html else None
                    got.append(_got(match_id, full, path, page, None))
                    bar.advance(task)
            replays = " with HTML replays" if args.html else ""
            say.print(f"{len(ids)} transcript(s){replays} in {folder}/")
        else:
            text, full = c.transcript(ids[0])
            if out is not None:
                out.write_text(text)
                say.print(f"{ids[0]} -> {out} ({'with your refusals' if full else 'public'})")
            elif not args.json:
                sys.stdout.write(text)
            page = None
            if args.html:  # beside the file; in the current folder when the transcript went to stdout
                page = _write_html(text, out.with_suffix(".html") if out is not None else Path(f"{ids[0]}.html"))
                (say if out is not None else errors).print(f"replay: {page}")
            got.append(_got(ids[0], full, out, page, None if out is not None else text))
    if args.json:
        emit_json(got)
    return 0


def _got(match_id: str, full: bool, file: Path | None, html: Path | None, text: str | None) -> dict[str, Any]:
    """``transcript get --json``'s entry for one match; ``text``: its lines, when no file holds them."""
    lines = None if text is None else [json.loads(line) for line in text.splitlines() if line.strip()]
    return {"match_id": match_id, "full": full, "file": file, "html": html, "transcript": lines}


GET_HELP = (
    "Download transcripts: one to a file or stdout, many to a folder. Without a token, their public form "
    "(other seats' refusals without their actions and reasons); with a seated bot's token (--token, "
    "ARENA_BOT_TOKEN) or its owner's (--owner-token, ARENA_OWNER_TOKEN), that bot's refusals in full; with the "
    "admin's (--admin-token), all. The first of admin, owner, bot token given is used."
)


def add_parser(sub: Any) -> None:
    tr = sub.add_parser("transcript", help="match transcripts").add_subparsers(dest="transcript_command", required=True)
    p = tr.add_parser("show", help="print a transcript readably, with board pictures")
    p.add_argument("file")
    p.add_argument("--boards", action="store_true", help="a board picture after setup, each journey and each round")
    p.add_argument("-q", "--quiet", action="store_true", help="only events and the final board")
    add_json(p, "the transcript's events and board pictures")
    p.set_defaults(func=cmd_transcript_show)
    p = tr.add_parser("verify", help="replay transcripts and check seed, chance, actions and result")
    p.add_argument("files", nargs="+")
    add_json(p, "each file's verdict")
    p.set_defaults(func=cmd_transcript_verify)
    p = tr.add_parser("get", help="download transcripts (one to a file, many to a folder)", description=GET_HELP)
    add_settings(p, "gateway", "admin_token", "owner_token", "token")
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
    add_settings(p, "gateway", "admin_token", "owner_token", "token")
    p.set_defaults(func=cmd_transcript_html)
