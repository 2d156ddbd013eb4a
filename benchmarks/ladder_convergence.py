"""How fast the ladder ranks right: the real scheduler (``arena.ladder.scheduler.Scheduler``) and the real
rating code (``arena.ladder.elo.Table``, what the live ladder applies; ``arena.ladder.fit``, the whole-history
fit) against simulated populations of known strength.

A run, per game id and seed: ``--bots`` bot versions with true strengths drawn from N(1500, 400); workers
(``bots / (3 * players)``: a third of the bots play at a time; with every bot busy, as 8 workers made it at
24 bots and 3-4 players, the next match is whoever just finished, whatever the policy) play queued
matches, outcomes drawn from the Elo model for two players and from Plackett-Luce for three and four (a
seat's weight ``10^(strength / 400)``: the first place drawn in proportion to the weights, then the next
among the rest; any pair's marginal is Elo's); bots go offline (2% a round each, back with 20% a round:
about a tenth offline); from two thirds of the run on, a random bot uploads a new version now and then
(true strength its last one's plus N(+50, 150)), which replaces its old one on the ladder as in the
arena. Pace limits are off (a season measures ranking, not time).

Why a spread of 400: Kendall tau 0.9 needs the estimates' error well under the spread (for Gaussian errors
tau = (2/pi) asin(spread / sqrt(spread^2 + error^2)), so error <= 0.16 spread); a running Elo at K=24 never
gets below about 46 points (``elo.noise_floor``), so a narrower population never reaches 0.9 on the running
Elo's order whatever the pairing (at 200 it did not in 60 games a bot, by either order).

Printed per game and policy, medians over the seeds:

- games/bot to tau 0.9: games played per bot (seats / versions rated) when the running Elo leaderboard's
  order first reaches Kendall tau 0.9 against the true strengths (before new versions arrive);
- games/bot to tau 0.9 of the fit: the same for the order of the whole-history fit (checked each 2 games a
  bot);
- new version: how many of its games until its running Elo rating is first within 50 points of its true
  strength (the scale aligned by the median offset of the established versions), median over every new
  version of every seed; one not there in its first 40 games counts as never (ten times the run), one
  that arrived too late to play 40 and was not there yet is left out. ``fit``: the same for the
  whole-history fit, refitted after every second game of the version (so its figure is even). A rating
  known to +-50 points at one standard deviation takes about (173.7 / 50)^2 / 0.25 = 48 even games by the
  binomial bound, so "within" here is the first time, not for good;
- fit vs Elo: RMS error against the truth (aligned by the mean offset) of the fit and of the running Elo at
  every checkpoint (each 10 games per bot), and whether the fit was as close or closer at every one.

And per game a yardstick for the tau target (``even``: the same populations, seeds and checkpoints as the
fit's): a ladder where every seat of every match gets the most a match of that size can tell about a
rating (the Fisher information of a Plackett-Luce ranking of equal players, ``seat_information``: 0.25 in
log-odds units for two players, 0.39 for three, 0.48 for four; a game between unequal bots tells less)
and each rating is estimated as well as that allows, with errors independent between bots. It is not a
bound: pairings that make near neighbours' errors move together order those neighbours better (Halite's
k nearest did at three players), but a target far below it asks of the pairing what every estimate of a
single rating cannot give.

Policies, each driving the same ``Scheduler`` (eligibility, pace, concurrency, seats), differing only in
the choice of players:

- ``informative``: the arena's policy (``Policy.INFORMATIVE``, the default);
- ``window``: the arena's earlier policy (``Policy.WINDOW``);
- ``random``: the first player uniformly among eligible bots, opponents uniformly;
- ``halite``: Halite III's published matchmaking as read here: the first ("seed") player is, with chance
  25%, the bot that has waited longest since its last game, 65% the one with fewest games, 10% a uniform
  pick; opponents uniformly among the seed's k nearest eligible bots by current rating (k = 5, or twice the
  number of opponents if larger), other versions of the seed's bot excluded.

    .venv/bin/python benchmarks/ladder_convergence.py                   # 5 seeds, 3 games, 4 policies
    .venv/bin/python benchmarks/ladder_convergence.py --seeds 3 --games shanghaien --bots 24
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from arena import results
from arena.ladder import elo, fit
from arena.ladder.elo import BotKey, Row, Table
from arena.ladder.scheduler import BotInfo, Pairing, Policy, Scheduler, SchedulerConfig, TickPass

TAU = 0.9
WITHIN = 50.0
STAYS = 0  # more games the new version's error must stay within WITHIN (0: the first time it is)
BUSY = 3  # workers = bots / (BUSY * players): a third of the bots play at a time, the others can be chosen
SPREAD = 400.0  # SD of the true strengths (see the module doc)
WATCH = 40  # a new version's first games watched: one not within WITHIN by then counts as never (cap)
CHECK_EVERY = 10  # games per bot between fit checkpoints
FIT_EVERY = 2  # a new version's fit is checked after every second game of it (it costs a whole fit)


class UniformScheduler(Scheduler):
    """Uniform random pairing: any eligible seed, any opponents."""

    def _seeds(self, state: TickPass) -> Iterator[BotInfo]:
        eligible = [b for b in state.eligible if self._eligible(b)]
        return iter(self.rng.sample(eligible, len(eligible)))

    def _opponents(self, game_id: str, bot: BotInfo, others: list[BotInfo], need: int) -> list[BotInfo]:
        return self._distinct(self.rng.sample(others, len(others)), need)


class HaliteScheduler(Scheduler):
    """Halite III's matchmaking as read in the module doc: seed 25/65/10, opponents among its k nearest."""

    def _seeds(self, state: TickPass) -> Iterator[BotInfo]:
        eligible = [b for b in state.eligible if self._eligible(b)]
        u = self.rng.random()
        if u < 0.25:
            key: Callable[[BotInfo], Any] = lambda b: (b.last_played, self.rng.random())  # noqa: E731
        elif u < 0.90:
            key = lambda b: (b.games_played + self._scheduled(b.key), self.rng.random())  # noqa: E731
        else:
            key = lambda b: self.rng.random()  # noqa: E731
        return iter(sorted(eligible, key=key))

    def _opponents(self, game_id: str, bot: BotInfo, others: list[BotInfo], need: int) -> list[BotInfo]:
        r0 = self._row(game_id, bot).rating
        by_gap = sorted(others, key=lambda o: (abs(self._row(game_id, o).rating - r0), self.rng.random()))
        near = self._distinct(by_gap, max(5, 2 * need))
        chosen = self._distinct(self.rng.sample(near, len(near)), need)
        return chosen if len(chosen) == need else self._distinct(by_gap, need)


