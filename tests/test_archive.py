"""Bounded storage: finished matches' transcripts leave Redis for the archive after their retention, and
every reader finds them there; a crash between the steps loses nothing; a missing file is a clear error.
Real Redis throughout; the end-to-end test plays real matches through a real gateway and workers."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from arena import keys
from arena.errors import ArenaError
from arena.local.arena import LocalArena, arena_command
from arena.service.archive import ArchiveError, Archiver, TranscriptArchive
from arena.service.client import ArenaClient
from arena.service.matches import MatchStore
from referee.wire.values import MatchStatus
from tests.helpers import FAST, SlowRandom, call, finished, register, run_bots, wait_for

DAY = 86_400.0


@pytest.fixture
def r(redis_url: str) -> Any:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def _match(r: Any, match_id: str, enqueued: float, status: MatchStatus, finished_at: float = 0.0) -> str:
    """A match record as the queue leaves it, with its transcript stored when finished."""
    r.zadd(keys.matches_by_time(), {match_id: enqueued})
    r.hset(keys.match(match_id), mapping={"status": status.value, "enqueued_at": enqueued,
                                          "finished_at": finished_at})  # fmt: skip
    text = f'{{"match": "{match_id}"}}\n{{"ply": 1}}\n'
    if status is MatchStatus.FINISHED:
        r.set(keys.transcript(match_id), text)
    return text


def test_old_finished_transcripts_move_to_files_and_read_back_the_same(r: Any, tmp_path: Path) -> None:
    now = 10 * DAY
    texts = {f"old{i}": _match(r, f"old{i}", now - 3 * DAY + i, MatchStatus.FINISHED, now - 2 * DAY) for i in range(5)}
    texts["new"] = _match(r, "new", now - 600, MatchStatus.FINISHED, now - 500)
    archive = TranscriptArchive(tmp_path / "archive")
    report = Archiver(r, archive, retention_s=DAY).run_pass(now=now)
    assert report.archived == 5
    store = MatchStore(r, archive=archive)
    for match_id, text in texts.items():
        assert store.transcript(match_id) == text  # from the file or from Redis: the same bytes
    for i in range(5):
        assert r.exists(keys.transcript(f"old{i}")) == 0
        assert r.hget(keys.match(f"old{i}"), "archive") == str(archive.path(f"old{i}")).encode()
        assert gzip.decompress(archive.path(f"old{i}").read_bytes()).decode() == texts[f"old{i}"]
        assert archive.path(f"old{i}").parent.name == "ol"  # sharded by the id's first two characters
    assert r.exists(keys.transcript("new")) == 1  # within its retention: still in Redis
    assert list((tmp_path / "archive").rglob("*.tmp")) == []  # no temporary file left behind
    # the next pass starts at the cursor: nothing to look at again, nothing moved twice
    again = Archiver(r, archive, retention_s=DAY).run_pass(now=now)
    assert again.archived == 0 and again.scanned <= 1


def test_by_default_a_match_leaves_redis_minutes_after_it_ends_not_a_day(r: Any, tmp_path: Path) -> None:
    """At the rate a tester saw (about 75 matches a minute, 17 KB each) a 24 h retention fills a 1 GB Redis
    in about half a day: with the default settings a match finished a quarter of an hour ago is archived."""
    from arena.cli.common import transcript_archive
    from arena.config import Settings

    now = 10 * DAY
    text = _match(r, "quarter", now - 1000, MatchStatus.FINISHED, now - 900)
    archive, retention_s = transcript_archive(Settings.defaults(), default=str(tmp_path))
    assert archive is not None and retention_s is not None
    assert Archiver(r, archive, retention_s).run_pass(now=now).archived == 1
    assert archive.read("quarter") == text and r.exists(keys.transcript("quarter")) == 0


def test_past_half_of_maxmemory_a_pass_archives_what_just_ended_and_its_event_log(r: Any, tmp_path: Path) -> None:
    """By size as well as age: a match that ended a minute ago stays while Redis has room, and goes (its
    transcript and its event log) once Redis uses half its maxmemory, whatever the retention."""
    now = time.time()
    text = _match(r, "fresh", now - 90, MatchStatus.FINISHED, now - 60)
    r.xadd(keys.events("fresh"), {"line": "{}"})
    archive = TranscriptArchive(tmp_path)
    archiver = Archiver(r, archive, retention_s=DAY)
    assert archiver.run_pass(now=now).archived == 0  # young, and Redis has room
    assert r.exists(keys.transcript("fresh"), keys.events("fresh")) == 2
    before = r.config_get("maxmemory")["maxmemory"]
    r.config_set("maxmemory", int(int(r.info("memory")["used_memory"]) / 0.6))  # 60% used
    try:
        report = archiver.run_pass(now=now)
    finally:
        r.config_set("maxmemory", before)
    assert report.archived == 1 and archive.read("fresh") == text
    assert r.exists(keys.transcript("fresh"), keys.events("fresh")) == 0


def test_a_match_kept_running_for_days_holds_up_no_archiving_of_the_matches_after_it(r: Any, tmp_path: Path) -> None:
    """Finished matches are archived from the finished index (written by the result's script) in the
    order they finished. Before, one unfinished match stopped the walk: 0 of 12 finished transcripts
    behind it were archived."""
    now = 10 * DAY
    _match(r, "slow", now - 5 * DAY, MatchStatus.RUNNING)
    for i in range(12):
        _match(r, f"m{i}", now - 4 * DAY + i, MatchStatus.FINISHED, now - 3 * DAY)
        r.zadd(keys.matches_finished(), {f"m{i}": now - 3 * DAY})
    archiver = Archiver(r, TranscriptArchive(tmp_path), retention_s=DAY)
    assert archiver.run_pass(now=now).archived == 12
    assert r.zcard(keys.matches_finished()) == 0 and r.exists(keys.transcript("m0")) == 0
    assert archiver.run_pass(now=now).archived == 0  # nothing left; "slow" still runs


def test_a_running_match_holds_the_cursor_until_it_finishes(r: Any, tmp_path: Path) -> None:
    """Matches finished before the finished index existed are walked in enqueue order, as before."""
    now = 10 * DAY
    _match(r, "a", now - 5 * DAY, MatchStatus.FINISHED, now - 5 * DAY)
    _match(r, "b", now - 4 * DAY, MatchStatus.RUNNING)
    _match(r, "c", now - 3 * DAY, MatchStatus.FINISHED, now - 3 * DAY)
    archive = TranscriptArchive(tmp_path)
    archiver = Archiver(r, archive, retention_s=DAY)
    assert archiver.run_pass(now=now).archived == 1  # a; b blocks c for now
    assert r.exists(keys.transcript("c")) == 1
    r.hset(keys.match("b"), mapping={"status": "finished", "finished_at": now - 2 * DAY})
    r.set(keys.transcript("b"), "b\n")
    assert archiver.run_pass(now=now).archived == 2  # b and c
    assert r.exists(keys.transcript("b"), keys.transcript("c")) == 0


def test_a_crash_between_the_file_and_the_redis_delete_loses_nothing(r: Any, tmp_path: Path) -> None:
    """The file is durable before Redis forgets: a kill after the write leaves both copies; the next pass
    rewrites the same file and completes; no duplicate, nothing lost."""
    now = 10 * DAY
    text = _match(r, "m1", now - 3 * DAY, MatchStatus.FINISHED, now - 3 * DAY)
    archive = TranscriptArchive(tmp_path)
    archive.write("m1", text)  # the pass's first step, then "kill -9"
    store = MatchStore(r, archive=archive)
    assert store.transcript("m1") == text  # still served from Redis
    assert Archiver(r, archive, retention_s=DAY).run_pass(now=now).archived == 1
    assert store.transcript("m1") == text and r.exists(keys.transcript("m1")) == 0
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["m1.jsonl.gz"]


def test_one_pass_at_a_time_across_archivers(r: Any, tmp_path: Path) -> None:
    now = 10 * DAY
    _match(r, "x", now - 3 * DAY, MatchStatus.FINISHED, now - 3 * DAY)
    r.set(keys.archive_lock(), "another process", px=60_000)
    archiver = Archiver(r, TranscriptArchive(tmp_path), retention_s=DAY)
    assert archiver.run_pass(now=now).archived == 0  # the other process's pass runs
    r.delete(keys.archive_lock())
    assert archiver.run_pass(now=now).archived == 1
    assert r.exists(keys.archive_lock()) == 0  # released


def test_a_missing_or_corrupt_archive_file_is_a_clear_error(r: Any, tmp_path: Path) -> None:
    now = 10 * DAY
    _match(r, "gone", now - 3 * DAY, MatchStatus.FINISHED, now - 3 * DAY)
    _match(r, "bent", now - 3 * DAY + 1, MatchStatus.FINISHED, now - 3 * DAY)
    archive = TranscriptArchive(tmp_path)
    Archiver(r, archive, retention_s=DAY).run_pass(now=now)
    archive.path("gone").unlink()
    archive.path("bent").write_bytes(b"not gzip")
    store = MatchStore(r, archive=archive)
    with pytest.raises(ArchiveError, match=r"match gone: archived transcript .*gone\.jsonl\.gz is missing"):
        store.transcript("gone")
    with pytest.raises(ArchiveError, match=r"bent\.jsonl\.gz is unreadable"):
        store.transcript("bent")
    with pytest.raises(ArchiveError, match="this process has no --archive"):
        MatchStore(r).transcript("gone")
    assert MatchStore(r).transcript("never-was") is None


def test_played_matches_are_archived_and_served_by_the_gateway_from_the_archive(redis_url: str, tmp_path: Path) -> None:
    """Real matches, a real gateway archiving with retention 0: the event logs go with the results, the
    transcripts within seconds (the gateway's own passes); `transcript get` (GetTranscript) and FollowMatch
    answer from the archive with the same text; a deleted file is DATA_LOSS naming it."""
    archive = TranscriptArchive(tmp_path / "archive")

    async def main() -> None:
        async with LocalArena(tmp_path / "arena", workers=1, redis_url=redis_url, worker_args=FAST,
                              archive=archive, retention_s=0.0) as arena:  # fmt: skip
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta")
            runners = run_bots({"alpha": SlowRandom(0, 1), "beta": SlowRandom(0, 2)}, tokens, arena.gateway)
            ids = [(await call(admin.request_match, "shanghaien", ["alpha", "beta"]))[0] for _ in range(3)]
            await finished(admin, ids, 120)
            before = {m: (await call(admin.transcript, m))[0] for m in ids}
            client = redis.Redis.from_url(redis_url)
            # the event logs and seeds went with the results; the transcripts go at the gateway's next pass
            assert client.exists(*(keys.events(m) for m in ids), *(keys.match_seed(m) for m in ids)) == 0

            async def archived() -> bool:
                return await call(client.exists, *(keys.transcript(m) for m in ids)) == 0

            await wait_for(archived, 30, "the gateway's archive passes")
            assert all(client.hget(keys.match(m), "archived_at") for m in ids)
            out = tmp_path / "got.jsonl"
            cli = await asyncio.to_thread(
                subprocess.run, arena_command("transcript", "get", ids[1], "-o", str(out), "--gateway", arena.gateway),
                capture_output=True, text=True, env={**os.environ, "ARENA_ADMIN_TOKEN": arena.admin_token},
            )  # fmt: skip
            assert cli.returncode == 0, cli.stderr
            assert out.read_text() == before[ids[1]]  # `arena transcript get` reads the archive through the gateway
            for m in ids:
                text, full = await call(admin.transcript, m)
                assert full and text == before[m]
                assert json.loads(text.splitlines()[-1])  # the footer, whole
                followed = await call(lambda m=m: list(admin.follow(m)))
                assert followed == text.splitlines()
            listed = await call(admin.list_matches, bot_name="alpha", limit=10)
            assert {x.match_id for x in listed} == set(ids)  # the records stay in Redis
            archive.path(ids[0]).unlink()
            with pytest.raises(ArenaError) as lost:
                await call(admin.transcript, ids[0])
            assert lost.value.code == "DATA_LOSS" and str(archive.path(ids[0])) in str(lost.value)
            for runner in runners:
                runner.stop()
            admin.close()
            client.close()

    asyncio.run(main())
