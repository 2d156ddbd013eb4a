"""An event's standings, computed from its slots and the results of their matches, and nothing else (so a
recomputation from the stored transcripts gives the same table): the cross table, points, the
whole-event rating fit with error bars (``arena.events.rating``), the likelihood that each place is above
the next, and the games still to play. ``to_csv`` writes the rows for a spreadsheet.

Scores are pairwise (``arena.events.rating``): a match of ``n`` seats is ``n - 1`` pairwise games to each
seat, worth 1 ahead, 0.5 level, 0 behind. ``points`` and the cross table count them unweighted; the fit
weighs each by ``1 / (n - 1)``. A forfeited slot (bots absent past the grace) gives its present bots the
pairwise games against its absent ones (present ahead, absent level among themselves) in points and the
cross table, never in the fit: a game not played says nothing of strength. A slot where every bot was
absent counts for nobody.

Places go by points (every entrant of a round robin has as many pairwise games), then by the fit; the
likelihood that a place is above the next (``los_next``) is the fit's for those two bots, so a place taken on
points by luck shows as a LOS near (or under) 50 %.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any, Final

from arena.events.model import Event, Slot, SlotState, slot_order
from arena.events.rating import PairGame, fit, pair_games, seat_pairs
from referee.wire.values import MatchResult

CSV_COLUMNS: Final = ("rank", "name", "version", "points", "pair_games", "score", "matches", "forfeits",
                      "elo", "elo_error", "los_next")  # fmt: skip


def forfeit_pairs(slot: Slot, index: Mapping[str, int]) -> list[PairGame]:
    """The pairwise games a forfeited slot gives (the module doc)."""
    if len(set(slot.absent)) >= len(slot.bots):
        return []
    place = [1 if name in slot.absent else 0 for name in slot.bots]
    return seat_pairs([index[name] for name in slot.bots], place)


def remaining(event: Event, slots: Sequence[Slot]) -> int:
    """Matches still to play: open slots, and a Swiss event's rounds not planned yet at this round's size."""
    left = sum(1 for s in slots if s.open)
    if event.format == "swiss":
        rounds_planned = len({s.round for s in slots})
        per_round = max((sum(1 for s in slots if s.round == r) for r in range(rounds_planned)), default=0)
        left += max(event.rounds - rounds_planned, 0) * per_round
    return left


def standings(event: Event, slots: Sequence[Slot], results: Mapping[str, MatchResult]) -> dict[str, Any]:
    """The standings (module doc): ``rows`` best first, ``cross_table`` (every ordered pair of entrants),
    ``matches_played``, ``matches_forfeited``, ``remaining``. ``results``: slot key -> the result of its
    match, for the slots that are done."""
    index = event.index()
    n = len(event.entrants)
    slots = slot_order(slots)  # one order whatever the caller's: the same sums, to the last bit
    played: list[PairGame] = []
    forfeits: list[PairGame] = []
    matches = [0] * n
    forfeited = [0] * n
    done = 0
    for slot in slots:
        if slot.state is SlotState.DONE and slot.key in results:
            played += pair_games(results[slot.key], index)
            done += 1
            for name in slot.bots:
                matches[index[name]] += 1
        elif slot.state is SlotState.FORFEITED:
            forfeits += forfeit_pairs(slot, index)
            for name in set(slot.absent):
                forfeited[index[name]] += 1
    counted = played + forfeits
    f = fit(n, played)
    points = [0.0] * n
    games = [0] * n
    cross = [[(0.0, 0)] * n for _ in range(n)]
    for g in counted:
        for me, other, score in ((g.a, g.b, g.score), (g.b, g.a, 1.0 - g.score)):
            points[me] += score
            games[me] += 1
            p, k = cross[me][other]
            cross[me][other] = (p + score, k + 1)
    order = sorted(range(n), key=lambda i: (-points[i], -f.ratings[i], event.entrants[i].name))
    rows: list[dict[str, Any]] = []
    for rank, i in enumerate(order, 1):
        nxt = order[rank] if rank < n else None
        rows.append({
            "rank": rank, "name": event.entrants[i].name, "version": event.entrants[i].version,
            "points": points[i], "pair_games": games[i], "score": points[i] / games[i] if games[i] else None,
            "matches": matches[i], "forfeits": forfeited[i], "elo": f.ratings[i], "elo_error": f.errors[i],
            "los_next": None if nxt is None else f.los(i, nxt),
        })  # fmt: skip
    cross_table = [
        {"player": event.entrants[i].name, "opponent": event.entrants[j].name, "points": cross[i][j][0],
         "games": cross[i][j][1], "score": cross[i][j][0] / cross[i][j][1] if cross[i][j][1] else None}
        for i in range(n) for j in range(n) if i != j
    ]  # fmt: skip
    return {
        "rows": rows,
        "cross_table": cross_table,
        "matches_played": done,
        "matches_forfeited": sum(1 for s in slots if s.state is SlotState.FORFEITED),
        "remaining": remaining(event, slots),
    }


def to_csv(table: Mapping[str, Any]) -> str:
    """The standings' rows as CSV (``CSV_COLUMNS``; empty cells for None)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in table["rows"]:
        writer.writerow(["" if row[c] is None else row[c] for c in CSV_COLUMNS])
    return out.getvalue()