SHARPNESS = [SchedulerConfig.sharpness]  # --sharpness
POLICIES: dict[str, Callable[[SchedulerConfig], SchedulerConfig]] = {
    "informative": lambda c: replace(c, policy=Policy.INFORMATIVE, sharpness=SHARPNESS[0]),
    "window": lambda c: replace(c, policy=Policy.WINDOW),
    "random": lambda c: c,
    "halite": lambda c: c,
}
CLASSES: dict[str, type[Scheduler]] = {"random": UniformScheduler, "halite": HaliteScheduler}


@dataclass
class Version:
    key: BotKey
    strength: float
    arrived_games: int = 0  # total seats played when it arrived (new versions)
    errors: list[float] = field(default_factory=list)  # running Elo error after each of its games
    fit_errors: list[float] = field(default_factory=list)


@dataclass
class Sim:
    game_id: str
    players: int
    rng: random.Random
    current: dict[str, Version] = field(default_factory=dict)  # bot name -> its version on the ladder now
    versions: dict[BotKey, Version] = field(default_factory=dict)
    online: dict[str, bool] = field(default_factory=dict)
    table: Table = field(default_factory=Table)
    records: list[results.Record] = field(default_factory=list)
    queued: list[Pairing] = field(default_factory=list)
    running: list[Pairing] = field(default_factory=list)
    played: Counter[BotKey] = field(default_factory=Counter)
    last: dict[BotKey, float] = field(default_factory=dict)
    now: float = 1_000.0
    seats: int = 0

    def bots(self) -> list[BotInfo]:
        busy = Counter(n for m in self.running for n in m.bot_names)
        return [BotInfo(n, v.key[1], (self.game_id,), online=self.online[n], running=busy[n], max_concurrent=1,
                        last_played=self.last.get(v.key, 0.0), games_played=self.played[v.key])
                for n, v in self.current.items()]  # fmt: skip

    def rows(self, game_id: str) -> dict[BotKey, Row]:
        return self.table.rows.get(game_id, {})

    def add(self, name: str, strength: float) -> Version:
        old = self.current.get(name)
        key = (name, str(int(old.key[1]) + 1) if old else "1")
        v = self.current[name] = self.versions[key] = Version(key, strength, self.seats)
        self.online.setdefault(name, True)
        return v

    def play(self, p: Pairing) -> dict[str, Any]:
        """Places drawn from Plackett-Luce on the true strengths (two seats: Elo's win chance)."""
        keys = [self.current[n].key for n in p.bot_names]
        weights = [10 ** (self.versions[k].strength / 400) for k in keys]
        left = list(range(len(keys)))
        rank = [0] * len(keys)
        place = 1
        while left:
            i = self.rng.choices(left, [weights[j] for j in left])[0]
            rank[i] = place
            place += 1
            left.remove(i)
        self.now += 1.0
        seats = [{"seat": i, "bot_name": k[0], "bot_version": k[1], "rank": rank[i], "status": "active"}
                 for i, k in enumerate(keys)]  # fmt: skip
        for k in keys:
            self.played[k] += 1
            self.last[k] = self.now
        self.seats += len(keys)
        return {"match_id": p.match_id, "game_id": p.game_id, "end_reason": "completed", "rated": True,
                "finished_at": self.now, "seats": seats}  # fmt: skip


