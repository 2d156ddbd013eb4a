"""The worker's per-line metrics: its light reading of ply lines counts what the full parse counted."""

from __future__ import annotations

from arena import metrics
from arena.service.worker import _count
from referee import transcript


def _observed() -> tuple[float, float]:
    sample = {s.name: s.value for m in metrics.MOVE_LATENCY.collect() for s in m.samples}
    return sample["arena_move_seconds_count"], sample["arena_move_seconds_sum"]


def test_a_seat_ply_is_timed_and_a_chance_ply_or_a_fallback_is_not() -> None:
    count, total = _observed()
    _count(transcript.Ply(ply=3, actor=1, action="R1 a2", think_ms=250.0, bank_ms=900).to_line())
    assert _observed() == (count + 1, total + 0.25)
    _count(transcript.Ply(ply=4, actor=-1, action="d6").to_line())
    _count(transcript.Ply(ply=5, actor=0, action="R1 a2", think_ms=None, fallback=True).to_line())
    assert _observed() == (count + 1, total + 0.25)


def test_other_lines_still_count_through_the_full_parse() -> None:
    before = metrics.TIMEOUTS._value.get()
    _count(transcript.Strike(ply=7, seat=0, strikes=1, reason="timeout").to_line())
    assert metrics.TIMEOUTS._value.get() == before + 1
