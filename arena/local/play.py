"""Local play: a referee on loopback and one process per player, running full matches through the
same referee code path as the service. No Redis needed.

A player is a Python bot (FILE.py:Class, module:Class, a reference name), run by ``bot_process`` in a
process of its own, or a bot in any language (``arena.local.launch``): ``cmd:COMMAND`` spawned with the
referee's address, its token and its number of matches in its environment, or ``external:NAME`` started
by hand once the run has said where it must connect. Every player plays all its seats through its one
token, several matches at once."""

from __future__ import annotations

import asyncio
import contextlib
import math
import multiprocessing
import queue
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.events.formats import rotated
from arena.ladder.elo import pair_score, places
from arena.local.launch import (
    BotHandle,
    ExternalLauncher,
    LaunchKind,
    check_launched,
    command_launcher,
    exit_status,
    file_stem,
    launched_kind,
    launched_value,
    probe_bots,
    wait_exit,
    wind_down,
)
from arena.local.sprt import SprtConfig, SprtTally
from referee import games
from referee.games import TimeControl
from referee.host import Referee
from referee.match import Match
from referee.server import start_server
from referee.spec import MatchSpec, SeatSpec
from referee.wire.values import EndReason, MatchResult, SeatResult, SeatStatus, token_sha256

POLL_S = 0.2
LAUNCH_CONNECT_S = 60.0
"""How long a ``cmd:`` bot has to connect before its seats forfeit (an ``external:`` one: ``wait_s``)."""
EXIT_S = 5.0
"""After its last match a launched bot has this long to exit by itself, then as long after SIGTERM."""


@dataclass(frozen=True)
class Player:
    """A bot taking part: a reference bot name (``random``, ``greedy``, ``strong``), FILE.py:Class or
    module:Class, ``cmd:COMMAND`` or ``external:NAME``. ``label`` names its seats."""

    spec: str
    label: str
    token: str = field(default_factory=lambda: "local_" + secrets.token_urlsafe(16))  # never "-...": a CLI argument


def check_players(players: list[Player]) -> None:
    """Check, before any process starts, that every player gives a playable bot: reference names here,
    Python bots from files and modules in a child process (``probe_bots``: the author's module and
    constructor must not keep this process alive), commands and names of launched bots by their text.
    ``sdk.client.BotLoadError`` names the first spec that gives no playable bot (no such file or class, an
    import error, a bad name or version, a command that is not found)."""
    from sdk.bots import make_bot
    from sdk.client import BotLoadError, load_bot

    authored: list[str] = []
    for p in players:
        if launched_kind(p.spec) is None:
            if ":" in p.spec:
                authored.append(p.spec)
            else:
                load_bot(p.spec, factory=make_bot)
            continue
        try:
            check_launched(p.spec)
        except ValueError as e:
            raise BotLoadError(str(e)) from None
    probe_bots(list(dict.fromkeys(authored)))


def bot_process(
    spec: str, target: str, token: str, matches: int, seed: int, index: int = 0, reports: Any = None
) -> None:
    """Entry point of a player's process: connect and play ``matches`` matches. Each exception of the
    bot's ``act``, and the one that ends the process, goes to ``reports`` (a multiprocessing queue) as
    ``(index, kind, text)`` with kind ``act`` or ``died``."""
    from referee.logs import configure
    from sdk.bots import make_bot
    from sdk.client import BotClient, load_bot
    from sdk.stdio import run_closing

    def report(kind: str, e: BaseException) -> None:
        if reports is not None:
            reports.put((index, kind, f"{type(e).__name__}: {e}"[:300]))

    configure(json=False, level="WARNING")
    try:
        bot = load_bot(spec, factory=lambda name: make_bot(name, seed=seed))
        client = BotClient(bot, target, token, max_matches=matches, on_error=lambda e: report("act", e))
        asyncio.run(run_closing(client, bot))
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except Exception as e:
        report("died", e)
        raise SystemExit(1) from None


@dataclass
class PlayerTrouble:
    """What went wrong with one player's bot during a run (reported by its process; ``gone``: a launched
    bot that ended or never connected, whose seats forfeit while the run goes on)."""

    act_errors: int = 0
    first_error: str = ""
    died: str = ""
    gone: str = ""


@dataclass(frozen=True)
class MatchPlan:
    """One match to play: its id (and transcript file name), which player sits in each seat (indices
    into the players), and its seed."""

    match_id: str
    order: tuple[int, ...]
    seed: str