def kendall(a: Sequence[float], b: Sequence[float]) -> float:
    n = len(a)
    s = 0
    for i in range(n):
        for j in range(i + 1, n):
            s += 1 if (a[i] - a[j]) * (b[i] - b[j]) > 0 else -1 if (a[i] - a[j]) * (b[i] - b[j]) < 0 else 0
    return s / (n * (n - 1) / 2) if n > 1 else 1.0


def aligned_rms(est: dict[BotKey, float], truth: dict[BotKey, float]) -> float:
    ks = list(est)
    off = statistics.fmean(truth[k] - est[k] for k in ks)
    return math.sqrt(statistics.fmean((est[k] + off - truth[k]) ** 2 for k in ks))


@dataclass
class Outcome:
    tau_games: float | None  # games per bot to tau 0.9 (None: not reached)
    fit_tau_games: float | None
    new_elo: list[int]
    new_fit: list[int]
    fit_rms: list[float]
    elo_rms: list[float]
    fit_tau: float
    elo_tau: float


def first_within(errors: Sequence[float]) -> int | None:
    """The number of games after which the error is within WITHIN and stays so for STAYS more games."""
    for g in range(len(errors) - STAYS):
        if all(abs(e) <= WITHIN for e in errors[g : g + STAYS + 1]):
            return g + 1
    return None


