"""``arena bot check``: play a bot through scripted referee situations before it goes on the arena, and
say for each check whether it passed and why.

For each game id the bot plays, on one loopback referee (the service's own match runner), with in-process
opponents on a second token:

- ``move-time`` (a): N ordinary matches; every answer within its limit (the first-move allowance for a
  seat's first move, the move limit after). An answer that draws on the time bank, or none before the
  deadline (a strike), fails it.
- ``legal-actions`` (b): the same matches; no action refused.
- ``concurrency`` (d): two matches at once, one with the bot in every seat (it is seated in it twice or
  more through one token) and one beside it.
- ``long-match`` (e): a match made long and chance-heavy: the opponents avoid ending it (Shanghaien: they
  roll rather than call Shanghai, on the seed, of a few, with the most chance events; Shangri-La: they
  journey only when nothing else is legal).
- ``reconnect`` (c): the check cuts the bot's connection (TCP, through its own loopback proxy, the only
  address the bot is given) while the bot's turn is open; the bot must come back within the disconnect
  grace period and the match end completed, its seat not forfeited.

Then ``shutdown`` (f): after its last match the bot process must exit by itself, or on SIGTERM, within
``exit_s``, status 0.

c, d and e fail on what their situation breaks: the match not completed, a seat of the bot forfeited, the
process dead or gone, and timeouts or refusals that the N ordinary matches did not show (those are a's
and b's to report).

The bot is reached through a ``Launcher`` (``arena.local.launch``, shared with ``arena play``):
``ProcessLauncher`` spawns it (FILE.py:Class and reference names through ``bot_main``; ``--cmd`` any
executable) and ``ExternalLauncher`` waits for a bot started by hand. Each is told the referee address, the
token and how many matches (seats) it will play.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.local.launch import BotHandle, Launcher, exit_status
from referee import chance, games, transcript
from referee.games import TimeControl
from referee.host import Referee
from referee.match import Match
from referee.server import start_server
from referee.spec import MatchSpec, SeatSpec
from referee.wire.values import EndReason, token_sha256
from sdk.bot import Bot, Turn

CHECK_NAMES = ("move-time", "legal-actions", "concurrency", "long-match", "reconnect", "shutdown")
POLL_S = 0.02
EXIT_RACE_S = 2.0
"""How long a bot process found gone gives its matches to end before its exit counts as an incident."""
CUT_AFTER_MOVES = 3
"""The reconnect check cuts the stream at the first open turn of the bot after this many of its moves."""
LONG_SEEDS = 16
"""Seeds tried for the long match: the one with the most plies (chance ones included) in a quick engine
game of a random player against the stalling opponents."""


# ------------------------------------------------------------------------------------------- results


@dataclass
class CheckResult:
    name: str
    game_id: str | None  # None: the run as a whole (shutdown)
    passed: bool | None  # None: skipped (cannot be observed, e.g. the shutdown of a bot started by hand)
    reason: str
    figures: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "game_id": self.game_id,
            "passed": self.passed,
            "reason": self.reason,
            "figures": self.figures,
        }


def all_passed(results: list[CheckResult]) -> bool:
    """Whether the run passes: no check failed (skipped ones do not count)."""
    return all(r.passed is not False for r in results)


# -------------------------------------------------------------------------------------------- proxy


class CutProxy:
    """A loopback TCP proxy in front of the referee: the bot's only address, so that the check can drop
    its connections (``cut``) as a network failure would."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.links: set[asyncio.StreamWriter] = set()
        self.server: asyncio.Server | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def start(self, listen: str) -> int:
        host, _, port = listen.rpartition(":")
        self.server = await asyncio.start_server(self._link, host.strip("[]") or "127.0.0.1", int(port))
        return int(self.server.sockets[0].getsockname()[1])

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.transport.abort()
            return
        self.links |= {writer, up_writer}
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            self.links -= {writer, up_writer}

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.transport.abort()

    def cut(self) -> int:
        """Drop every connection now (a reset, no goodbye); returns how many there were."""
        links = list(self.links)
        for w in links:
            w.transport.abort()
        return len(links) // 2

    async def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2)


