"""Static facts of Shanghaien, loaded from seeds/shanghaien_deck.json.

Cards that are identical (the two 3-value sailors of a nation, the copies of a dirty-tricks card) are
one *card type* with a count, so a deal is a draw of a type with probability count / cards left.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Final

from referee.games.data import load

_DECK = load("shanghaien_deck.json")

NATIONS: Final[tuple[str, ...]] = tuple(_DECK["nations"])
TRICKS: Final[tuple[str, ...]] = tuple(_DECK["tricks"])  # adjust, both, reroll
ADJUST, BOTH, REROLL = (TRICKS.index(k) for k in ("adjust", "both", "reroll"))
WILD_VALUE: Final[int] = _DECK["wild_value"]
DICE_PER_PLAYER: Final[int] = _DECK["dice_per_player"]
ROUNDS: Final[int] = _DECK["rounds"]
TAVERN_SIZE: Final[int] = _DECK["tavern_size"]


@dataclass(frozen=True, slots=True)
class CardType:
    """A kind of tavern card: a sailor (``nation`` >= 0, ``value``) or a dirty trick (``trick`` >= 0)."""

    index: int
    text: str
    nation: int = -1
    value: int = 0
    trick: int = -1

    @property
    def is_trick(self) -> bool:
        return self.trick >= 0


def _card_types() -> tuple[tuple[CardType, ...], tuple[int, ...]]:
    types: list[CardType] = []
    counts: list[int] = []
    values = Counter(_DECK["sailor_values"])
    for n, nation in enumerate(NATIONS):
        for value in sorted(values):
            types.append(CardType(len(types), f"{nation}-{value}", nation=n, value=value))
            counts.append(values[value])
    for k, trick in enumerate(TRICKS):
        types.append(CardType(len(types), f"trick-{trick}", trick=k))
        counts.append(_DECK["tricks"][trick])
    return tuple(types), tuple(counts)


CARD_TYPES, DECK_COUNTS = _card_types()
DECK_SIZE: Final = sum(DECK_COUNTS)
CARD_BY_TEXT: Final = {c.text: c for c in CARD_TYPES}
TRICK_CARD: Final = tuple(next(c for c in CARD_TYPES if c.trick == k) for k in range(len(TRICKS)))