def run(game_id: str, players: int, policy: str, seed: int, bots: int, games_per_bot: int) -> Outcome:
    rng = random.Random(seed)  # the population: the same for every policy
    sim = Sim(game_id, players, random.Random(seed * 7919 + 1))
    for i in range(bots):
        sim.add(f"b{i:03d}", rng.gauss(1500, SPREAD))
    workers = max(1, bots // (BUSY * players))  # with every bot busy the next match is whoever is free
    cfg = POLICIES[policy](SchedulerConfig(games=(game_id,), queue_depth=workers, max_rate=1e9, burst=10**9,
                                           games_per_hour=0))  # fmt: skip
    cls = CLASSES.get(policy, Scheduler)
    sched = cls(sim, sim.rows, sim.queued.append, cfg, rng=random.Random(seed + 17), clock=lambda: sim.now)
    events = random.Random(seed * 31 + 5)  # offline spells and new versions: the same for every policy
    matches = bots * games_per_bot // players
    arrivals = set(range(matches * 2 // 3, matches, max(1, matches // (2 * bots // 3))))
    tau_games: float | None = None
    fit_tau_games: float | None = None
    next_fit_tau = 2
    fit_rms: list[float] = []
    elo_rms: list[float] = []
    fits: dict[BotKey, fit.Fitted] = {}
    new: list[Version] = []
    next_check = CHECK_EVERY
    for m in range(matches):
        if m % bots == 0:  # a round: some go offline, some come back
            for n in sim.online:
                sim.online[n] = events.random() >= 0.02 if sim.online[n] else events.random() < 0.2
        if m in arrivals:
            name = events.choice(sorted(sim.current))
            new.append(sim.add(name, sim.current[name].strength + events.gauss(50, 150)))
        sched.tick(len(sim.queued))
        while sim.queued and len(sim.running) < workers:
            p = sim.queued.pop(0)
            sim.running.append(p)
            sched.on_started(p.match_id)
        if not sim.running:
            for n in sim.online:  # nobody can play: everyone comes back
                sim.online[n] = True
            continue
        p = sim.running.pop(sim.rng.randrange(len(sim.running)))
        result = sim.play(p)
        sim.table.apply(result)
        sim.records.append(results.record(result))
        sched.on_result(result)
        rows = sim.rows(game_id)
        truth = {k: sim.versions[k].strength for k in rows}
        versions = len(rows)
        if tau_games is None and not new and m % (bots // 4 or 1) == 0:  # every version, unplayed at 1500
            ks = list(sim.versions)
            board = [rows[k].rating if k in rows else elo.INITIAL_RATING for k in ks]
            if kendall(board, [sim.versions[k].strength for k in ks]) >= TAU:
                tau_games = sim.seats / len(ks)
        if fit_tau_games is None and not new and sim.seats / len(sim.versions) >= next_fit_tau:
            next_fit_tau += 2
            fits = ft = fit.fit_records(sim.records, warm(fits))
            ks = list(sim.versions)
            board = [ft[k].rating if k in ft else elo.INITIAL_RATING for k in ks]
            if kendall(board, [sim.versions[k].strength for k in ks]) >= TAU:
                fit_tau_games = sim.seats / len(ks)
        touched = {sim.current[n].key for n in p.bot_names}
        watched = [v for v in new if v.key in touched and len(v.errors) < WATCH]
        if any(len(v.errors) % FIT_EVERY == FIT_EVERY - 1 for v in watched) or sim.seats / versions >= next_check:
            fits = fit.fit_records(sim.records, warm(fits))
        for v in watched:
            settled = [k for k, r in rows.items() if not r.provisional and k != v.key]
            off = statistics.median(truth[k] - rows[k].rating for k in settled) if settled else 0.0
            foff = statistics.median(truth[k] - fits[k].rating for k in settled) if settled else 0.0
            v.errors.append(rows[v.key].rating + off - v.strength)
            if len(v.errors) % FIT_EVERY == 0:  # the fit is refitted every FIT_EVERY of its games (CPU)
                v.fit_errors.extend([fits[v.key].rating + foff - v.strength] * FIT_EVERY)
        if sim.seats / versions >= next_check:
            next_check += CHECK_EVERY
            fit_rms.append(aligned_rms({k: fits[k].rating for k in rows}, truth))
            elo_rms.append(aligned_rms({k: r.rating for k, r in rows.items()}, truth))
    rows = sim.rows(game_id)
    ks = list(rows)
    truth_l = [sim.versions[k].strength for k in ks]
    fits = fit.fit_records(sim.records, warm(fits))
    cap = games_per_bot * 10
    return Outcome(
        tau_games,
        fit_tau_games,
        [first_within(v.errors) or cap for v in new if first_within(v.errors) or len(v.errors) >= WATCH],
        [
            -(-(first_within(v.fit_errors) or cap) // FIT_EVERY) * FIT_EVERY
            for v in new
            if first_within(v.fit_errors) or len(v.fit_errors) >= WATCH
        ],
        fit_rms,
        elo_rms,
        kendall([fits[k].rating for k in ks], truth_l),
        kendall([rows[k].rating for k in ks], truth_l),
    )


def seat_information(players: int) -> float:
    """The Fisher information of one seat's rating (log-odds units) in a Plackett-Luce ranking of ``players``
    equal players: the seat is still unplaced when ``m`` remain with chance ``m / players``, and that
    draw's information is ``(1/m)(1 - 1/m)``. Two players: 0.25, Elo's ``p (1 - p)`` at even odds."""
    return sum((1 - 1 / m) for m in range(2, players + 1)) / players


def even(players: int, seed: int, bots: int, games_per_bot: int) -> float | None:
    """Games per bot at which the ``even`` yardstick (module doc) first reaches tau 0.9 on ``run``'s
    population of this seed, checked each ``FIT_EVERY`` games a bot as the fit is; None if not in the run.
    A rating's error after ``g`` games is the running mean of ``g`` per-game errors of variance
    ``ELO_SCALE^2 / seat_information``."""
    rng = random.Random(seed)
    truth = [rng.gauss(1500, SPREAD) for _ in range(bots)]  # run's draws: the same population
    noise = random.Random(seed * 104_729 + 3)
    scale = elo.ELO_SCALE / math.sqrt(seat_information(players))
    sums = [0.0] * bots
    for g in range(1, games_per_bot + 1):
        sums = [s + noise.gauss(0.0, 1.0) for s in sums]
        if g % FIT_EVERY == 0 and kendall([t + scale * s / g for t, s in zip(truth, sums, strict=True)], truth) >= TAU:
            return float(g)
    return None


def warm(fits: dict[BotKey, fit.Fitted]) -> dict[BotKey, float]:
    """The last fit's ratings, to start the next from (``fit.fit``'s ``start``: fewer sweeps)."""
    return {k: f.rating for k, f in fits.items()}


def med(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--bots", type=int, default=30)
    ap.add_argument("--games-per-bot", type=int, default=200, help="length of a run, in games per bot")
    ap.add_argument("--games", default="shanghaien,shangrila-3p,shangrila-4p")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--sharpness", type=float, default=SchedulerConfig.sharpness, help="the informative policy's")
    args = ap.parse_args(argv)
    SHARPNESS[0] = args.sharpness
    players = {"shanghaien": 2, "shangrila-3p": 3, "shangrila-4p": 4}
    start = time.process_time()
    summary: dict[tuple[str, str], dict[str, float]] = {}
    print(f"{args.bots} bots, {args.games_per_bot} games a bot, seeds 1..{args.seeds}; medians over seeds")
    print(f"{'game':14} {'policy':12} {'games/bot to tau 0.9':>21} {'fit':>7} {'new version: Elo':>17} {'fit':>5} "
          f"{'rms fit/Elo (end)':>18} {'fit <= Elo at every checkpoint':>31} {'end tau fit/Elo':>16}")  # fmt: skip
    for game_id in args.games.split(","):
        for policy in args.policies.split(","):
            outs = [run(game_id, players[game_id], policy, s, args.bots, args.games_per_bot)
                    for s in range(1, args.seeds + 1)]  # fmt: skip
            reached = [o.tau_games for o in outs if o.tau_games is not None]
            tau = med(reached) if len(reached) * 2 > len(outs) else float("inf")
            fit_reached = [o.fit_tau_games for o in outs if o.fit_tau_games is not None]
            fit_tau = med(fit_reached) if len(fit_reached) * 2 > len(outs) else float("inf")
            new_elo = med([g for o in outs for g in o.new_elo])  # every new version of every seed
            new_fit = med([g for o in outs for g in o.new_fit])
            every = sum(all(f <= e for f, e in zip(o.fit_rms, o.elo_rms, strict=True)) for o in outs)
            checks = sum(len(o.fit_rms) for o in outs)
            closer = sum(f <= e for o in outs for f, e in zip(o.fit_rms, o.elo_rms, strict=True))
            summary[(game_id, policy)] = {"tau": tau, "fit_tau": fit_tau, "new": new_elo, "new_fit": new_fit}
            print(f"{game_id:14} {policy:12} {tau:21.1f} {fit_tau:7.1f} {new_elo:17.0f} {new_fit:5.0f} "
                  f"{med([o.fit_rms[-1] for o in outs]):8.1f}/{med([o.elo_rms[-1] for o in outs]):<9.1f} "
                  f"{f'{every}/{len(outs)} runs, {closer}/{checks} points':>31} "
                  f"{med([o.fit_tau for o in outs]):7.3f}/{med([o.elo_tau for o in outs]):<8.3f}",
                  flush=True)  # fmt: skip
    print("targets:")
    for game_id in args.games.split(","):
        ours, halite = summary.get((game_id, "informative")), summary.get((game_id, "halite"))
        reached = [g for s in range(1, args.seeds + 1)
                   if (g := even(players[game_id], s, args.bots, args.games_per_bot)) is not None]  # fmt: skip
        yardstick = med(reached) if len(reached) * 2 > args.seeds else float("inf")
        if ours and halite:
            cut, fit_cut = 1 - ours["tau"] / halite["tau"], 1 - ours["fit_tau"] / halite["fit_tau"]
            print(
                f"  {game_id}: {cut:.0%} fewer games per bot than halite to tau 0.9 (by the fit's order "
                f"{fit_cut:.0%}) [>= 30%: at most {0.7 * halite['tau']:.1f} ({0.7 * halite['fit_tau']:.1f}); "
                f"the even yardstick {yardstick:.1f}]; new version within {WITHIN:.0f} in {ours['new']:.0f} "
                f"games (fit {ours['new_fit']:.0f}) [<= {20 if players[game_id] == 2 else 10}]"
            )
    print(f"CPU {time.process_time() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