# ----------------------------------------------------------------------------------------- opponents


def stall_action(state: Any, rng: random.Random) -> Any:
    """An opponent that draws the match out: rolls (rerolls) whenever it may, never calls Shanghai nor
    journeys while anything else is legal."""
    acts = state.legal_actions()
    texts = [str(a) for a in acts]
    for want in ("reroll", "roll"):
        if want in texts:
            return acts[texts.index(want)]
    slow = [a for a, t in zip(acts, texts, strict=True) if t != "shanghai" and not t.startswith("journey")]
    return rng.choice(slow or acts)


class Opponents(Bot):
    """Every opponent seat of the check: random, or stalling in the matches named in ``stalling``."""

    name = "check-opponent"
    version = "1"

    def __init__(self, seed: str) -> None:
        self.rng = random.Random(seed)
        self.stalling: set[str] = set()

    async def act(self, turn: Turn) -> Any:
        if turn.match_id in self.stalling:
            return stall_action(turn.state, self.rng)
        return self.rng.choice(turn.legal_actions)


def long_seed(game_id: str, base: str) -> tuple[str, int]:
    """Of ``LONG_SEEDS`` seeds, the one whose quick engine game (seat 0 random, the others stalling) has
    the most plies; and that count."""
    game = games.get(game_id)
    best = ("", -1)
    for j in range(LONG_SEEDS):
        seed = f"{base}:{j}"
        rng = random.Random(seed)
        state = game.new_state()
        plies = 0
        while not state.is_terminal():
            actor = state.current_player()
            if actor == games.CHANCE:
                action = chance.sample(state, seed, plies)
            elif actor == 0:
                action = rng.choice(state.legal_actions())
            else:
                action = stall_action(state, rng)
            state = state.apply(action)
            plies += 1
        if plies > best[1]:
            best = (seed, plies)
    return best


# ------------------------------------------------------------------------------------------- the run


@dataclass
class CheckConfig:
    game_ids: tuple[str, ...]
    games: int = 4  # ordinary matches per game id (checks a and b)
    seed: str = "check"
    listen: str = "127.0.0.1:0"  # the address the bot connects to (the check's proxy)
    token: str = field(default_factory=lambda: "check_" + secrets.token_urlsafe(24))
    time_control: Mapping[str, int] = field(default_factory=dict)  # overrides of the games' defaults
    exit_s: float = 5.0  # the shutdown check's wait, before and after SIGTERM
    connect_s: float = 60.0  # how long to wait for a (re)started bot to connect
    out_dir: Path | None = None  # the matches' transcripts

    def control(self, game_id: str) -> TimeControl:
        return games.time_control(game_id, self.time_control)


