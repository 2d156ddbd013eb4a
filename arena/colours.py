"""The colours people see bots and seats in, on the ladder page (``arena.ladder.report``) and the replay page
(``arena.replay``) alike.

One rule in one place, so that a bot a person follows on the ladder's chart has the same colour when they
open one of its replays: a bot version's colour comes from its name and version alone (a stable hash into
``BOT_PALETTE``), and only when an earlier bot on the same page already holds that colour does it take the
next free one. A game whose rules give each seat a colour (Shangri-La's tiles, S1) keeps the rules' colour
for its seats: the tiles on the board are that colour, and a chip must match them.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Final

BOT_PALETTE: Final = ("#2f6bd0", "#d1453b", "#2f9e6e", "#d08a12", "#8a52c8", "#17a2b8", "#c2185b", "#6d4c41",
                      "#546e7a", "#7cb342")  # fmt: skip
"""Ten colours far enough apart to tell lines and chips apart, each dark enough for white text on it."""
TILE_COLOURS: Final = {"red": "#d1453b", "blue": "#2f6bd0", "yellow": "#e8b923", "violet": "#8a52c8"}
"""Shangri-La's seat colours (S1), as the board draws them."""


def own_colour(name: str, version: str) -> str:
    """A bot version's colour when nobody else on the page has it: the same on every page and every run
    (``crc32``, not ``hash``, which Python salts per process)."""
    return BOT_PALETTE[zlib.crc32(f"{name}\0{version}".encode()) % len(BOT_PALETTE)]


def bot_colours(bots: Sequence[tuple[str, str]]) -> list[str]:
    """The colour of each ``(name, version)`` on one page, in the order the page lists them: its own colour,
    or the next one in the palette that no earlier bot took (bots on one page never share a colour while the
    palette lasts; the same bot listed twice, such as one bot in two seats, gets two)."""
    taken: set[str] = set()
    out: list[str] = []
    for name, version in bots:
        colour = own_colour(name, version)
        if len(taken) < len(BOT_PALETTE):
            i = BOT_PALETTE.index(colour)
            while BOT_PALETTE[i] in taken:
                i = (i + 1) % len(BOT_PALETTE)
            colour = BOT_PALETTE[i]
        taken.add(colour)
        out.append(colour)
    return out


def seat_colours(bots: Sequence[tuple[str, str]], rule_colours: Sequence[str] | None = None) -> list[str]:
    """Each seat's colour on a replay: the rules' colour names (``rule_colours``, Shangri-La's) when the game
    has them, else its bot's colour (``bot_colours`` in seat order)."""
    if rule_colours is not None:
        return [TILE_COLOURS[c] for c in rule_colours]
    return bot_colours(bots)
