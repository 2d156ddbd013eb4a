"""The worker's hot path: its light reading of ply lines counts what the full parse counted; the shared event log."""

from __future__ import annotations

import asyncio

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


def test_the_event_log_batches_matches_together_in_order_and_one_cancelled_match_spares_the_write() -> None:
    from arena.service.worker import _EventLog

    writes: list[list[tuple[str, str]]] = []
    stored: list[tuple[str, str]] = []

    async def write(items: list[tuple[str, str]]) -> set[str]:
        writes.append(items)
        await asyncio.sleep(0.01)  # on its way to Redis: what comes meanwhile waits for the next write
        stored.extend(items)
        return set()

    async def main() -> None:
        log = _EventLog(write)
        first = asyncio.create_task(log.append([("a", "1")]))
        await asyncio.sleep(0)  # the first write is under way
        rest = [asyncio.create_task(log.append([(m, n)])) for m, n in [("b", "1"), ("a", "2"), ("c", "1")]]
        doomed = asyncio.create_task(log.append([("d", "1")]))
        await asyncio.sleep(0)
        doomed.cancel()  # its match's lease was lost: the shared write goes on
        await asyncio.gather(first, *rest)
        assert ("d", "1") in stored  # written by the time the others' append returned
        assert ("a", "1") in stored

    asyncio.run(main())
    assert writes == [[("a", "1")], [("b", "1"), ("a", "2"), ("c", "1"), ("d", "1")]]
    assert stored == [x for w in writes for x in w]


def test_a_failed_write_fails_every_append_waiting_for_it() -> None:
    from arena.service.worker import _EventLog

    async def write(items: list[tuple[str, str]]) -> set[str]:
        await asyncio.sleep(0.01)
        raise RuntimeError("redis said no")

    async def main() -> list[BaseException | None]:
        log = _EventLog(write)
        a = asyncio.create_task(log.append([("a", "1")]))
        await asyncio.sleep(0)
        b = asyncio.create_task(log.append([("b", "1")]))
        return list(await asyncio.gather(a, b, return_exceptions=True))

    out = asyncio.run(main())
    assert all(isinstance(e, RuntimeError) for e in out)


def test_lines_refused_by_a_lost_lease_fail_only_that_matchs_append() -> None:
    """Fencing: the write says which matches' lines their lease refused; only those appends raise
    LeaseLostError (the worker then stops refereeing that match), the others' lines are in."""
    from arena.service.queue import LeaseLostError
    from arena.service.worker import _EventLog

    async def write(items: list[tuple[str, str]]) -> set[str]:
        await asyncio.sleep(0.01)
        return {m for m, _ in items if m == "lost"}

    async def main() -> list[BaseException | None]:
        log = _EventLog(write)
        tasks = [asyncio.create_task(log.append([(m, "1")])) for m in ("kept", "lost", "also-kept")]
        return list(await asyncio.gather(*tasks, return_exceptions=True))

    kept, lost, also_kept = asyncio.run(main())
    assert kept is None and also_kept is None
    assert isinstance(lost, LeaseLostError)
