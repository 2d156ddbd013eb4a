"""Bots with no gRPC: ``StdioBot`` starts a command and plays through it with JSON lines on its stdin and
stdout (the line protocol, docs/bots.md "Bots that read and write lines").

The adapter is an ordinary ``Bot``: the SDK's client keeps the connection, the engine state and the
refusals; this module only turns each ``Turn`` into one line and the command's reply line back into an
action. A reply the adapter cannot read is sent to the referee as ``MALFORMED_ACTION``, which the engines
refuse as a syntax error, so a malformed line costs the bot the same refusal (and, the fifth in a turn, the
same strike) as a bad action on the wire; the turn comes again with the refusal's reason. A reply for a
turn that is no longer waiting is answered with a ``refused`` line (``stale_turn``), as the referee answers
a late action. The command's stderr is the adapter's own: the author's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Final, Literal

import structlog

from sdk.bot import Bot, MatchInfo, MatchOutcome, Noted, Refusal, Turn

log = structlog.get_logger("sdk.stdio")

PROTOCOL: Final = 1
"""The line protocol's version, which the hello line names."""
STDIO_PREFIX: Final = "stdio:"
"""A bot spec ``stdio:COMMAND`` (``sdk.client.load_bot``) is a ``StdioBot`` running COMMAND."""
MALFORMED_ACTION: Final = "<malformed line>"
"""What the adapter submits for a reply line it cannot read: never notation, so the referee refuses it."""
HELLO_S: Final = 10.0
"""How long a started command has to print its hello line."""
EXIT_S: Final = 2.0
"""How long a command has to exit once its stdin is closed, before it is killed."""
MAX_LINE: Final = 1 << 20
"""The longest reply line read (1 MiB); a longer one is malformed."""
ECHO_CHARS: Final = 200
"""How much of a malformed line comes back in its refusal."""

Matches = Literal["one", "many"]


class StdioError(RuntimeError):
    """The command cannot play: it did not start, said no usable hello, or exited while it had turns."""


