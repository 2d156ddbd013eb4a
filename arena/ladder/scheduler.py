"""Automated ladder scheduling: which bots play next, against whom, in which seats; pausing bots that
keep forfeiting until they pass a validation game.

The scheduler owns no transport. It reads bots through ``BotSource`` (the registry and presence),
the ladder's rows through a callable (``Ladder.rows``) and hands each match it wants played, a ``Pairing``, to an
``Enqueue`` callback; in the arena, ``LadderRunner`` queues it at ladder priority (``MatchStore.request``).

Policy, each ``tick``:

1. Keep ``queue_depth`` ladder matches waiting, at most ``max_rate`` new matches a second (a token
   bucket holding up to ``burst``).
2. The next bot is the eligible one with the fewest games (played plus scheduled), then the one idle
   longest, then chance. Eligible: enabled, online on the ladder (not a ``--no-ladder`` session), not
   paused, below its ``max_concurrent`` matches counting those it plays now and those this scheduler
   queued that have not started, and below its pace: ``games_per_hour`` ladder matches queued for the
   bot in the last hour, so that a ladder of few bots does not play them back to back all day. Its game:
   the one where its rating is least certain first (``Policy.INFORMATIVE``), else by chance.
3. Opponents (``Policy.INFORMATIVE``, the default): drawn with chances in proportion to ``information``
   (how much one game shrinks the variance of the two ratings' difference) to the power ``sharpness``,
   or with chance ``explore`` uniformly; a provisional seed meets established bots when enough are
   eligible, drawn by how even the game is (``placement``), so that a new version is placed against
   ratings that mean something, near its own. Measured with
   ``benchmarks/ladder_convergence.py`` (docs/ladder.md). ``Policy.WINDOW``, the earlier one: drawn at
   random among eligible bots whose rating is within a window of its own: ``window`` points, doubled
   while a coin (``widen_p``) says so, up to ``max_window``; too few inside the window: the nearest
   ones. Other versions of the same bot are never opponents.
4. Seats: the seating (of all permutations, at most 24) that puts participants where they have sat
   least often in this game (least sum of squared counts; ties by chance), so nobody keeps the first
   seat and every bot's seats even out over time. The counts live in memory: a restart starts them
   anew, which only delays the evening out.

Pausing: a bot version that forfeits ``forfeit_limit`` matches in a row (aborted matches do not
count) is paused with a reason its owner can read (``paused``). When it reconnects (``on_reconnect``,
called by the presence wiring) it gets one unrated validation match against the ``random`` reference
bot; played to the end without forfeiting, it is back on the ladder, otherwise paused again with the
validation's outcome as the reason. Pause records live in Redis (``keys.ladder_pauses()``) when a
client is given, so a restarted scheduler keeps them.
"""

from __future__ import annotations

import heapq
import itertools
import json
import random
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Final, Protocol

import redis

import referee.games
from arena import keys, results
from arena.ladder import elo
from arena.ladder.elo import BotKey
from arena.ladder.values import DEFAULT_MAX_RATE, DEFAULT_QUEUE_DEPTH
from referee.wire.values import EndReason


@dataclass(frozen=True)
class BotInfo:
    """What the scheduler needs to know of one registered bot version."""

    name: str
    version: str
    games: tuple[str, ...]  # game ids it plays
    online: bool = True
    enabled: bool = True
    running: int = 0  # matches it is playing now, of any kind
    max_concurrent: int = 1
    last_played: float = 0.0
    games_played: int = 0
    ladder: bool = True  # False: its session asked to stay off the ladder (it still plays requested matches)

    @property
    def key(self) -> BotKey:
        return (self.name, self.version)


class BotSource(Protocol):
    def bots(self) -> Sequence[BotInfo]: ...


Ratings = Callable[[str], Mapping[BotKey, elo.Row]]
"""game id -> the ladder's row per bot version (``Ladder.rows``): rating, games and Fisher information. A
version missing has not played this game: it starts from its name's latest row's rating, or
``elo.INITIAL_RATING``."""


