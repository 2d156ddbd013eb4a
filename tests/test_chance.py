"""The seed-derived chance of referee.chance: deterministic, documented, and faithful to the
engine's probabilities."""

from __future__ import annotations

import hashlib
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from referee import chance, games


def test_same_seed_same_outcomes_and_different_seeds_differ() -> None:
    s = games.get("shanghaien").new_state()
    first = [str(chance.sample(s, "seed-a", ply)) for ply in range(50)]
    again = [str(chance.sample(s, "seed-a", ply)) for ply in range(50)]
    other = [str(chance.sample(s, "seed-b", ply)) for ply in range(50)]
    assert first == again
    assert first != other


def test_pick_follows_cumulative_probabilities() -> None:
    outcomes = [("a", Fraction(1, 4)), ("b", Fraction(1, 2)), ("c", Fraction(1, 4))]
    assert chance.pick(outcomes, 0) == "a"
    assert chance.pick(outcomes, chance.SCALE // 4 - 1) == "a"
    assert chance.pick(outcomes, chance.SCALE // 4) == "b"
    assert chance.pick(outcomes, 3 * chance.SCALE // 4) == "c"
    assert chance.pick(outcomes, chance.SCALE - 1) == "c"
    with pytest.raises(ValueError):
        chance.pick([("a", Fraction(1, 2))], chance.SCALE - 1)


def test_dice_frequencies_match_the_engine() -> None:
    s = games.get("shanghaien").new_state()
    for text in ["deal german-1", "deal german-2", "deal german-3", "deal german-4", "deal french-1", "deal french-2"]:
        s = s.apply(s.parse_action(text))
    rolled = s.apply(s.parse_action("roll"))
    n = 36_000
    counts = Counter(str(chance.sample(rolled, "freq", ply)) for ply in range(n))
    assert counts["dice 3 3"] / n == pytest.approx(1 / 36, abs=0.004)
    assert counts["dice 2 5"] / n == pytest.approx(2 / 36, abs=0.006)
    assert len(counts) == 21


def test_draw_is_the_documented_derivation() -> None:
    """RULINGS A1: the first 8 bytes of SHA-256("<seed>:<ply>"), big-endian, whichever SHA-256
    implementation the referee uses (CPython's own, OpenSSL's when the interpreter lacks it)."""
    assert chance.draw("abc", 0) == int.from_bytes(bytes.fromhex("5f36efce86f68877"), "big")  # SHA-256("abc:0")
    for seed in ("abc", "bench:7", "é-seed", ""):
        for ply in (0, 1, 9, 10, 255, 12345):
            digest = hashlib.sha256(f"{seed}:{ply}".encode()).digest()
            assert chance.draw(seed, ply) == int.from_bytes(digest[:8], "big")


def test_seed_hash_is_sha256_hex() -> None:
    assert chance.seed_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_integer_weights_pick_exactly_as_the_fractions() -> None:
    """The referee's fast path (chance_weights) and the documented rule (exact fractions) agree."""
    from referee.games.shanghaien import ShanghaienState

    state = games.get("shanghaien").new_state()
    assert isinstance(state, ShanghaienState)
    rolled = state
    for text in ["deal german-1", "deal german-2", "deal german-3", "deal german-4", "deal french-1", "deal french-2"]:
        rolled = rolled.apply(rolled.parse_action(text))
    rolled = rolled.apply(rolled.parse_action("roll"))
    for node in (state, rolled):
        exact = node.chance_outcomes_exact()
        weights = node.chance_weights()
        assert [a for a, _ in exact] == [a for a, _ in weights]
        total = sum(w for _, w in weights)
        assert [Fraction(w, total) for _, w in weights] == [p for _, p in exact]
        for ply in range(3000):
            x = chance.draw("agree", ply)
            assert chance.pick(exact, x) is chance.pick_weighted(weights, x)
        edges = [0, chance.SCALE - 1] + [
            int(sum(p for _, p in exact[: i + 1]) * chance.SCALE) for i in range(len(exact) - 1)
        ]
        for x in edges + [e - 1 for e in edges if e]:
            assert chance.pick(exact, x) is chance.pick_weighted(weights, x)


@given(st.lists(st.integers(0, 50), min_size=1, max_size=30).filter(lambda w: sum(w) > 0),
       st.integers(0, chance.SCALE - 1))  # fmt: skip
def test_pick_weighted_is_the_first_outcome_whose_running_sum_passes_x(weights: list[int], x: int) -> None:
    """The rule written out (RULINGS A1, integer form), zero weights included, against the binary search."""
    outcomes = list(enumerate(weights))
    total, running, expected = sum(weights), 0, None
    for i, w in outcomes:
        running += w
        if x * total < running << 64:
            expected = i
            break
    assert expected is not None and weights[expected] > 0
    assert chance.pick_weighted(outcomes, x) == expected