def command_argv(command: str) -> list[str]:
    """``command`` split as a POSIX shell would (no shell runs it); ValueError says why it cannot run."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise ValueError(f"command {command!r}: {str(e).lower()}") from None
    if not argv:
        raise ValueError("the bot's command is empty")
    if shutil.which(argv[0]) is None:
        where = "is not an executable file" if "/" in argv[0] else "is not found on PATH"
        raise ValueError(f"command {command!r}: {argv[0]!r} {where}")
    return argv


@dataclass
class _Waiting:
    """A turn line sent and not yet answered."""

    match_id: str
    seat: int
    ply: int
    reply: asyncio.Future[dict[str, Any] | str]


@dataclass
class _Process:
    """One running command: its hello, the turns waiting for it, the matches it plays."""

    proc: asyncio.subprocess.Process
    matches: Matches
    waiting: dict[tuple[str, int], _Waiting] = field(default_factory=dict)
    playing: set[str] = field(default_factory=set)
    reader: asyncio.Task[None] | None = None
    closing: bool = False

    def write(self, doc: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        if stdin is None or stdin.is_closing():
            return
        stdin.write(json.dumps(doc, separators=(",", ":")).encode() + b"\n")


class StdioBot(Bot):
    """A bot that is a command speaking the line protocol. Nothing starts until a match does; the command's
    hello line says whether it plays every match in one process (``"matches": "many"``) or wants a process
    of its own per match (``"one"``: stdin closes after the match's end lines, and it exits)."""

    def __init__(self, command: str, name: str = "") -> None:
        self.command = command
        self.argv = command_argv(command)
        self.name = name or command_name(command)
        self.version = "stdio"
        self.failure: str = ""  # why the command can no longer play (it exited while it had matches)
        self.on_failure: Callable[[str], None] | None = None
        self._shared: _Process | None = None
        self._by_match: dict[str, _Process] = {}
        self._all: list[_Process] = []
        self._starting: dict[str, asyncio.Task[_Process]] = {}
        self._lock: asyncio.Lock | None = None
        self._seen: dict[tuple[str, int], int] = {}  # plies of history already sent, per match and seat
        self._malformed: dict[tuple[str, int], list[tuple[str, str]]] = {}  # (line, why) per turn, oldest first

    # ------------------------------------------------------------------ Bot hooks

    def on_match_start(self, match: MatchInfo) -> None:
        task = self._starting.get(match.match_id)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._process_for(match.match_id))
            self._starting[match.match_id] = task
        task.add_done_callback(lambda t: self._start_line(t, match))

    def _start_line(self, task: asyncio.Task[_Process], m: MatchInfo) -> None:
        """The match's start line, once per seat (a match resumed after a reconnect starts again here)."""
        key = (m.match_id, m.seat)
        if task.cancelled() or task.exception() is not None or key in self._seen:
            return
        process = task.result()
        process.playing.add(m.match_id)
        self._seen[key] = 0
        process.write({"type": "start", "match": m.match_id, "seat": m.seat, "game": m.game_id,
                       "players": list(m.bot_names), "seed_sha256": m.seed_sha256, "rated": m.rated})  # fmt: skip

    async def act(self, turn: Turn) -> Any:
        starting = self._starting.get(turn.match_id)
        process = await (starting if starting is not None else self._process_for(turn.match_id))
        key = (turn.match_id, turn.seat)
        seen = self._seen.get(key, 0)
        self._seen[key] = len(turn.history)
        refusals = self._refusals(key, turn)
        doc: dict[str, Any] = {  # the view last: a reader that scans for the first "seat" finds the turn's
            "type": "turn", "match": turn.match_id, "seat": turn.seat, "ply": turn.ply, "game": turn.game_id,
            "legal": [str(a) for a in turn.legal_actions], "move_ms": turn.move_ms, "bank_ms": turn.time_bank_ms,
            "since": [str(a) for a in turn.history[seen:]], "refusals": refusals, "view": turn.view.to_dict(),
        }  # fmt: skip
        waiting = _Waiting(turn.match_id, turn.seat, turn.ply, asyncio.get_running_loop().create_future())
        process.waiting[key] = waiting
        try:
            process.write(doc)
            reply = await waiting.reply
        finally:
            if process.waiting.get(key) is waiting:
                del process.waiting[key]
        return self._action(key, reply)

    def on_match_end(self, outcome: MatchOutcome) -> None:
        starting = self._starting.get(outcome.match_id)
        if starting is None or not starting.done() or starting.cancelled() or starting.exception() is not None:
            return
        process = starting.result()
        self._seen.pop((outcome.match_id, outcome.seat), None)
        self._malformed.pop((outcome.match_id, outcome.seat), None)
        process.write({
            "type": "end", "match": outcome.match_id, "seat": outcome.seat, "reason": outcome.end_reason,
            "scores": [s.score for s in outcome.seats], "ranks": [s.rank for s in outcome.seats],
            "forfeited": [s.forfeited for s in outcome.seats], "plies": outcome.plies,
        })  # fmt: skip
        if any(m == outcome.match_id for m, _ in self._seen):
            return  # another seat of this match has yet to hear the end
        process.playing.discard(outcome.match_id)
        del self._starting[outcome.match_id]
        if self._by_match.pop(outcome.match_id, None) is not None:  # its own process: done with it
            process.closing = True
            if process.proc.stdin is not None:
                process.proc.stdin.close()

    async def aclose(self) -> None:
        """Close every command's stdin, give it ``EXIT_S`` to exit, then kill it."""
        for process in self._all:
            process.closing = True
            if process.proc.stdin is not None and not process.proc.stdin.is_closing():
                process.proc.stdin.close()
        for process in self._all:
            try:
                await asyncio.wait_for(process.proc.wait(), EXIT_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.proc.kill()
                await process.proc.wait()
            if process.reader is not None:
                process.reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await process.reader
        self._all.clear()
        self._shared = None
        self._by_match.clear()

    # ------------------------------------------------------------------ processes

    async def _process_for(self, match_id: str) -> _Process:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._shared is not None:
                return self._shared
            if match_id in self._by_match:
                return self._by_match[match_id]
            process = await self._start()
            if process.matches == "many":
                self._shared = process
            else:
                self._by_match[match_id] = process
            return process

    async def _start(self) -> _Process:
        if self.failure:
            raise StdioError(self.failure)
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=MAX_LINE
            )
        except OSError as e:
            raise self._fail(f"command {self.command!r} did not start: {e}") from None
        assert proc.stdout is not None
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), HELLO_S)
        except (TimeoutError, ValueError):
            line = b""
        hello, problem = _hello(line)
        if hello is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise self._fail(f"command {self.command!r}: {problem}")
        process = _Process(proc, hello)
        process.reader = asyncio.get_running_loop().create_task(self._read(process))
        self._all.append(process)
        log.info("command started", command=self.command, pid=proc.pid, matches=hello)
        return process

    def _fail(self, why: str) -> StdioError:
        if not self.failure:
            self.failure = why
            log.error("stdio bot failed", reason=why)
            if self.on_failure is not None:
                self.on_failure(why)
        return StdioError(why)

    async def _read(self, process: _Process) -> None:
        stdout = process.proc.stdout
        assert stdout is not None
        while True:
            try:
                raw = await stdout.readline()
            except ValueError:  # longer than MAX_LINE: the rest of it was dropped
                self._reply(process, f"a line of more than {MAX_LINE} bytes")
                continue
            if not raw:
                break
            text = raw.decode("utf-8", errors="replace").strip()
            if text:
                self._reply(process, text)
        code = await process.proc.wait()
        if process.closing:
            return
        why = f"command {self.command!r} exited with status {code} while it had matches to play"
        error = self._fail(why)
        for waiting in process.waiting.values():
            if not waiting.reply.done():
                waiting.reply.set_exception(error)

    # ------------------------------------------------------------------ replies

    def _reply(self, process: _Process, text: str) -> None:
        """Give a reply line to the turn it answers; a line that answers none gets a ``refused`` line."""
        doc: Any
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        named = isinstance(doc, dict)
        match_id = doc.get("match") if named else None
        seat = doc.get("seat") if named else None
        ply = doc.get("ply") if named else None
        candidates = [
            w for w in process.waiting.values()
            if (match_id is None or w.match_id == match_id) and (seat is None or w.seat == seat)
        ]  # fmt: skip
        if len(candidates) == 1 and (ply is None or candidates[0].ply == ply):
            waiting = candidates[0]
            if not waiting.reply.done():
                waiting.reply.set_result(doc if _problem(doc, text) is None else text)
            return
        if len(candidates) > 1:
            code, why = "malformed", "several turns are waiting: name the match and seat"
        elif named and "action" in doc:
            code, why = "stale_turn", "no turn of that match, seat and ply is waiting (answered, timed out or ended)"
        else:
            code, why = "malformed", f"it answers no waiting turn and is {_problem(doc, text) or 'no reply'}"
        process.write({"type": "refused", "match": match_id, "seat": seat, "ply": ply, "action": _echo(text),
                       "code": code, "reason": why})  # fmt: skip

    def _action(self, key: tuple[str, int], reply: dict[str, Any] | str) -> Any:
        if isinstance(reply, str):  # unreadable: refused by the referee, explained in the next turn line
            doc = None
            with contextlib.suppress(ValueError):
                doc = json.loads(reply)
            self._malformed.setdefault(key, []).append((_echo(reply), _problem(doc, reply) or "malformed"))
            return MALFORMED_ACTION
        note = reply.get("note")
        return Noted(reply["action"], note) if note else reply["action"]

    def _refusals(self, key: tuple[str, int], turn: Turn) -> list[dict[str, str]]:
        """The turn's refusals as the bot should read them: a malformed line's shows the line and why."""
        explained = list(self._malformed.get(key, ()))
        if not turn.refusals:
            self._malformed.pop(key, None)
        out = []
        for r in turn.refusals:
            if r.action == MALFORMED_ACTION and explained:
                line, why = explained.pop(0)
                r = Refusal(line, r.code, f"malformed line: {why}")
            out.append({"action": r.action, "code": r.code, "reason": r.reason})
        return out


