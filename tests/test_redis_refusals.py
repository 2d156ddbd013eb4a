"""Redis refusing writes for a while under running matches, each way it does so for real: ``maxmemory``
reached (OOM), its disk full under the AOF (a 4 MiB tmpfs filled up: MISCONF), and turned into a replica
of a master that is not there (READONLY, as after a failover). Real processes: the gateway, a worker
process, bots through their sessions. Before, the worker's claim and heartbeat loops died on the first
such error while the process stayed up (matches stuck ``running``, new ones never claimed) and clients
got ``UNKNOWN: Unexpected <class 'redis.exceptions.OutOfMemoryError'>`` (or ResponseError, ReadOnlyError).
Now every loop rides it out with back-off, calls get UNAVAILABLE saying the database is full, and the
matches go on and finish once writes are accepted again; the ladder (its consuming thread alive through
it) applies each result once, as a rebuild from the stored results does."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from arena import keys
from arena.errors import ArenaError
from arena.local.arena import LocalArena
from arena.local.ladder_runner import LadderRunner
from arena.local.redisproc import RedisProcess, free_port
from arena.service.client import ArenaClient
from referee import transcript as transcripts
from tests.helpers import SlowRandom, call, finished, in_ci, register, run_bots, wait_for

SAYS = {"oom": "full (maxmemory)", "disk-full": "cannot save to its disk", "read-only": "is read-only"}


@contextlib.contextmanager
def small_disk(folder: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs at ``folder`` (mounting needs root, as .ci/run has; skipped where it cannot)."""
    folder.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)]
    mounted = subprocess.run(mount, check=False, capture_output=True)
    if mounted.returncode != 0:
        (pytest.fail if in_ci() else pytest.skip)(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@contextlib.contextmanager
def refusing_writes(kind: str, r: redis.Redis, disk: Path | None) -> Iterator[None]:
    """Redis refuses every write inside the block, for real, and accepts them again after it."""
    if kind == "oom":
        r.config_set("maxmemory", 1)  # OOM command not allowed when used memory > 'maxmemory'
    elif kind == "read-only":
        r.replicaof("127.0.0.1", free_port())  # a master nobody listens on: no sync, the data stays, writes refused
    else:
        assert disk is not None
        filler = disk / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True, check=False)  # ENOSPC
        deadline = time.monotonic() + 10
        while True:  # the AOF's next flush (every second) fails: MISCONF from then on
            try:
                r.incr("arena:test:disk-probe")
            except redis.ResponseError as e:
                assert str(e).startswith("MISCONF"), e
                break
            assert time.monotonic() < deadline, "the full disk never made Redis refuse writes"
            time.sleep(0.1)
    try:
        yield
    finally:
        if kind == "oom":
            r.config_set("maxmemory", 0)
        elif kind == "read-only":
            r.replicaof("NO", "ONE")
        else:
            (disk / "filler").unlink()  # type: ignore[operator]
            deadline = time.monotonic() + 10
            while True:  # the AOF's buffer is written out on its next try: writes accepted again
                try:
                    r.delete("arena:test:disk-probe")
                    break
                except redis.ResponseError:
                    assert time.monotonic() < deadline, "Redis refused writes after its disk was freed"
                    time.sleep(0.1)


@pytest.mark.parametrize("kind", list(SAYS))
def test_redis_refusing_writes_for_a_while_loses_nothing_and_says_unavailable(
    kind: str, redis_url: str, tmp_path: Path
) -> None:
    """OOM on the tests' Redis; the full disk on a redis-server of its own whose data folder (AOF) is a
    4 MiB tmpfs; READONLY by REPLICAOF a port nobody listens on, then REPLICAOF NO ONE."""
    with contextlib.ExitStack() as stack:
        disk = None
        if kind == "disk-full":
            disk = stack.enter_context(small_disk(tmp_path / "disk"))
            server = RedisProcess(disk).start()
            stack.callback(server.stop)
            redis_url = server.url
        _refusals_under_play(kind, redis_url, tmp_path, disk)


def _refusals_under_play(kind: str, redis_url: str, tmp_path: Path, disk: Path | None) -> None:
    async def main() -> None:
        r = redis.Redis.from_url(redis_url)
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=("--lease-ms", "3000")) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta")
            runners = run_bots({"alpha": SlowRandom(0.02, 1), "beta": SlowRandom(0.02, 2)}, tokens, arena.gateway)
            ladder = LadderRunner(arena.redis_url, schedule=False)  # its threads live through the refusals too
            threads = ladder.start()
            ids = [(await call(admin.request_match, "shanghaien", ["alpha", "beta"], rated=True))[0] for _ in range(2)]

            async def under_way() -> bool:
                return all(int(r.xlen(keys.events(m))) > 20 for m in ids)

            await wait_for(under_way, 60, "the matches to get going")
            with refusing_writes(kind, r, disk):
                with pytest.raises(ArenaError) as refused:
                    await call(admin.request_match, "shanghaien", ["alpha", "beta"])
                assert refused.value.code == "UNAVAILABLE", refused.value
                assert SAYS[kind] in refused.value.message
                await asyncio.sleep(4)  # past the worker's heartbeat and lease renewals
            after, _ = await call(admin.request_match, "shanghaien", ["alpha", "beta"], rated=True)
            ids.append(after)  # claimed once writes are accepted again
            done = await finished(admin, ids, 120)
            assert {m.result.end_reason for m in done.values()} == {1}  # completed, no forfeit
            assert int(r.xlen(keys.results())) == 3
            assert await asyncio.to_thread(arena.live_workers) == 1  # its heartbeat goes on
            for match_id in ids:
                text, _ = await call(admin.transcript, match_id)
                assert not [e for e in map(json.loads, text.splitlines()) if e["type"] == "forfeit"]
                path = tmp_path / f"{match_id}.jsonl"
                path.write_text(text)
                assert transcripts.verify(path) is None

            async def rated() -> bool:
                return sum(s.row.games for s in ladder.ladder.leaderboard("shanghaien")) == 6

            await wait_for(rated, 30, "the ladder to apply the three results")
            before = ladder.ladder.snapshot("shanghaien")
            ladder.ladder.rebuild("shanghaien")
            assert ladder.ladder.snapshot("shanghaien") == before  # each result applied once, as a rebuild does
            ladder.stop(threads)
            for runner in runners:
                runner.stop()
            admin.close()
        r.close()

    asyncio.run(main())