@dataclass(frozen=True, slots=True)
class Pairing:
    """A match the scheduler wants played: who sits where. The arena queues it (``MatchStore.request``)."""

    match_id: str
    game_id: str
    bot_names: tuple[str, ...]  # by seat
    rated: bool


Enqueue = Callable[[Pairing], None]
"""Queue the pairing; raises if the match could not be queued."""

LADDER_PREFIX: Final = "ladder-"
"""Every ladder match id starts so (``_record``): how a restarted scheduler finds a bot's recent ones."""
PACE_WINDOW_S: Final = 3600.0
DEFAULT_GAMES_PER_HOUR: Final = 60
"""One rated game a minute per bot: a new version leaves its provisional 15 games in a quarter of an
hour, while four bots make at most 120 two-player matches an hour (about 2 MB of transcripts) instead
of thousands."""


class Policy(StrEnum):
    INFORMATIVE = "informative"  # opponents where the result is most uncertain and informative (the default)
    WINDOW = "window"  # the earlier policy: random opponents in a rating window that now and then widens


@dataclass(frozen=True)
class SchedulerConfig:
    games: tuple[str, ...] = referee.games.GAME_IDS
    queue_depth: int = DEFAULT_QUEUE_DEPTH  # ladder matches kept waiting for a worker
    max_rate: float = DEFAULT_MAX_RATE  # new matches per second at most
    burst: int = DEFAULT_QUEUE_DEPTH
    window: float = 100.0  # rating window for opponents before widening
    widen_p: float = 0.5  # chance of doubling the window (again)
    max_window: float = 1600.0
    forfeit_limit: int = 3  # forfeits in a row that pause a bot
    reference_bot: str = "random"
    games_per_hour: int = DEFAULT_GAMES_PER_HOUR  # ladder matches queued per bot name and hour (0: no limit)
    policy: Policy = Policy.INFORMATIVE
    explore: float = 0.1  # informative: chance of opponents drawn uniformly (keeps every part of the ladder met)
    sharpness: float = 2.0  # informative: opponents drawn with chances in proportion to information ** sharpness
    placement: float = 4.0  # informative: a provisional seed's opponents by (p (1 - p)) ** placement (even games)
    candidates: int = 256  # opponents weighed for a pairing at most: a random sample of the eligible beyond this