def _hello(line: bytes) -> tuple[Matches | None, str]:
    """The hello line's ``matches`` (``one`` or ``many``), or None and why the line is not a hello."""
    if not line:
        return None, f"no hello line within {HELLO_S:g} s (the first line it prints must be the hello)"
    try:
        doc = json.loads(line)
    except ValueError:
        return None, f"its first line is not a JSON hello: {_echo(line.decode('utf-8', 'replace').strip())!r}"
    if not isinstance(doc, dict) or doc.get("type") != "hello":
        return None, 'its first line must be {"type": "hello", "protocol": 1, "matches": "one" or "many"}'
    if doc.get("protocol") != PROTOCOL:
        return None, f"its hello asks for protocol {doc.get('protocol')!r}; this adapter speaks {PROTOCOL}"
    matches = doc.get("matches", "many")
    if matches not in ("one", "many"):
        return None, f'its hello\'s "matches" is {matches!r}, not "one" or "many"'
    return ("one" if matches == "one" else "many"), ""


def _problem(doc: Any, text: str) -> str | None:
    """Why a reply line cannot be played (None: it can)."""
    if doc is None:
        return f"not JSON: {_echo(text)!r}"
    if not isinstance(doc, dict):
        return "not a JSON object"
    if not isinstance(doc.get("action"), str):
        return 'no "action" text'
    if not isinstance(doc.get("note", ""), str):
        return '"note" is not text'
    return None


def _echo(text: str) -> str:
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + "..."


def command_name(command: str) -> str:
    """What a command's seats are called: the file name of its last word that names a file (with a ``/``
    or a ``.``: ``node bots/bot.js`` is ``bot.js``), else of its first word (``cargo run`` is ``cargo``)."""
    try:
        words = [w for w in shlex.split(command) if not w.startswith("-") and "{" not in w]
    except ValueError:
        words = command.split()
    if not words:
        return "cmd"
    files = [w for w in words[1:] if "/" in w or "." in w]
    name = PurePath((files or words)[-1]).name or "cmd"
    return name[:64]


async def run_closing(runner: Any, bot: Bot) -> list[MatchOutcome]:
    """``runner.run()`` (a ``BotClient`` or ``ArenaBotRunner``), then the bot's commands closed. A
    ``StdioBot`` whose command died cancels the runner (its matches cannot go on) and raises ``StdioError``."""
    if not isinstance(bot, StdioBot):
        result: list[MatchOutcome] = await runner.run()
        return result
    task: asyncio.Future[list[MatchOutcome]] = asyncio.ensure_future(runner.run())

    def stop(why: str) -> None:
        task.cancel()

    bot.on_failure = stop
    try:
        outcomes = await task
    except asyncio.CancelledError:
        if not bot.failure:
            raise
    finally:
        await bot.aclose()
    if bot.failure:
        raise StdioError(bot.failure)
    return outcomes


def stdio_spec(command: str) -> str:
    """The bot spec of a command: ``stdio:COMMAND``."""
    return STDIO_PREFIX + command