@dataclass
class Seats:
    """What the bot's seats in a scenario's matches did (from the transcripts)."""

    matches: int = 0
    seats: int = 0
    moves: int = 0
    moves_in_seat: dict[tuple[str, int], int] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)
    first_times: list[float] = field(default_factory=list)
    over_limit: list[tuple[float, int]] = field(default_factory=list)  # (think ms, limit ms)
    timeouts: int = 0
    refusals: list[transcript.Refusal] = field(default_factory=list)
    refusal_strikes: int = 0
    forfeits: list[str] = field(default_factory=list)
    not_completed: list[str] = field(default_factory=list)
    plies: int = 0
    chance_plies: int = 0
    disconnects: list[int] = field(default_factory=list)  # plies
    reconnects: list[int] = field(default_factory=list)

    def add(self, match: Match, bot_seats: set[int], control: TimeControl) -> None:
        result = match.result
        self.matches += 1
        self.seats += len(bot_seats)
        if result is None or result.end_reason is not EndReason.COMPLETED:
            why = "not finished" if result is None else result.end_reason.value
            detail = f" ({result.detail})" if result is not None and result.detail else ""
            self.not_completed.append(f"{match.match_id} ended {why}{detail}")
        for event in (transcript.parse_event(line) for line in match.lines):
            if isinstance(event, transcript.Ply):
                self.plies += 1
                if event.actor == games.CHANCE:
                    self.chance_plies += 1
                if event.actor not in bot_seats or event.fallback or event.think_ms is None:
                    continue
                key = (match.match_id, event.actor)
                first = key not in self.moves_in_seat
                self.moves_in_seat[key] = self.moves_in_seat.get(key, 0) + 1
                self.moves += 1
                (self.first_times if first else self.times).append(event.think_ms)
                limit = control.first_move_ms if first else control.move_ms
                if event.think_ms > limit:
                    self.over_limit.append((event.think_ms, limit))
            elif isinstance(event, transcript.Strike) and event.seat in bot_seats:
                if event.reason == "timeout":
                    self.timeouts += 1
                else:
                    self.refusal_strikes += 1
            elif isinstance(event, transcript.Refusal) and event.seat in bot_seats:
                self.refusals.append(event)
            elif isinstance(event, transcript.Forfeit) and event.seat in bot_seats:
                self.forfeits.append(
                    f"seat {event.seat} of {match.match_id} forfeited ({event.reason}) at ply {event.ply}"
                )
            elif isinstance(event, transcript.Disconnect) and event.seat in bot_seats:
                self.disconnects.append(event.ply)
            elif isinstance(event, transcript.Reconnect) and event.seat in bot_seats:
                self.reconnects.append(event.ply)

    def slowest(self) -> float | None:
        return max(self.times) if self.times else None

    def slowest_first(self) -> float | None:
        return max(self.first_times) if self.first_times else None

    def figures(self) -> dict[str, Any]:
        return {
            "matches": self.matches,
            "moves": self.moves,
            "slowest_move_ms": self.slowest(),
            "slowest_first_move_ms": self.slowest_first(),
            "mean_move_ms": round(sum(self.times) / len(self.times), 1) if self.times else None,
            "timeouts": self.timeouts,
            "refusals": len(self.refusals),
            "plies": self.plies,
        }


@dataclass
class Scenario:
    name: str
    game_id: str
    tables: list[tuple[int, ...]]  # per match, the bot's seats
    concurrent: bool = False
    stall: bool = False
    cut: bool = False

    @property
    def seats(self) -> int:
        return sum(len(t) for t in self.tables)


def plan(config: CheckConfig) -> list[Scenario]:
    """The scenarios of a run, in order: per game id the ordinary matches, concurrency, long match, reconnect;
    then one ordinary match after which the bot should exit (shutdown)."""
    out = []
    for gid in config.game_ids:
        n = games.get(gid).num_players
        out += [
            Scenario("ordinary", gid, [(k % n,) for k in range(config.games)]),
            Scenario("concurrency", gid, [tuple(range(n)), (n - 1,)], concurrent=True),
            Scenario("long-match", gid, [(0,)], stall=True),
            Scenario("reconnect", gid, [(1 % n,)], cut=True),
        ]
    return [*out, Scenario("shutdown", config.game_ids[0], [(0,)])]


@dataclass
class Outcome:
    """One scenario as it went."""

    seats: Seats
    incidents: list[str] = field(default_factory=list)  # the bot died, never connected, ...
    figures: dict[str, Any] = field(default_factory=dict)


