"""Referee workers killed with SIGKILL again and again while bots play through the gateway (and, the
same, dialling the workers themselves): no match is lost, doubled, forfeited or told wrong.

Real processes throughout (``tests/chaos.py``): a redis-server, worker processes killed every 1.5-2 s and
replaced, two bots as their own ``arena bot run`` processes. Every other kill hits a worker running a match
taken over already, so matches are taken over again before or while their bots re-attach. Before the
relay's fix a seat whose relayed stream was cut under a retry never came back and forfeited (6 of 16
matches in one such run), and a bot told its result by a worker killed before recording it was told
one result while the arena recorded a forfeit.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.chaos import KillReport, kill_run

MATCHES = 20
KILLS = 8


def check(report: KillReport, faults: int = KILLS // 2) -> None:
    summary = report.summary()
    assert len(report.kills) >= faults, summary  # the faults happened
    assert sum(report.resumes.values()) >= len(report.kills), summary  # every kill took matches over
    assert report.finished == report.requested, summary
    assert report.forfeited == [], (summary, report.forfeit_lines)
    assert report.lost == [] and report.doubled == [], summary
    assert report.unverified == {}, summary
    assert report.told_wrong == [], summary
    assert report.untold == [], summary
    assert report.stuck_bots == [], summary  # SIGTERM: every bot drained and exited
    assert set(report.end_reasons.values()) == {"completed"}, summary
    assert report.ladder_games == 2 * report.finished and report.ladder_equals_rebuild, summary  # rated once


@pytest.mark.parametrize("direct", [False, True], ids=["relayed", "direct"])
def test_workers_killed_again_and_again_cost_no_bot_its_match(direct: bool, redis_url: str, tmp_path: Path) -> None:
    report = asyncio.run(
        kill_run(matches=MATCHES, kills=KILLS, capacity=3, bot_delay=0.02, direct=direct, seed=7,
                 data_dir=tmp_path, redis_url=redis_url, timeout_s=300)
    )  # fmt: skip
    print(report.summary())
    check(report)


@pytest.mark.parametrize("direct", [False, True], ids=["relayed", "direct"])
def test_a_worker_frozen_past_its_lease_hands_its_matches_over_and_forks_no_log(
    direct: bool, redis_url: str, tmp_path: Path
) -> None:
    """SIGSTOP for 3.5 s (the lease is 1.5 s), then SIGCONT: another worker takes the matches over and
    announces them; the gateway moves the bots' streams to it at once (the frozen worker's connections
    never break by themselves), and the woken worker's writes for those matches are refused by their
    lease (fencing): it stops refereeing them and hands their streams back. Before: every such match
    ended in a forfeit, and the woken worker's lines were appended after the takeover's (forked logs
    that fail verification)."""
    report = asyncio.run(
        kill_run(matches=24, kills=2, capacity=3, bot_delay=0.02, direct=direct, seed=3, fault="stop",
                 stop_s=3.5, data_dir=tmp_path, redis_url=redis_url, timeout_s=300)
    )  # fmt: skip
    print(report.summary())
    check(report, faults=2)