def rotation_plan(
    players: int, games_count: int, seed: str, *, rotate: bool = True, seed_group: int = 1
) -> list[MatchPlan]:
    """``arena play``'s matches: match k is ``SEED-kkkk``, seats rotated by k (unless ``rotate`` is off),
    seed ``SEED:(k // seed_group)``: with ``seed_group`` = the number of players, each seed is played once
    in every rotation of the seats (for two players: a pair of games with the seats swapped)."""
    if seed_group < 1:
        raise ValueError("seed_group must be at least 1")
    plan = []
    for k in range(games_count):
        order = rotated(range(players), k) if rotate else tuple(range(players))
        plan.append(MatchPlan(f"{seed}-{k:04d}", order, f"{seed}:{k // seed_group}"))
    return plan


def pairwise(result: MatchResult, label: str) -> tuple[float, int] | None:
    """``label``'s points against each other seat, as the ladder scores them (1 ahead, 0.5
    level, 0 behind; a forfeited seat is behind every active one), and the number of other seats.
    None for an aborted match or one ``label`` did not play."""
    if result.end_reason is EndReason.ABORTED:
        return None
    place = places([_seat_dict(s) for s in result.seats])
    mine = [i for i, s in enumerate(result.seats) if s.bot_name == label]
    if not mine:
        return None
    me = mine[0]
    points = sum(pair_score(place[me], place[j]) for j in range(len(place)) if j != me)
    return points, len(place) - 1


def _seat_dict(seat: SeatResult) -> dict[str, Any]:
    return {"rank": seat.rank, "status": seat.status}


@dataclass
class PlayReport:
    results: list[MatchResult]
    transcripts: Path
    labels: list[str]
    troubles: dict[str, PlayerTrouble] = field(default_factory=dict)  # by label; only players in trouble
    games_count: int = 0  # matches asked for
    stopped: bool = False  # the caller's ``stop`` ended the run before every match was played (an SPRT decision)

    def problems(self) -> list[str]:
        """One line per thing that makes the run a failure: a bot whose ``act`` raised, a bot process that
        died, matches aborted or never played (but for a run the caller stopped). Empty when the run
        went as asked."""
        out = []
        for label, t in self.troubles.items():
            forfeits = sum(1 for r in self.results for s in r.seats if s.bot_name == label
                           and s.status is SeatStatus.FORFEITED)  # fmt: skip
            if t.act_errors:
                out.append(f"{label}: act raised {t.act_errors} time(s) (first: {t.first_error}); "
                           f"the seat timed out instead, and forfeited {forfeits} match(es)")  # fmt: skip
            if t.died:
                out.append(f"{label}: its bot process died: {t.died}")
            if t.gone:
                out.append(f"{label}: {t.gone}; it forfeited {forfeits} match(es)")
        aborted = sum(1 for r in self.results if r.end_reason is EndReason.ABORTED)
        if aborted:
            out.append(f"{aborted} match(es) aborted (a bot did not join in time)")
        if len(self.results) < self.games_count and not self.stopped:
            out.append(f"{self.games_count - len(self.results)} of {self.games_count} match(es) not played")
        return out

    def summary(self) -> dict[str, Any]:
        """Player 0's record against the field: wins/draws/losses (sole first place, shared first place,
        other), mean score, pairwise score and the Elo difference it means, with its 95% error bar (None
        before any match counted). Places as the ladder has them: a forfeited seat is last."""
        return record(self.results, self.labels[0])


def record(results: list[MatchResult], label: str) -> dict[str, Any]:
    """``label``'s record in ``results`` (see ``PlayReport.summary``); every number finite or None."""
    wins = draws = losses = 0
    points = 0.0
    pairs = 0
    scores: list[int] = []
    aborted = 0
    for r in results:
        mine = next((s for s in r.seats if s.bot_name == label), None)
        if mine is None:
            continue
        outcome = pairwise(r, label)
        if outcome is None:
            aborted += 1
            continue
        scores.append(mine.score)
        place = places([_seat_dict(s) for s in r.seats])
        me = place[r.seats.index(mine)]
        if me == min(place) and place.count(me) == 1:
            wins += 1
        elif me == min(place):
            draws += 1
        else:
            losses += 1
        points += outcome[0]
        pairs += outcome[1]
    played = wins + draws + losses
    frac = points / pairs if pairs else 0.5
    elo, err = elo_difference(frac, played)
    return {
        "games": played,
        "aborted": aborted,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "mean_score": sum(scores) / len(scores) if scores else None,
        "pairwise_score": frac if pairs else None,
        "elo": elo if played else None,
        "elo_error": err if math.isfinite(err) else None,
    }