class Checker:
    """One run: the referee, the proxy, the opponents, the bot; ``run`` returns the checks."""

    def __init__(self, launcher: Launcher, config: CheckConfig, say: Callable[[str], None] = lambda _: None) -> None:
        self.launcher = launcher
        self.config = config
        self.say = say
        self.referee = Referee()
        self.bot_hash = token_sha256(config.token)
        seats = max(games.get(g).num_players for g in config.game_ids)
        self.opp_tokens = [secrets.token_urlsafe(24) for _ in range(seats)]  # one per seat: one seat per stream
        self.opponents = Opponents(config.seed)
        self.handle: BotHandle | None = None
        self.address = ""
        self.notes_seen = 0
        self.match_no = 0

    async def run(self) -> list[CheckResult]:
        from sdk.client import BotClient

        scenarios = plan(self.config)
        server, port = await start_server(self.referee)
        proxy = CutProxy(port)
        self.proxy = proxy
        opp_clients = [BotClient(self.opponents, f"127.0.0.1:{port}", t) for t in self.opp_tokens]
        opp_tasks = [asyncio.get_running_loop().create_task(c.run()) for c in opp_clients]
        results: list[CheckResult] = []
        try:
            listen_port = await proxy.start(self.config.listen)
            host = self.config.listen.rpartition(":")[0] or "127.0.0.1"
            self.address = f"{host}:{listen_port}"
            self.referee.allow_token(self.bot_hash, self.launcher.label)
            for t in self.opp_tokens:
                self.referee.allow_token(token_sha256(t), self.opponents.name)
            await self._wait(lambda: all(c.connected.is_set() for c in opp_clients), 10)
            outcomes: dict[tuple[str, str], Outcome] = {}
            for k, scenario in enumerate(scenarios):
                remaining = sum(s.seats for s in scenarios[k:])
                self.say(f"{scenario.game_id}: {scenario.name}")
                outcomes[scenario.game_id, scenario.name] = await self._scenario(scenario, remaining)
            for gid in self.config.game_ids:
                results += judge(gid, {name: o for (g, name), o in outcomes.items() if g == gid}, self.config)
            results.append(await self._shutdown(outcomes[self.config.game_ids[0], "shutdown"]))
        finally:
            for c, task in zip(opp_clients, opp_tasks, strict=True):
                c.stop()
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            if self.handle is not None:
                self.handle.kill()
            await self.referee.shutdown()
            await proxy.close()
            await server.stop(0.5)
        return results

    # ------------------------------------------------------------------ the bot

    def connected(self) -> bool:
        return any(s.hello for s in self.referee.sessions.get(self.bot_hash, ()))

    async def _wait(self, ready: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(POLL_S)
        return True

    def _gone(self) -> str:
        """Why the bot process is no longer running ("" while it runs)."""
        h = self.handle
        code = h.exit_code() if h is not None else None
        if h is None or code is None:
            return ""
        words = h.last_words()
        return f"the bot process exited (status {code}){': ' + words if words else ''}"

    async def _ready(self, matches: int) -> str:
        """Have the bot connected, (re)starting it if it died or got lost; "" or why it is not there."""
        grace = self.config.control(self.config.game_ids[0]).disconnect_grace_ms / 1000
        if self.handle is not None and self.handle.exit_code() is None and not self.connected():
            await self._wait(self.connected, grace if self.launcher.restartable else self.config.connect_s)
        if self.connected() and (self.handle is None or self.handle.exit_code() is None):
            return ""
        if self.handle is not None and not self.launcher.restartable:
            return f"the bot did not connect again within {self.config.connect_s:g} s"
        if self.handle is not None:
            self.handle.kill()
            self.say("the bot is gone; starting it again")
        self.handle = self.launcher.start(self.address, self.config.token, matches)
        handle = self.handle
        await self._wait(lambda: self.connected() or handle.exit_code() is not None, self.config.connect_s)
        if self.connected():
            return ""
        return self._gone() or f"the bot did not connect within {self.config.connect_s:g} s"

    # ------------------------------------------------------------------ scenarios

    async def _scenario(self, sc: Scenario, remaining: int) -> Outcome:
        seats = Seats()
        problem = await self._ready(remaining)
        if problem:
            return Outcome(seats, [problem])
        gid = sc.game_id
        game = games.get(gid)
        control = self.config.control(gid)
        specs: list[tuple[MatchSpec, set[int]]] = []
        figures: dict[str, Any] = {}
        for table in sc.tables:
            self.match_no += 1
            match_id = f"{self.config.seed}-{self.match_no:03d}-{gid}-{sc.name}"
            seat_specs = tuple(
                SeatSpec(
                    i,
                    self.launcher.label if i in table else f"random#{i}",
                    self.bot_hash if i in table else token_sha256(self.opp_tokens[i]),
                )
                for i in range(game.num_players)
            )
            seed = f"{self.config.seed}:{gid}:{sc.name}:{len(specs)}"
            if sc.stall:
                seed, _ = long_seed(gid, f"{self.config.seed}:{gid}:long")
                self.opponents.stalling.add(match_id)
            specs.append((MatchSpec(match_id, gid, seat_specs, seed=seed, time_control=control), set(table)))
        incidents: list[str] = []
        if sc.concurrent:
            matches = [self.referee.start_match(s) for s, _ in specs]
            await self._watch(matches, incidents, None)
        else:
            matches = []
            for spec, mine in specs:
                m = self.referee.start_match(spec)
                matches.append(m)
                await self._watch([m], incidents, (mine, figures) if sc.cut else None)
                if incidents:
                    break
        for m, (spec, mine) in zip(matches, specs, strict=False):
            seats.add(m, mine, control)
            if self.config.out_dir is not None:
                self.config.out_dir.mkdir(parents=True, exist_ok=True)
                (self.config.out_dir / f"{spec.match_id}.jsonl").write_text("\n".join(m.lines) + "\n", encoding="utf-8")
        notes = self.handle.notes() if self.handle is not None else []
        new_notes = notes[self.notes_seen :]
        self.notes_seen = len(notes)
        if new_notes:
            figures["act_errors"] = len(new_notes)
            figures["first_act_error"] = new_notes[0]
        return Outcome(seats, incidents, figures)

    async def _watch(
        self, matches: list[Match], incidents: list[str], cut: tuple[set[int], dict[str, Any]] | None
    ) -> None:
        """Wait for ``matches`` to end, noting the bot process's death; with ``cut``, drop the bot's
        connection at its first open turn after ``CUT_AFTER_MOVES`` moves and time its return."""
        tasks = [self.referee.tasks[m.match_id] for m in matches]
        cut_at: list[float] = []
        cutter = asyncio.get_running_loop().create_task(self._cut(matches[0], cut, cut_at)) if cut else None
        try:
            while not all(t.done() for t in tasks):
                await asyncio.sleep(POLL_S)
                gone = self._gone()  # non-empty: the handle's process has an exit code
                if gone and not any(gone in i for i in incidents):
                    # a bot that counts its matches exits (status 0) on its last MatchEnded, a moment
                    # before the match's task has ended here: that is no incident
                    clean = self.handle is not None and self.handle.exit_code() == 0
                    if clean:
                        await asyncio.wait(tasks, timeout=EXIT_RACE_S)
                    if not clean or not all(t.done() for t in tasks):
                        incidents.append(gone + (" after its connection was cut" if cut_at else ""))
        finally:
            if cutter is not None:
                cutter.cancel()
        for t in tasks:
            if not t.cancelled() and t.exception() is not None:
                incidents.append(f"the match crashed: {t.exception()!r}")
        if cut is not None and not cut_at:
            incidents.append("the check found no open turn of the bot to cut its connection at")

    async def _cut(self, m: Match, cut: tuple[set[int], dict[str, Any]], cut_at: list[float]) -> None:
        """Follow the match's events; once the bot's seat has made ``CUT_AFTER_MOVES`` moves, drop its
        connection the moment its next turn is open (the runner has sent the turn and waits); then time
        its return (the transcript's ``reconnect``)."""
        seats, figures = cut
        async for line in m.follow():
            if cut_at:
                event = transcript.parse_event(line)
                if isinstance(event, transcript.Reconnect) and event.seat in seats:
                    figures["reconnect_ms"] = round((time.monotonic() - cut_at[0]) * 1000, 1)
                    return
                continue
            p = m.pending
            for _ in range(3):  # a line is written, then the next turn opens on a later pass of the loop
                if p is not None:
                    break
                await asyncio.sleep(0)
                p = m.pending
            if p is None or p.seat not in seats or p.done or m.seats[p.seat].clock.moves < CUT_AFTER_MOVES:
                continue
            if self.proxy.cut():
                cut_at.append(time.monotonic())
                figures["cut_at_ply"] = m.ply

    async def _shutdown(self, last: Outcome) -> CheckResult:
        """f: after its last match (``last``), the bot exits by itself, or on SIGTERM, with status 0."""
        h = self.handle
        exit_s = self.config.exit_s
        if h is None:
            return CheckResult("shutdown", None, False, "the bot never ran")
        trouble = last.incidents + last.seats.not_completed
        if trouble:
            h.kill()
            return CheckResult("shutdown", None, False, "its last match did not go through: " + "; ".join(trouble))
        if not h.observable:
            return CheckResult("shutdown", None, None, "the bot runs elsewhere: its shutdown cannot be seen from here")
        start = time.monotonic()
        await self._wait(lambda: h.exit_code() is not None, exit_s)
        code = h.exit_code()
        took = time.monotonic() - start
        figures: dict[str, Any] = {"exit_s": round(took, 2), "sigterm": False, "exit_status": code}
        if code is not None:
            if code == 0:
                return CheckResult(
                    "shutdown", None, True, f"exited by itself {took:.1f} s after its last match (status 0)", figures
                )
            words = h.last_words()
            return CheckResult(
                "shutdown",
                None,
                False,
                f"exited with status {exit_status(code)} after its last match" + (f": {words}" if words else ""),
                figures,
            )
        h.terminate()
        figures["sigterm"] = True
        start = time.monotonic()
        await self._wait(lambda: h.exit_code() is not None, exit_s)
        code = h.exit_code()
        took = time.monotonic() - start
        figures.update(exit_s=round(exit_s + took, 2), exit_status=code)
        if code == 0:
            return CheckResult(
                "shutdown",
                None,
                True,
                f"still running {exit_s:g} s after its last match; exited on SIGTERM in {took:.1f} s (status 0)",
                figures,
            )
        if code is not None:
            return CheckResult(
                "shutdown",
                None,
                False,
                f"did not exit within {exit_s:g} s of its last match (something keeps it running), and SIGTERM "
                f"ended it with status {exit_status(code)}, not a clean exit 0 (handle SIGTERM: stop and exit 0)",
                figures,
            )
        h.kill()
        return CheckResult(
            "shutdown",
            None,
            False,
            f"hangs on shutdown: still running {exit_s:g} s after its last "
            f"match and {exit_s:g} s after SIGTERM (killed)",
            figures,
        )


# -------------------------------------------------------------------------------------------- verdicts


def judge(game_id: str, outcomes: dict[str, Outcome], config: CheckConfig) -> list[CheckResult]:
    """The checks of one game id from its scenarios' outcomes."""
    control = config.control(game_id)
    base = outcomes["ordinary"]
    out = [_move_time(game_id, base, control), _legal(game_id, base)]
    for name, what in (
        ("concurrency", "seated twice at once"),
        ("long-match", "in the long match"),
        ("reconnect", "after its connection was cut"),
    ):
        out.append(_situation(name, game_id, outcomes[name], base, what, control))
    return out


def _act_errors(o: Outcome) -> str:
    n = o.figures.get("act_errors", 0)
    return f"; its act raised {n} time(s) (first: {o.figures['first_act_error']})" if n else ""


def _move_time(game_id: str, o: Outcome, control: TimeControl) -> CheckResult:
    s = o.seats
    figures = {
        **s.figures(),
        "move_ms_limit": control.move_ms,
        "first_move_ms_limit": control.first_move_ms,
        "over_limit": len(s.over_limit),
    }
    if o.incidents:
        return CheckResult("move-time", game_id, False, "; ".join(o.incidents), figures)
    problems = []
    if s.timeouts:
        problems.append(f"{s.timeouts} turn(s) with no answer before the deadline (strikes; the fallback was played)")
    if s.over_limit:
        worst = max(s.over_limit)
        problems.append(
            f"{len(s.over_limit)} answer(s) over the limit, drawing on the time bank (slowest "
            f"{worst[0]:.0f} ms of {worst[1]} ms)"
        )
    if problems:
        return CheckResult("move-time", game_id, False, "; ".join(problems) + _act_errors(o), figures)
    if not s.moves:
        return CheckResult("move-time", game_id, False, "the bot made no move" + _act_errors(o), figures)
    return CheckResult(
        "move-time",
        game_id,
        True,
        f"{s.moves} moves in {s.matches} matches, slowest {_ms(s.slowest())} (limit {control.move_ms} ms), "
        f"first moves at most {_ms(s.slowest_first())} (allowance {control.first_move_ms} ms)",
        figures,
    )


def _legal(game_id: str, o: Outcome) -> CheckResult:
    s = o.seats
    figures = {
        "matches": s.matches,
        "moves": s.moves,
        "refusals": len(s.refusals),
        "refusal_strikes": s.refusal_strikes,
    }
    if o.incidents:
        return CheckResult("legal-actions", game_id, False, "; ".join(o.incidents), figures)
    if s.refusals:
        r = s.refusals[0]
        return CheckResult(
            "legal-actions",
            game_id,
            False,
            f"{len(s.refusals)} action(s) refused; first {r.action!r} at ply {r.ply} ({r.code}: {r.reason})",
            figures,
        )
    if not s.moves:
        return CheckResult("legal-actions", game_id, False, "the bot made no move" + _act_errors(o), figures)
    return CheckResult("legal-actions", game_id, True, f"{s.moves} moves in {s.matches} matches, none refused", figures)


def _situation(name: str, game_id: str, o: Outcome, base: Outcome, what: str, control: TimeControl) -> CheckResult:
    """c, d, e: the matches completed, no seat of the bot forfeited, the bot still there, and no timeouts
    or refusals that the ordinary matches did not show."""
    s = o.seats
    figures = {**s.figures(), **o.figures}
    if name == "long-match":
        figures["chance_plies"] = s.chance_plies
    problems = list(o.incidents) + s.not_completed + s.forfeits
    if s.timeouts and not base.seats.timeouts:
        problems.append(f"{s.timeouts} turn(s) unanswered before the deadline {what} (none in the ordinary matches)")
    if s.refusals and not base.seats.refusals:
        r = s.refusals[0]
        problems.append(
            f"{len(s.refusals)} action(s) refused {what} (none in the ordinary matches); first "
            f"{r.action!r} ({r.code}: {r.reason})"
        )
    if name == "concurrency" and not problems:
        held = len(s.moves_in_seat)
        if held < s.seats:
            problems.append(f"{s.seats - held} of its {s.seats} seats got no answer of its own {what}")
    if name == "reconnect" and not o.incidents:
        if not s.disconnects:
            problems.append("the referee saw no disconnection when the check cut the connection")
        elif not s.reconnects:
            problems.append(f"did not reconnect within the {control.disconnect_grace_ms} ms grace period")
    if problems:
        return CheckResult(name, game_id, False, "; ".join(dict.fromkeys(problems)) + _act_errors(o), figures)
    if name == "reconnect":
        reason = (
            f"cut at ply {figures.get('cut_at_ply')}, back in {_ms(figures.get('reconnect_ms'))} (grace "
            f"{control.disconnect_grace_ms} ms); the match completed"
        )
    elif name == "concurrency":
        reason = f"{s.seats} seats in {s.matches} matches at once, all completed; slowest move {_ms(s.slowest())}"
    else:
        slowest = _ms(s.slowest())
        reason = f"{s.plies} plies ({s.chance_plies} chance, {s.moves} of its moves), completed; slowest move {slowest}"
    return CheckResult(name, game_id, True, reason, figures)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


async def run_checks(
    launcher: Launcher, config: CheckConfig, say: Callable[[str], None] = lambda _: None
) -> list[CheckResult]:
    """Every check for ``config.game_ids`` (see the module's docstring)."""
    return await Checker(launcher, config, say).run()
