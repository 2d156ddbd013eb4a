"""Static facts of The Bridges of Shangri-La board, loaded from seeds/board.json.

Spaces are numbered ``village * 7 + discipline`` (disciplines in canonical order), so a village's
seven spaces are one contiguous slice of the board list.
"""

from __future__ import annotations

from typing import Final

from referee.games.data import load

_BOARD = load("board.json")

DISCIPLINES: Final[tuple[str, ...]] = tuple(_BOARD["disciplines"])
NUM_DISCIPLINES: Final = len(DISCIPLINES)
NUM_VILLAGES: Final[int] = _BOARD["villages"]
NUM_SPACES: Final = NUM_VILLAGES * NUM_DISCIPLINES
RED_WALLED_VILLAGE: Final[int] = _BOARD["red_walled_village"]
BRIDGES: Final[tuple[tuple[int, int], ...]] = tuple((min(a, b), max(a, b)) for a, b in _BOARD["bridges"])
TILES_PER_DISCIPLINE: Final[int] = _BOARD["tiles_per_discipline"]
COLOURS: Final[tuple[str, ...]] = tuple(_BOARD["colours"])
SETUP_LIMITS: Final[dict[int, tuple[int, int]]] = {
    int(n): (lim["per_colour"], lim["total"]) for n, lim in _BOARD["setup_limits"].items()
}
DISCIPLINE_INDEX: Final = {name: i for i, name in enumerate(DISCIPLINES)}


def neighbours(village: int) -> list[int]:
    """Villages one bridge away from ``village`` on the full board."""
    return sorted(b if a == village else a for a, b in BRIDGES if village in (a, b))


def bridge_index(a: int, b: int) -> int | None:
    """Index of the bridge joining ``a`` and ``b`` in ``BRIDGES``, or None."""
    key = (min(a, b), max(a, b))
    try:
        return BRIDGES.index(key)
    except ValueError:
        return None