def elo_difference(fraction: float, games_played: int) -> tuple[float, float]:
    """Elo difference for a score fraction, with a 95% error bar from the binomial standard error
    (infinite for no games)."""
    if games_played == 0:
        return 0.0, math.inf
    p = min(max(fraction, 0.5 / games_played), 1 - 0.5 / games_played)
    elo = -400 * math.log10(1 / p - 1)
    se = math.sqrt(p * (1 - p) / games_played)
    slope = 400 / (math.log(10) * p * (1 - p))
    return elo, 1.96 * se * slope


@dataclass
class SprtMonitor:
    """The SPRT of ``arena play``: results go in as they come (``add``), grouped into units (``group``
    consecutive matches of the plan: a pair with the seats swapped, a rotation of a table, or one match),
    each unit scored by the hero's mean pairwise result (``pairwise``). A unit with an aborted match, or
    one cut short by the end of the run, does not count."""

    tally: SprtTally
    hero: str
    group: int
    unit_of: dict[str, int]
    pending: dict[int, list[tuple[float, int]]] = field(default_factory=dict)
    spoiled: set[int] = field(default_factory=set)

    @classmethod
    def for_plan(cls, config: SprtConfig, plan: list[MatchPlan], hero: str, players: int, group: int) -> SprtMonitor:
        steps = 2 * (players - 1) * group  # a unit's points, in half points, go from 0 to this
        tally = SprtTally(config, grid=steps, games_per_unit=group)
        return cls(tally, hero, group, {m.match_id: k // group for k, m in enumerate(plan)})

    def add(self, result: MatchResult) -> None:
        unit = self.unit_of.get(result.match_id)
        if unit is None or unit in self.spoiled:
            return
        outcome = pairwise(result, self.hero)
        if outcome is None:
            self.spoiled.add(unit)
            self.pending.pop(unit, None)
            return
        got = self.pending.setdefault(unit, [])
        got.append(outcome)
        if len(got) == self.group:
            del self.pending[unit]
            self.tally.add(sum(p for p, _ in got) / sum(n for _, n in got))

    @property
    def decided(self) -> bool:
        return self.tally.decision is not None


async def play(
    game_id: str,
    players: list[Player],
    *,
    games_count: int,
    seed: str,
    concurrency: int,
    rotate: bool,
    out_dir: Path,
    time_control: TimeControl | None = None,
    on_result: Callable[[MatchResult], None] | None = None,
    check: bool = True,
    seed_group: int = 1,
    stop: Callable[[], bool] | None = None,
    listen: str = "127.0.0.1:0",
    wait_s: float = 600.0,
    say: Callable[[str], None] | None = None,
) -> PlayReport:
    """Play ``games_count`` matches (``rotation_plan``); the report's ``problems()`` says what went wrong.
    Every bot spec is loaded here first (BotLoadError, before anything starts; ``check=False``: the
    caller did ``check_players``); a Python bot process that dies stops the run, and so does ``stop()``
    returning true after a result (the matches still running are called off, none starts). ``listen``,
    ``wait_s``, ``say``: as ``run_matches``'s (bots in other languages)."""
    game = games.get(game_id)
    if len(players) != game.num_players:
        raise ValueError(f"{game_id} needs {game.num_players} players, got {len(players)}")
    plan = rotation_plan(len(players), games_count, seed, rotate=rotate, seed_group=seed_group)
    return await run_matches(game_id, players, plan, concurrency=concurrency, out_dir=out_dir,
                             time_control=time_control, on_result=on_result, check=check, stop=stop,
                             listen=listen, wait_s=wait_s, say=say)  # fmt: skip


@dataclass
class Launched:
    """A player that is not a Python bot of ours: its process (or a bot started by hand), and whether
    it is there."""

    index: int
    player: Player
    kind: LaunchKind
    handle: BotHandle
    connected: bool = False
    gone: str = ""  # why its seats forfeit from now on ("" while it plays)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _dial(listen: str, port: int) -> str:
    """The address a bot on this machine dials for a referee listening on ``listen`` (port ``port``)."""
    host = listen.rpartition(":")[0]
    if host in ("", "0.0.0.0", "[::]", "::"):
        host = "127.0.0.1"
    return f"{host}:{port}"


async def run_matches(
    game_id: str,
    players: list[Player],
    plan: list[MatchPlan],
    *,
    concurrency: int,
    out_dir: Path,
    time_control: TimeControl | None = None,
    on_result: Callable[[MatchResult], None] | None = None,
    check: bool = True,
    stop: Callable[[], bool] | None = None,
    listen: str = "127.0.0.1:0",
    wait_s: float = 600.0,
    say: Callable[[str], None] | None = None,
) -> PlayReport:
    """Play the matches of ``plan`` through one referee listening on ``listen``, ``concurrency`` at a
    time in plan order, with one process per player (it plays the matches it is seated in). Each
    transcript is written to ``out_dir/MATCH_ID.jsonl`` as its match ends. See ``play``.

    A ``cmd:`` player is spawned with its environment (``arena.local.launch``; its output in
    ``out_dir/logs/``); an ``external:`` one is announced through ``say`` (address, token, matches) and
    waited for, ``wait_s`` at most. The matches start once every such player has connected. One that
    dies, or does not connect in time, forfeits its seats from then on (in the matches running and in
    those to come) and the run goes on; ``problems()`` says so."""
    game = games.get(game_id)
    if any(len(m.order) != game.num_players for m in plan):
        raise ValueError(f"every {game_id} match needs {game.num_players} players")
    if check:
        check_players(players)
    out_dir.mkdir(parents=True, exist_ok=True)
    seated = [sum(1 for m in plan if i in m.order) for i in range(len(players))]
    referee = Referee()
    server, port = await start_server(referee, listen)
    target = f"127.0.0.1:{port}"
    address = _dial(listen, port)
    ctx = multiprocessing.get_context("spawn")
    reports = ctx.Queue()
    python = [i for i, p in enumerate(players) if seated[i] and launched_kind(p.spec) is None]
    procs = [
        ctx.Process(target=bot_process, args=(players[i].spec, target, players[i].token, seated[i], i, i, reports),
                    daemon=True)
        for i in python
    ]  # fmt: skip
    in_play = [players[i] for i in python]
    launched: dict[int, Launched] = {}
    troubles: dict[str, PlayerTrouble] = {}
    done = [0] * len(players)  # matches finished, per player

    def drain() -> None:
        while True:
            try:
                i, kind, text = reports.get_nowait()
            except queue.Empty:
                return
            t = troubles.setdefault(players[i].label, PlayerTrouble())
            if kind == "act":
                t.act_errors += 1
                t.first_error = t.first_error or text
            else:
                t.died = text

    for p in players:  # a bot may connect before its first match starts
        referee.allow_token(token_sha256(p.token), p.label)
    for proc in procs:
        proc.start()
    results: list[MatchResult] = []
    running: dict[str, tuple[Match, MatchPlan]] = {}
    slots = asyncio.Semaphore(concurrency)
    stopping = asyncio.Event()
    cut_short = False

    async def procs_gone(deadline: float) -> None:
        """Wait until the Python bot processes have ended, or ``deadline`` (monotonic)."""
        while any(proc.is_alive() for proc in procs) and time.monotonic() < deadline:
            drain()  # a process with reports in its queue's buffer ends only once they are read
            await asyncio.sleep(0.02)

    def give_up(bot: Launched, why: str) -> None:
        """``bot`` is gone: say why, and forfeit its seats in the matches running (those to come forfeit
        them as they start)."""
        bot.gone = why
        troubles.setdefault(bot.player.label, PlayerTrouble()).gone = why
        for match, m in running.values():
            _forfeit_gone(match, m, launched)

    def check_launched_bots(since: float | None = None) -> None:
        """Note which launched bots have connected, and give up on those that exited before their last
        match or (with ``since``, the time they were started) have not connected in time."""
        for bot in launched.values():
            if bot.gone:
                continue
            code = bot.handle.exit_code()
            if not bot.connected and any(s.hello for s in referee.sessions.get(token_sha256(bot.player.token), ())):
                bot.connected = True
            limit = wait_s if bot.kind == "external" else LAUNCH_CONNECT_S
            if code is not None and done[bot.index] < seated[bot.index]:
                give_up(bot, _exited(bot, code, done[bot.index], seated[bot.index]))
            elif since is not None and not bot.connected and time.monotonic() > since + limit:
                bot.handle.kill()
                give_up(bot, f"did not connect within {limit:g} s{_output(bot.handle)}")

    try:
        for i, p in enumerate(players):
            kind = launched_kind(p.spec)
            if kind is None or not seated[i]:
                continue
            if kind == "cmd":
                launcher = command_launcher(launched_value(p.spec), p.label, out_dir / "logs", stem=file_stem(p.label))
                handle = launcher.start(address, p.token, seated[i])
            else:
                handle = ExternalLauncher(say or _say, p.label).start(address, p.token, seated[i])
            launched[i] = Launched(i, p, kind, handle)
        since = time.monotonic()
        while any(not (bot.connected or bot.gone) for bot in launched.values()):  # the matches wait for them
            await asyncio.sleep(0.05)
            check_launched_bots(since)

        async def one(m: MatchPlan) -> None:
            async with slots:
                if stopping.is_set():
                    return
                seats = tuple(
                    SeatSpec(seat, players[p].label, token_sha256(players[p].token)) for seat, p in enumerate(m.order)
                )
                spec = MatchSpec(m.match_id, game_id, seats, seed=m.seed, time_control=time_control)
                match = referee.start_match(spec)
                running[m.match_id] = (match, m)
                _forfeit_gone(match, m, launched)
                try:
                    result = await referee.tasks[spec.match_id]
                finally:
                    running.pop(m.match_id, None)
                for p in set(m.order):
                    done[p] += 1
                (out_dir / f"{spec.match_id}.jsonl").write_text("\n".join(match.lines) + "\n", encoding="utf-8")
                results.append(result)
                if on_result is not None:
                    on_result(result)
                if stop is not None and not stopping.is_set() and stop():
                    stopping.set()

        matches = asyncio.ensure_future(asyncio.gather(*(one(m) for m in plan)))
        while not matches.done():  # a Python bot process that dies stops the run: its matches cannot go on
            await asyncio.wait({matches}, timeout=POLL_S)
            drain()
            if not stopping.is_set():
                check_launched_bots()
            dead = [(p, proc.exitcode) for p, proc in zip(in_play, procs, strict=True) if proc.exitcode]
            if (dead or stopping.is_set()) and not matches.done():
                for p, code in dead:
                    t = troubles.setdefault(p.label, PlayerTrouble())
                    t.died = t.died or f"exit code {code}"
                matches.cancel()  # the matches still running are called off
                with contextlib.suppress(asyncio.CancelledError):
                    await matches
                cut_short = True
                break
        else:
            matches.result()  # a match's own error
    finally:
        try:
            if cut_short or stopping.is_set():  # the bots would wait for matches that never come
                for proc in procs:
                    if proc.is_alive():
                        proc.terminate()
                for bot in launched.values():
                    bot.handle.terminate()
                await procs_gone(time.monotonic() + 2)  # before the server stops: else they see it go, and say so
            else:  # a launched bot exits by itself after its matches; else SIGTERM, then SIGKILL
                await asyncio.gather(*(wind_down(bot.handle, EXIT_S, now=bool(bot.gone))
                                       for bot in launched.values()))  # fmt: skip
        finally:
            await referee.shutdown()
            await server.stop(1)
            deadline = time.monotonic() + 5
            await procs_gone(deadline)
            for proc in procs:
                if proc.is_alive():
                    proc.kill()
                proc.join(timeout=1)
            drain()
            for bot in launched.values():  # after SIGTERM, as long as the Python bots had; then SIGKILL
                if bot.handle.observable and await wait_exit(bot.handle, max(0.0, deadline - time.monotonic())) is None:
                    bot.handle.kill()
    return PlayReport(results, out_dir, [p.label for p in players], troubles, len(plan), stopping.is_set())


def _forfeit_gone(match: Match, m: MatchPlan, launched: dict[int, Launched]) -> None:
    """Forfeit the seats of ``match`` whose launched bot is gone."""
    for seat, p in enumerate(m.order):
        gone = launched.get(p)
        if gone is not None and gone.gone:
            match.forfeit(seat, "disconnected")


def _output(handle: BotHandle) -> str:
    """Where a launched bot's stderr is, and its last line."""
    path = handle.stderr_path()
    if path is None:
        return ""
    words = handle.last_words()
    return f" (its stderr: {path}" + (f"; last line: {words})" if words else ")")


def _exited(bot: Launched, code: int, finished: int, total: int) -> str:
    return (f"its process exited with status {exit_status(code)} after {finished} of its {total} matches"
            + _output(bot.handle))  # fmt: skip
