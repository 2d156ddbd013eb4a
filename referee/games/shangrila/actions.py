"""Shangri-La actions: interned values with the canonical notation of RULINGS.md.

``place V D``, ``recruit V D``, ``recruit V D + W E`` (pair ordered by village, then discipline),
``journey V>W`` and ``pass``. Every action exists once, in the tables below; ``parse`` returns
those instances, so identity is equality.
"""

from __future__ import annotations

import re
from enum import IntEnum
from typing import Final

from referee.games.core import Action, ActionSyntaxError
from referee.games.shangrila.board import (
    DISCIPLINE_INDEX,
    DISCIPLINES,
    NUM_DISCIPLINES,
    NUM_SPACES,
    NUM_VILLAGES,
)


class Kind(IntEnum):
    PLACE = 0
    RECRUIT = 1
    JOURNEY = 2
    PASS = 3


class ShangriLaAction(Action):
    """One Shangri-La action. ``spaces`` are board spaces (village * 7 + discipline)."""

    __slots__ = ("dest", "kind", "source", "spaces")

    def __init__(
        self,
        code: int,
        text: str,
        kind: Kind,
        spaces: tuple[int, ...] = (),
        source: int = -1,
        dest: int = -1,
    ) -> None:
        super().__init__(code, text)
        self.kind = kind
        self.spaces = spaces
        self.source = source
        self.dest = dest

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (parse, (self.text,))


def space_text(space: int) -> str:
    village, discipline = divmod(space, NUM_DISCIPLINES)
    return f"{village} {DISCIPLINES[discipline]}"


_codes = iter(range(1 << 30))

PLACE: Final[tuple[ShangriLaAction, ...]] = tuple(
    ShangriLaAction(next(_codes), f"place {space_text(s)}", Kind.PLACE, (s,)) for s in range(NUM_SPACES)
)
RECRUIT_ONE: Final[tuple[ShangriLaAction, ...]] = tuple(
    ShangriLaAction(next(_codes), f"recruit {space_text(s)}", Kind.RECRUIT, (s,)) for s in range(NUM_SPACES)
)
# RECRUIT_TWO[s][t] for s < t; canonical order by village then discipline is the space order.
RECRUIT_TWO: Final[tuple[tuple[ShangriLaAction | None, ...], ...]] = tuple(
    tuple(
        ShangriLaAction(next(_codes), f"recruit {space_text(s)} + {space_text(t)}", Kind.RECRUIT, (s, t))
        if t > s
        else None
        for t in range(NUM_SPACES)
    )
    for s in range(NUM_SPACES)
)
JOURNEY: Final[dict[tuple[int, int], ShangriLaAction]] = {
    (v, w): ShangriLaAction(next(_codes), f"journey {v}>{w}", Kind.JOURNEY, (), v, w)
    for v in range(NUM_VILLAGES)
    for w in range(NUM_VILLAGES)
    if v != w
}
PASS: Final = ShangriLaAction(next(_codes), "pass", Kind.PASS)

_SPACE = r"(\d{1,2}) ([a-z-]+)"
_PLACE_RE = re.compile(rf"place {_SPACE}")
_RECRUIT_RE = re.compile(rf"recruit {_SPACE}(?: \+ {_SPACE})?")
_JOURNEY_RE = re.compile(r"journey (\d{1,2})>(\d{1,2})")


def _village(token: str, text: str) -> int:
    if token != str(int(token)) or not 0 <= int(token) < NUM_VILLAGES:
        raise ActionSyntaxError(f"{text!r}: village {token!r} is not one of 0..{NUM_VILLAGES - 1}")
    return int(token)


def _space(village: str, discipline: str, text: str) -> int:
    v = _village(village, text)
    d = DISCIPLINE_INDEX.get(discipline)
    if d is None:
        raise ActionSyntaxError(f"{text!r}: {discipline!r} is not a discipline ({', '.join(DISCIPLINES)})")
    return v * NUM_DISCIPLINES + d


def parse(text: str) -> ShangriLaAction:
    """The action written ``text`` in canonical notation; ActionSyntaxError if it is not one."""
    if text == "pass":
        return PASS
    if m := _PLACE_RE.fullmatch(text):
        return PLACE[_space(m[1], m[2], text)]
    if m := _RECRUIT_RE.fullmatch(text):
        s = _space(m[1], m[2], text)
        if m[3] is None:
            return RECRUIT_ONE[s]
        t = _space(m[3], m[4], text)
        if t == s:
            raise ActionSyntaxError(f"{text!r}: two students cannot go onto the same master")
        if t < s:
            raise ActionSyntaxError(f"{text!r}: write the pair in canonical order: {RECRUIT_TWO[t][s]}")
        action = RECRUIT_TWO[s][t]
        assert action is not None
        return action
    if m := _JOURNEY_RE.fullmatch(text):
        v, w = _village(m[1], text), _village(m[2], text)
        if v == w:
            raise ActionSyntaxError(f"{text!r}: a journey goes to another village")
        return JOURNEY[(v, w)]
    raise ActionSyntaxError(
        f"{text!r} is not a Shangri-La action: expected 'place V D', 'recruit V D', "
        "'recruit V D + W E', 'journey V>W' or 'pass'"
    )
