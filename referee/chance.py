"""Chance from the match seed (RULINGS A1): a documented, deterministic derivation.

The outcome of the chance event at ply ``k`` (0-based count of all plies so far, chance and
player alike) is chosen by ``x = first 8 bytes of SHA-256("<seed>:<k>")`` read big-endian as an
integer in [0, 2**64): the outcomes are taken in the engine's listed order with their exact
probabilities, and the first whose cumulative probability times 2**64 exceeds ``x`` is the
outcome. Anyone with the seed and the engine can recompute every deal and roll.
"""

from __future__ import annotations

import hashlib
import importlib
import secrets
from bisect import bisect_right
from collections.abc import Sequence
from fractions import Fraction
from itertools import accumulate
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from referee.wire.values import sha256_hex

try:  # CPython's own SHA-256: the same digest as OpenSSL's (hashlib's), at a third of the cost when the
    # caches are cold, as they are between a referee's moves: OpenSSL's generic EVP path touches far more code
    sha256: Any = importlib.import_module("_sha256").sha256
except ImportError:  # an interpreter built without it
    sha256 = hashlib.sha256

if TYPE_CHECKING:
    from referee.games.core import State

SCALE = 1 << 64


def draw(seed: str, ply: int) -> int:
    """The 64-bit number that decides the chance event at ``ply``."""
    digest = sha256(f"{seed}:{ply}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def pick(outcomes: Sequence[tuple[Any, Fraction]], x: int) -> Any:
    """The outcome that ``x`` (in [0, 2**64)) selects from ``outcomes`` with exact probabilities."""
    cumulative = Fraction(0)
    for action, probability in outcomes:
        cumulative += probability
        if x < cumulative * SCALE:
            return action
    raise ValueError("chance probabilities do not sum to 1")


def pick_weighted(outcomes: Sequence[tuple[Any, int]], x: int) -> Any:
    """``pick`` for integer weights: the same choice, in integer arithmetic (probability = w / total).

    The first outcome whose cumulative weight c has x * total < c * 2**64, that is (c being an integer)
    c > floor(x * total / 2**64): a binary search of the running sums, which C code builds."""
    cumulative = list(accumulate(map(itemgetter(1), outcomes)))
    if not cumulative or cumulative[-1] <= 0:
        raise ValueError("no chance outcomes")
    return outcomes[bisect_right(cumulative, (x * cumulative[-1]) >> 64)][0]


def sample(state: State, seed: str, ply: int) -> Any:
    """The chance outcome of ``state`` (a chance node) at ``ply`` of the match with ``seed``.

    Drawn from the engine's integer ``chance_weights``: the outcome ``pick`` would choose from
    ``chance_outcomes_exact`` (the same outcomes in the same order, probability = weight / total)."""
    return pick_weighted(state.chance_weights(), draw(seed, ply))


def new_seed() -> str:
    """A fresh match seed: 128 random bits in hex, for a match requested without one."""
    return secrets.token_hex(16)


def seed_hash(seed: str) -> str:
    """What the referee publishes at the start of a match (RULINGS A1): hex SHA-256 of the seed."""
    return sha256_hex(seed)
