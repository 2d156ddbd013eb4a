"""Shanghaien actions, chance outcomes included, with the canonical notation of RULINGS.md.

Chance: ``deal CARD``, ``dice A B`` (A <= B). Player: ``roll``, ``shanghai``, ``place V``
(``place V fwd|rev`` while the round's orientation is open), ``wild KIND NATION``, ``adjust A>B``,
``both`` (``both fwd|rev``), ``reroll``. Each action is built once; parsing returns that instance.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

from referee.games.core import Action, ActionSyntaxError
from referee.games.shanghaien.deck import CARD_TYPES, NATIONS, TRICKS


class Kind(IntEnum):
    DEAL = 0
    DICE = 1
    ROLL = 2
    SHANGHAI = 3
    PLACE = 4
    WILD = 5
    ADJUST = 6
    BOTH = 7
    REROLL = 8


ORIENT_NAMES: Final = ("", "fwd", "rev")
"""Orientation codes: 0 not chosen yet, 1 fwd (value v on position v), 2 rev (on position 7 - v)."""

CHANCE_KINDS: Final = frozenset({Kind.DEAL, Kind.DICE})


class ShanghaienAction(Action):
    """One Shanghaien action. ``a``/``b``: card type, dice, die value, trick kind or nation by kind."""

    __slots__ = ("a", "b", "kind", "orient")

    def __init__(self, code: int, text: str, kind: Kind, a: int = 0, b: int = 0, orient: int = 0) -> None:
        super().__init__(code, text)
        self.kind = kind
        self.a = a
        self.b = b
        self.orient = orient

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (parse, (self.text,))


_codes = iter(range(1 << 30))


def _make(text: str, kind: Kind, a: int = 0, b: int = 0, orient: int = 0) -> ShanghaienAction:
    return ShanghaienAction(next(_codes), text, kind, a, b, orient)


def _with_orient(base: str, orient: int) -> str:
    return f"{base} {ORIENT_NAMES[orient]}" if orient else base


DEAL: Final = tuple(_make(f"deal {c.text}", Kind.DEAL, c.index) for c in CARD_TYPES)
DICE: Final = {(a, b): _make(f"dice {a} {b}", Kind.DICE, a, b) for a in range(1, 7) for b in range(a, 7)}
ROLL: Final = _make("roll", Kind.ROLL)
SHANGHAI: Final = _make("shanghai", Kind.SHANGHAI)
PLACE: Final = {
    (v, o): _make(_with_orient(f"place {v}", o), Kind.PLACE, v, 0, o) for v in range(1, 7) for o in range(3)
}
WILD: Final = {
    (k, n): _make(f"wild {TRICKS[k]} {NATIONS[n]}", Kind.WILD, k, n)
    for k in range(len(TRICKS))
    for n in range(len(NATIONS))
}
ADJUST: Final = {
    (a, b): _make(f"adjust {a}>{b}", Kind.ADJUST, a, b) for a in range(1, 7) for b in (a - 1, a + 1) if 1 <= b <= 6
}
BOTH: Final = tuple(_make(_with_orient("both", o), Kind.BOTH, 0, 0, o) for o in range(3))
REROLL: Final = _make("reroll", Kind.REROLL)

ALL: Final[dict[str, ShanghaienAction]] = {
    a.text: a
    for a in (
        *DEAL,
        *DICE.values(),
        ROLL,
        SHANGHAI,
        *PLACE.values(),
        *WILD.values(),
        *ADJUST.values(),
        *BOTH,
        REROLL,
    )
}


def parse(text: str) -> ShanghaienAction:
    """The action written ``text`` in canonical notation; ActionSyntaxError says what is wrong."""
    action = ALL.get(text)
    if action is not None:
        return action
    raise ActionSyntaxError(_diagnose(text))


def _diagnose(text: str) -> str:
    """Why ``text`` is not in the notation: the most specific complaint we can make."""
    head = text.split(" ", 1)[0]
    if head == "deal":
        return f"{text!r}: unknown card; cards are NATION-VALUE (e.g. german-3) or trick-{{{','.join(TRICKS)}}}"
    if head == "dice":
        return f"{text!r}: write 'dice A B' with dice values 1..6 and A <= B"
    if head == "place":
        return f"{text!r}: write 'place V' (V a die value 1..6), or 'place V fwd|rev' to choose the orientation"
    if head == "wild":
        return (
            f"{text!r}: write 'wild KIND NATION' with KIND one of {', '.join(TRICKS)} "
            f"and NATION one of {', '.join(NATIONS)}"
        )
    if head == "adjust":
        return f"{text!r}: write 'adjust A>B' with B = A+1 or A-1, both within 1..6"
    if head == "both":
        return f"{text!r}: write 'both', 'both fwd' or 'both rev'"
    return (
        f"{text!r} is not a Shanghaien action: expected roll, shanghai, place V [fwd|rev], wild KIND NATION, "
        "adjust A>B, both [fwd|rev], reroll, or the chance events deal CARD and dice A B"
    )
