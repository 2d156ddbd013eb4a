"""Who meets whom in a competition, and in which seats: shared by events and local tournaments.

A game of ``n`` seats puts ``n`` bots at a table:

- ``round-robin``: every combination of ``n`` of the bots (two players: every pairing);
- ``gauntlet``: the first bot at every table, with every combination of ``n - 1`` of the others;
- ``swiss``: rounds; each round groups the bots by points so far, best first, each table the best bot
  not yet seated with the next ones it has met least often (``swiss_round``). A field that does not fill
  its last table leaves its lowest bots out of that round (a bye, worth nothing).

Seeds and seats: a table plays each of its seeds once in every rotation of its seats (``rotated``), so
its games are rounded up to a multiple of ``n`` (``games_per_table``) and luck of the deal and of the
first seat is shared alike: what ``arena play --sprt`` does with a pair of games on one seed.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Final, Literal, TypeVar

Format = Literal["round-robin", "gauntlet", "swiss"]
FORMATS: Final[tuple[Format, ...]] = ("round-robin", "gauntlet", "swiss")
T = TypeVar("T")


def rotated(seq: Sequence[T], r: int) -> tuple[T, ...]:
    """``seq`` with its seats rotated by ``r``: seat ``i`` gets ``seq[(r + i) % n]``."""
    n = len(seq)
    return tuple(seq[(r + i) % n] for i in range(n))


def check_field(bots: int, seats: int) -> None:
    """ValueError when there are too few bots to fill one table."""
    if bots < seats or bots < 2:
        raise ValueError(f"a {seats}-seat game needs at least {max(seats, 2)} bots, got {bots}")


def tables(bots: int, seats: int, fmt: Format) -> list[tuple[int, ...]]:
    """Every table of a round robin or a gauntlet of ``bots`` bots (indices) for a game of ``seats`` seats.
    ValueError for too few bots or another format (a Swiss event's tables come round by round)."""
    if fmt not in ("round-robin", "gauntlet"):
        raise ValueError(f"unknown format {fmt!r} for a fixed plan; known: round-robin, gauntlet")
    check_field(bots, seats)
    if fmt == "round-robin":
        return list(itertools.combinations(range(bots), seats))
    return [(0, *rest) for rest in itertools.combinations(range(1, bots), seats - 1)]


def games_per_table(games: int, seats: int) -> int:
    """``games`` rounded up to whole rotations of the seats."""
    return -(-games // seats) * seats


def table_orders(table: Sequence[int], games: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """A table's matches, ``(j, r, order)``: seed ``j`` in rotation ``r``, ``order`` the bots by seat;
    ``games`` rounded up to whole rotations."""
    seats = len(table)
    return [(j, r, rotated(table, r)) for j in range(games_per_table(games, seats) // seats) for r in range(seats)]


def swiss_round(points: Sequence[float], seats: int, met: Mapping[frozenset[int], int]) -> list[tuple[int, ...]]:
    """One Swiss round's tables for bots ``0..len(points)-1``: best points first (ties: the lower index),
    each table the best bot left with the ``seats - 1`` bots after it that it and the table have met
    least often (``met``: games per pair so far), nearest in order among equals."""
    check_field(len(points), seats)
    left = sorted(range(len(points)), key=lambda i: (-points[i], i))
    out: list[tuple[int, ...]] = []
    while len(left) >= seats:
        table = [left.pop(0)]
        while len(table) < seats:
            k = min(range(len(left)), key=lambda k: (sum(met.get(frozenset((t, left[k])), 0) for t in table), k))
            table.append(left.pop(k))
        out.append(tuple(table))
    return out
