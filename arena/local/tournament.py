"""Local tournaments: every pairing (or table) of a set of bots through one loopback referee, the cross
table of their pairwise results, and Elo ratings fitted to them. Planning and scoring are pure
functions; ``tournament`` plays the plan with ``arena.local.play.run_matches``.

Tables (``round-robin``, ``gauntlet``) and seats are ``arena.events.formats``'s, the scores and the Elo
fit ``arena.events.rating``'s: what the arena's events use. Every table plays the same seeds ``SEED:0``,
``SEED:1``, ..., each once in every rotation of its seats, so ``games`` per table is rounded up to a
multiple of ``n``. Match ``SEED-tTT-JJJJ-R`` is table ``TT``, seed ``J``, rotation ``R``. The cross
table counts the pairwise games unweighted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from arena.events import formats
from arena.events.formats import games_per_table
from arena.events.rating import PairGame, fit_elo, pair_games
from arena.ladder.elo import places
from arena.local.launch import file_labels
from arena.local.play import MatchPlan, Player, PlayReport, run_matches
from referee import games as engines
from referee.games import TimeControl
from referee.wire.values import EndReason, MatchResult

__all__ = ["FORMATS", "PairGame", "TournamentReport", "fit_elo", "games_per_table", "labels", "plan", "tables",
           "tournament"]  # fmt: skip

Format = Literal["round-robin", "gauntlet"]
FORMATS: Final[tuple[Format, ...]] = ("round-robin", "gauntlet")


def tables(bots: int, seats: int, fmt: Format) -> list[tuple[int, ...]]:
    """The tables of a tournament of ``bots`` bots (indices) for a game of ``seats`` seats
    (``arena.events.formats.tables``). ValueError when there are too few bots to fill one table."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    return formats.tables(bots, seats, fmt)


def plan(table_list: Sequence[tuple[int, ...]], games: int, seed: str) -> list[MatchPlan]:
    """Every table's matches, seed by seed (so a run cut short has played every table about as much):
    seed ``SEED:j`` in every rotation of the table's seats (``arena.events.formats.table_orders``)."""
    per_table = [formats.table_orders(table, games) for table in table_list]
    out = []
    for k in range(len(per_table[0]) if per_table else 0):
        for t, orders in enumerate(per_table):
            j, r, order = orders[k]
            out.append(MatchPlan(f"{seed}-t{t:02d}-{j:04d}-{r}", order, f"{seed}:{j}"))
    return out


@dataclass
class TournamentReport:
    """What a tournament played: the bots, its tables and the run (results, transcripts, troubles)."""

    players: list[Player]
    format: Format
    tables: list[tuple[int, ...]]
    games_per_table: int
    seed: str
    run: PlayReport
    pairs: list[PairGame] = field(default_factory=list)

    def __post_init__(self) -> None:
        index = {p.label: i for i, p in enumerate(self.players)}
        self.pairs = [g for r in self.run.results for g in pair_games(r, index)]

    def problems(self) -> list[str]:
        return self.run.problems()

    def standings(self) -> list[dict[str, Any]]:
        """One row per bot, best Elo first: matches, wins/draws/losses (sole first place, shared first,
        other), pairwise points and games, score (points / games, None before any), Elo and its 95% bar."""
        ratings, errors = fit_elo(len(self.players), self.pairs)
        rows: list[dict[str, Any]] = []
        for i, p in enumerate(self.players):
            points = sum(g.score if g.a == i else 1.0 - g.score for g in self.pairs if i in (g.a, g.b))
            count = sum(1 for g in self.pairs if i in (g.a, g.b))
            wins = draws = losses = matches = 0
            for r in self.run.results:
                seat = next((k for k, s in enumerate(r.seats) if s.bot_name == p.label), None)
                if seat is None or r.end_reason is EndReason.ABORTED:
                    continue
                matches += 1
                place = places([{"rank": s.rank, "status": s.status} for s in r.seats])
                first = place[seat] == min(place)
                shared = place.count(place[seat]) > 1
                wins += first and not shared
                draws += first and shared
                losses += not first
            rows.append({
                "player": p.label, "bot": p.spec, "games": matches, "wins": wins, "draws": draws, "losses": losses,
                "points": points, "pair_games": count, "score": points / count if count else None,
                "elo": ratings[i], "elo_error": errors[i],
            })  # fmt: skip
        rows.sort(key=lambda row: (-row["elo"], row["player"]))
        return [{"rank": rank, **row} for rank, row in enumerate(rows, 1)]

    def cross_table(self) -> list[dict[str, Any]]:
        """For every ordered pair of bots (``player``, ``opponent``): the player's pairwise points, the
        pairwise games and the score (None when they never met)."""
        out: list[dict[str, Any]] = []
        for i, p in enumerate(self.players):
            for j, q in enumerate(self.players):
                if i == j:
                    continue
                mine = [g.score if g.a == i else 1.0 - g.score for g in self.pairs if {g.a, g.b} == {i, j}]
                out.append({"player": p.label, "opponent": q.label, "points": sum(mine), "games": len(mine),
                            "score": sum(mine) / len(mine) if mine else None})  # fmt: skip
        return out


def labels(specs: Sequence[str]) -> list[str]:
    """A label per bot: the class or reference name (a command's file name, an external bot's NAME:
    ``arena.local.launch.spec_label``; with its file when two files have a class of one name:
    ``file_labels``), with ``#k`` (its position) when two would clash."""
    bases = file_labels(specs)
    return [b if bases.count(b) == 1 else f"{b}#{k}" for k, b in enumerate(bases)]


async def tournament(
    game_id: str,
    players: list[Player],
    *,
    fmt: Format,
    games: int,
    seed: str,
    concurrency: int,
    out_dir: Path,
    time_control: TimeControl | None = None,
    on_result: Callable[[MatchResult], None] | None = None,
    check: bool = True,
    listen: str = "127.0.0.1:0",
    wait_s: float = 600.0,
    say: Callable[[str], None] | None = None,
) -> TournamentReport:
    """Play a tournament (module doc); ``games`` per table, rounded up to whole rotations of the seats.
    ``listen``, ``wait_s``, ``say``: as ``run_matches``'s (bots in other languages)."""
    seats = engines.get(game_id).num_players
    table_list = tables(len(players), seats, fmt)
    matches = plan(table_list, games, seed)
    run = await run_matches(game_id, players, matches, concurrency=concurrency, out_dir=out_dir,
                            time_control=time_control, on_result=on_result, check=check, listen=listen,
                            wait_s=wait_s, say=say)  # fmt: skip
    return TournamentReport(players, fmt, table_list, games_per_table(games, seats), seed, run)