class PauseState(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"  # waiting for the bot to reconnect
    VALIDATING = "validating"  # a validation match is queued or running


@dataclass
class BotRecord:
    """Forfeit streak and pause state of one bot version (stored as JSON)."""

    state: PauseState = PauseState.ACTIVE
    streak: int = 0
    reason: str = ""
    since: float = 0.0
    validation_match: str = ""


@dataclass
class TickPass:
    """One tick's working set: the bots eligible at its start and the heap of seeds (``Scheduler.next_match``)."""

    eligible: list[BotInfo]
    heap: list[tuple[tuple[int, float], float, int, BotInfo]] = field(default_factory=list)
    count: int = 0  # pushes so far: the heap's last tie-break, so that bots are never compared


@dataclass
class _Scheduled:
    pairing: Pairing
    bots: list[BotKey]
    started: bool = False


@dataclass
class Scheduler:
    source: BotSource
    ratings: Ratings
    enqueue: Enqueue
    config: SchedulerConfig = field(default_factory=SchedulerConfig)
    rng: random.Random = field(default_factory=random.Random)
    clock: Callable[[], float] = time.time
    store: redis.Redis | None = None

    def __post_init__(self) -> None:
        self.outstanding: dict[str, _Scheduled] = {}
        self.seat_counts: dict[tuple[str, BotKey], list[int]] = {}
        self.records: dict[BotKey, BotRecord] = {}
        self._tokens = float(self.config.burst)
        self._refilled = self.clock()
        self._queued_at: dict[str, deque[float]] = {}  # bot name -> when its ladder matches were queued
        self._tick_rows: dict[str, Mapping[BotKey, elo.Row]] | None = None
        self._tick_latest: dict[str, Mapping[str, elo.Row]] | None = None
        self._pass: TickPass | None = None  # within ``tick``
        # per bot version, of ``outstanding``: matches (``_scheduled``) and those not started (``_load``)
        self._outstanding: dict[BotKey, int] = {}
        self._unstarted: dict[BotKey, int] = {}
        if self.store is not None:
            for k, v in self.store.hgetall(keys.ladder_pauses()).items():
                d = json.loads(v)
                self.records[_key(k)] = BotRecord(PauseState(d["state"]), d["streak"], d["reason"], d["since"],
                                                  d["validation_match"])  # fmt: skip

    # ------------------------------------------------------------------------------ scheduling

    def tick(self, queue_depth: int, bots: Sequence[BotInfo] | None = None, limit: int | None = None) -> list[Pairing]:
        """Queue ladder matches until ``queue_depth`` (waiting now) reaches the target, the rate allows no
        more or ``limit`` are queued; returns the pairings queued. ``bots``: the source's bots, if the
        caller read them already."""
        now = self.clock()
        self._tokens = min(float(self.config.burst), self._tokens + (now - self._refilled) * self.config.max_rate)
        self._refilled = now
        out: list[Pairing] = []
        bots = list(self.source.bots() if bots is None else bots)
        self._read_pace([b.name for b in bots])
        self._tick_rows, self._tick_latest = {}, {}  # read once a tick (results move them, not our pairings)
        self._pass = self._new_pass(bots)
        try:
            while queue_depth + len(out) < self.config.queue_depth and self._tokens >= 1.0:
                if limit is not None and len(out) >= limit:
                    break
                pairing = self.next_match(bots)
                if pairing is None:
                    break
                self.enqueue(pairing)
                self._tokens -= 1.0
                out.append(pairing)
        finally:
            self._tick_rows = self._tick_latest = None
            self._pass = None
        return out

    def next_match(self, bots: Sequence[BotInfo]) -> Pairing | None:
        """Choose and record the next ladder match (the caller queues it); None if nobody can play.

        The seeds come off a heap kept for the whole tick and the opponents are weighed among at most
        ``candidates`` eligible bots, so a pairing costs O(candidates + log n), not a sort and several
        passes over every online bot (75 ms a pairing with 10,000 online: 13 matches a second)."""
        state = self._pass if self._pass is not None else self._new_pass(bots)
        for bot in self._seeds(state):
            for game_id in self._games_of(bot):
                need = referee.games.get(game_id).num_players - 1
                others = self._candidates(state, game_id, bot, need)
                if len(others) < need:
                    continue
                opponents = self._opponents(game_id, bot, others, need)
                pairing = self._record(game_id, [bot, *opponents])
                self._push(state, bot)
                return pairing
        return None

    def _seeds(self, state: TickPass) -> Iterator[BotInfo]:
        """The eligible bots in the order tried as the match's first player (``_seed_key``), off the pass's
        heap: a bot tried and not paired stays out of the pass, one paired is pushed back by ``next_match``."""
        while state.heap:
            key, _, _, bot = heapq.heappop(state.heap)
            if not self._eligible(bot):  # within a pass bots only get busier: it stays out of this one
                continue
            if self._seed_key(bot) != key:  # it was seated since it was pushed: back in at its place
                self._push(state, bot)
                continue
            yield bot

    def _new_pass(self, bots: Sequence[BotInfo]) -> TickPass:
        eligible = [b for b in bots if self._eligible(b)]
        state = TickPass(eligible)
        for b in eligible:
            self._push(state, b)
        return state

    def _seed_key(self, b: BotInfo) -> tuple[int, float]:
        """The order in which eligible bots are tried as the match's first player: fewest games (played and
        scheduled) first, so nobody starves and new versions come first; then idle longest (then chance)."""
        return (b.games_played + self._scheduled(b.key), b.last_played)

    def _push(self, state: TickPass, b: BotInfo) -> None:
        state.count += 1
        heapq.heappush(state.heap, (self._seed_key(b), self.rng.random(), state.count, b))

    def _candidates(self, state: TickPass, game_id: str, bot: BotInfo, need: int) -> list[BotInfo]:
        """Eligible opponents for ``bot`` in ``game_id``: all of them, or a random sample of about
        ``candidates`` when there are more (every part of the ladder is still met, by chance); the whole
        pool is scanned only when the sample holds too few."""
        pool = state.eligible
        limit = self.config.candidates
        if len(pool) > limit > 0:
            sample = self.rng.sample(pool, limit)
            found = [o for o in sample if o.name != bot.name and game_id in o.games and self._eligible(o)]
            if len({o.name for o in found}) >= need:
                return found
        return [o for o in pool if o.name != bot.name and game_id in o.games and self._eligible(o)]

    def _games_of(self, bot: BotInfo) -> list[str]:
        """The seed's games in the order tried: informative, the one where its rating is least certain first."""
        games = [g for g in bot.games if g in self.config.games and g in referee.games.GAMES]
        self.rng.shuffle(games)
        if self.config.policy == Policy.INFORMATIVE:
            games.sort(key=lambda g: -self._row(g, bot).sd)
        return games

    def _rows(self, game_id: str) -> Mapping[BotKey, elo.Row]:
        if self._tick_rows is None:
            return self.ratings(game_id)
        rows = self._tick_rows.get(game_id)
        if rows is None:
            rows = self._tick_rows[game_id] = self.ratings(game_id)
        return rows

    def _row(self, game_id: str, bot: BotInfo) -> elo.Row:
        """The bot version's row, or the one it would start with: its name's most recently played version's
        rating (a new version starts there, ``elo.new_row``), provisional."""
        row = self._rows(game_id).get(bot.key)
        return row if row is not None else elo.new_row(bot.name, bot.version, self._latest(game_id).get(bot.name))

    def _latest(self, game_id: str) -> Mapping[str, elo.Row]:
        """Each bot name's most recently played row (once a tick: new versions look their names up here)."""
        cached = None if self._tick_latest is None else self._tick_latest.get(game_id)
        if cached is not None:
            return cached
        latest: dict[str, elo.Row] = {}
        for r in self._rows(game_id).values():
            if r.name not in latest or r.last_played > latest[r.name].last_played:
                latest[r.name] = r
        if self._tick_latest is not None:
            self._tick_latest[game_id] = latest
        return latest

    def _opponents(self, game_id: str, bot: BotInfo, others: list[BotInfo], need: int) -> list[BotInfo]:
        if self.config.policy == Policy.INFORMATIVE:
            return self._informative(game_id, bot, others, need)
        rows = {b.key: self._row(game_id, b) for b in (bot, *others)}
        r0 = rows[bot.key].rating
        window = self.config.window
        while window < self.config.max_window and self.rng.random() < self.config.widen_p:
            window *= 2
        distance = {o.key: abs(rows[o.key].rating - r0) for o in others}
        inside = [o for o in others if distance[o.key] <= window]
        if len(inside) < need:
            inside = sorted(others, key=lambda o: (distance[o.key], self.rng.random()))[:need]
        chosen = self._distinct(self.rng.sample(inside, len(inside)), need)
        return chosen if len(chosen) == need else sorted(others, key=lambda o: distance[o.key])[:need]

    def _informative(self, game_id: str, bot: BotInfo, others: list[BotInfo], need: int) -> list[BotInfo]:
        """Opponents whose results with the seed teach the ladder most (``information``), drawn with chances in
        proportion to its power ``sharpness`` (2: mostly the most informative few, now and then another). With
        chance ``explore`` the opponents are drawn uniformly instead.

        A provisional seed is placed instead when enough established bots (out of their provisional games) are
        eligible: it meets them, so that its rating is placed against ratings that mean something, drawn by
        how even the game is, ``(p (1 - p)) ** placement``. Why not by ``information``: while the seed's rating is
        that uncertain, a game shrinks its variance by nearly the same whoever it meets, so the draw was nearly
        uniform, and a lopsided result barely moves a rating: at four players half the new versions were not
        within 50 points of their strength after 40 matches (``benchmarks/ladder_convergence.py``, 16 seeds;
        placed by evenness, 10 matches)."""
        rows = {b.key: self._row(game_id, b) for b in (bot, *others)}
        seed = rows[bot.key]
        if seed.provisional:
            established = [o for o in others if not rows[o.key].provisional]
            if len({o.name for o in established}) >= need:  # at a ladder's start nobody is: by information
                return self._placement(bot, seed, established, rows, need)
        if self.rng.random() < self.config.explore:
            drawn = self._distinct(self.rng.sample(others, len(others)), need)
            return drawn if len(drawn) == need else self._distinct(others, need)

        def weigh(o: BotInfo, chosen: list[BotInfo]) -> float:
            seated = [seed, *(rows[c.key] for c in chosen)]
            return float(sum(information(s, rows[o.key]) for s in seated) ** self.config.sharpness)

        return self._draw(bot, others, need, weigh)

    def _placement(
        self, bot: BotInfo, seed: elo.Row, pool: list[BotInfo], rows: Mapping[BotKey, elo.Row], need: int
    ) -> list[BotInfo]:
        """A provisional seed's opponents (``_informative``) from the established ``pool`` (of at least
        ``need`` names), each drawn with chance in proportion to ``(p (1 - p)) ** placement`` at the seed's
        rating."""

        def weigh(o: BotInfo, chosen: list[BotInfo]) -> float:
            p = elo.expected(seed.rating, rows[o.key].rating)
            return float((p * (1.0 - p)) ** self.config.placement)

        return self._draw(bot, pool, need, weigh)

    def _draw(
        self, bot: BotInfo, pool: list[BotInfo], need: int, weigh: Callable[[BotInfo, list[BotInfo]], float]
    ) -> list[BotInfo]:
        """``need`` opponents of ``bot`` from ``pool``, one at a time, each with chance in proportion to
        ``weigh(candidate, chosen so far)`` among the names not seated yet (uniformly if every weight is 0);
        fewer when the pool runs out of names."""
        chosen: list[BotInfo] = []
        while len(chosen) < need:
            names = {bot.name, *(c.name for c in chosen)}
            candidates = [o for o in pool if o.name not in names]
            if not candidates:
                break
            weights = [weigh(o, chosen) for o in candidates]
            pick = self.rng.choices(candidates, weights)[0] if sum(weights) > 0 else self.rng.choice(candidates)
            chosen.append(pick)
        return chosen

    @staticmethod
    def _distinct(candidates: Sequence[BotInfo], need: int) -> list[BotInfo]:
        """The first ``need`` candidates of different bot names."""
        chosen: list[BotInfo] = []
        for o in candidates:
            if len(chosen) == need:
                break
            if all(o.name != c.name for c in chosen):
                chosen.append(o)
        return chosen

    def _eligible(self, b: BotInfo) -> bool:
        rec = self.records.get(b.key)
        paused = rec is not None and rec.state != PauseState.ACTIVE
        return (b.enabled and b.online and b.ladder and not paused and self._load(b) < b.max_concurrent
                and self._under_pace(b.name))  # fmt: skip

    def _under_pace(self, name: str) -> bool:
        return self.config.games_per_hour <= 0 or len(self._recent(name)) < self.config.games_per_hour

    def _recent(self, name: str) -> deque[float]:
        """When the bot's ladder matches of the last hour were queued. Read from Redis (the bot's match
        index) the first time, so that a restarted scheduler keeps the pace rather than starting anew."""
        cutoff = self.clock() - PACE_WINDOW_S
        times = self._queued_at.get(name)
        if times is None:
            times = self._queued_at[name] = deque()
            if self.store is not None:
                reply: Any = self.store.zrangebyscore(keys.matches_by_bot(name), f"({cutoff}", "+inf", withscores=True)
                times.extend(float(s) for m, s in reply if keys.text(m).startswith(LADDER_PREFIX))
        while times and times[0] <= cutoff:
            times.popleft()
        return times

    def _read_pace(self, names: Sequence[str]) -> None:
        """``_recent``'s first read for every bot not read yet, pipelined: a restarted scheduler meeting
        10,000 online bots makes a few round trips, not 10,000."""
        new = sorted({n for n in names if n not in self._queued_at})
        if self.store is None or not new:
            return
        cutoff = self.clock() - PACE_WINDOW_S
        for i in range(0, len(new), 1000):
            pipe = self.store.pipeline(transaction=False)
            for name in new[i : i + 1000]:
                pipe.zrangebyscore(keys.matches_by_bot(name), f"({cutoff}", "+inf", withscores=True)
            for name, reply in zip(new[i : i + 1000], pipe.execute(), strict=True):
                self._queued_at[name] = deque(float(s) for m, s in reply if keys.text(m).startswith(LADDER_PREFIX))

    def _scheduled(self, key: BotKey) -> int:
        return self._outstanding.get(key, 0)

    def _load(self, b: BotInfo) -> int:
        """Matches it plays now plus those queued by us that have not started (counted once)."""
        return b.running + self._unstarted.get(b.key, 0)

    def _count(self, s: _Scheduled, outstanding: int, unstarted: int) -> None:
        """Keep the per-bot counts of ``outstanding`` as a match enters, starts or leaves it."""
        for key in set(s.bots):
            for counts, d in ((self._outstanding, outstanding), (self._unstarted, unstarted)):
                n = counts.get(key, 0) + d
                if n > 0:
                    counts[key] = n
                else:
                    counts.pop(key, None)

    def _record(self, game_id: str, players: list[BotInfo]) -> Pairing:
        counts = [self._seat_count(game_id, b.key) for b in players]
        orders = list(itertools.permutations(range(len(players))))  # at most 24
        self.rng.shuffle(orders)  # ties go to chance
        best = min(orders, key=lambda order: sum(counts[p][seat] ** 2 for seat, p in enumerate(order)))
        seats = [players[p] for p in best]
        for seat, b in enumerate(seats):
            self._seat_count(game_id, b.key)[seat] += 1
        now = self.clock()
        for name in {b.name for b in seats}:
            self._recent(name).append(now)
        match_id = f"{LADDER_PREFIX}{game_id}-{int(now * 1000)}-{self.rng.getrandbits(48):012x}"
        pairing = Pairing(match_id, game_id, tuple(b.name for b in seats), rated=True)
        self.outstanding[match_id] = _Scheduled(pairing, [b.key for b in seats])
        self._count(self.outstanding[match_id], 1, 1)
        return pairing

    def _seat_count(self, game_id: str, key: BotKey) -> list[int]:
        return self.seat_counts.setdefault((game_id, key), [0] * referee.games.get(game_id).num_players)

    # ------------------------------------------------------------------------------ events

    def on_started(self, match_id: str) -> None:
        """A queued ladder match started (optional: without it, running ones count twice against the limit)."""
        s = self.outstanding.get(match_id)
        if s is not None and not s.started:
            s.started = True
            self._count(s, 0, -1)

    def on_result(self, result: Mapping[str, Any]) -> None:
        """Every finished match (ladder or not): frees capacity, counts forfeit streaks, ends validations."""
        match_id = str(result["match_id"])
        done = self.outstanding.pop(match_id, None)
        if done is not None:
            self._count(done, -1, 0 if done.started else -1)
        if result.get("end_reason") == EndReason.ABORTED:
            return
        now = float(result.get("finished_at") or self.clock())
        for seat in result["seats"]:
            key = results.seat_key(seat)
            rec = self.records.setdefault(key, BotRecord())
            was = (rec.state, rec.streak)
            forfeited = results.forfeited(seat)
            if rec.state == PauseState.VALIDATING and rec.validation_match == match_id:
                if forfeited or result.get("end_reason") != EndReason.COMPLETED:
                    self._pause(key, rec, now, f"validation match {match_id} failed ({result.get('end_reason')}, "
                                f"{seat.get('strikes', 0)} strikes): reconnect to try again")  # fmt: skip
                else:
                    rec.state, rec.streak, rec.reason, rec.validation_match = PauseState.ACTIVE, 0, "", ""
                self._save(key, rec)
                continue
            rec.streak = rec.streak + 1 if forfeited else 0
            if rec.state == PauseState.ACTIVE and rec.streak >= self.config.forfeit_limit:
                self._pause(key, rec, now, f"forfeited {rec.streak} matches in a row (last {match_id}): reconnect "
                            f"and pass a validation game against {self.config.reference_bot}")  # fmt: skip
            if (rec.state, rec.streak) != was:
                self._save(key, rec)

    def _pause(self, key: BotKey, rec: BotRecord, now: float, reason: str) -> None:
        rec.state, rec.reason, rec.since, rec.validation_match = PauseState.PAUSED, reason, now, ""

    def on_reconnect(self, bot: BotInfo) -> Pairing | None:
        """A paused bot came back: queue its validation match; returns it (None if not paused)."""
        rec = self.records.get(bot.key)
        if rec is None or rec.state != PauseState.PAUSED:
            return None
        pairing = self.validation_match(bot)
        self.enqueue(pairing)
        rec.state, rec.validation_match = PauseState.VALIDATING, pairing.match_id
        self._save(bot.key, rec)
        return pairing

    def validation_match(self, bot: BotInfo) -> Pairing:
        """An unrated match of the bot against copies of the reference bot, in its smallest game."""
        known = [g for g in bot.games if g in referee.games.GAMES] or list(referee.games.GAME_IDS)
        game_id = min(known, key=lambda g: referee.games.get(g).num_players)
        names = [self.config.reference_bot] * referee.games.get(game_id).num_players
        names[self.rng.randrange(len(names))] = bot.name
        match_id = f"validate-{bot.name}-{int(self.clock() * 1000)}-{self.rng.getrandbits(32):08x}"
        return Pairing(match_id, game_id, tuple(names), rated=False)

    def paused(self, key: BotKey) -> str | None:
        """Why the bot version is off the ladder, or None if it is on it."""
        rec = self.records.get(key)
        if rec is None or rec.state == PauseState.ACTIVE:
            return None
        if rec.state == PauseState.VALIDATING:
            return f"{rec.reason} (validation match {rec.validation_match} queued)"
        return rec.reason

    def _save(self, key: BotKey, rec: BotRecord) -> None:
        if self.store is not None:
            self.store.hset(keys.ladder_pauses(), _member(key), json.dumps(asdict(rec)))


def information(a: elo.Row, b: elo.Row) -> float:
    """What one game between ``a`` and ``b`` is worth to the ladder, in squared rating points: how much it
    shrinks the variance ``V`` of their rating difference, a Gaussian update with the game's Fisher
    information ``I = p (1 - p)`` at the expected score ``p``: ``V^2 I / (1 + V I)``. Close ratings (``p``
    near 1/2) and uncertain ones (large ``V``) are worth most; a wide gap still counts, which keeps distant
    parts of the ladder meeting (a criterion that also weighed how likely the pair's order is wrong paired
    near neighbours only, and the ladder converged slower: docs/ladder.md)."""
    v = a.sd * a.sd + b.sd * b.sd
    p = elo.expected(a.rating, b.rating)
    i = p * (1.0 - p) / (elo.ELO_SCALE * elo.ELO_SCALE)
    return v * v * i / (1.0 + v * i)


def _member(key: BotKey) -> str:
    return json.dumps(list(key), separators=(",", ":"))


def _key(value: bytes | str) -> BotKey:
    name, version = json.loads(value)
    return (str(name), str(version))
