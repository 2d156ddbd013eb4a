"""Redis refusing writes for a while (``maxmemory`` reached: OOM) under running matches, with real
processes: the gateway, a worker process, bots through their sessions. Before, the worker's claim and
heartbeat loops died on the first OOM error while the process stayed up (matches stuck ``running``, new
ones never claimed) and clients got ``UNKNOWN: Unexpected <class 'redis.exceptions.OutOfMemoryError'>``.
Now every loop rides it out with back-off, calls get UNAVAILABLE saying the database is full, and the
matches go on and finish once writes are accepted again; the ladder (its consuming thread alive through
it) applies each result once, as a rebuild from the stored results does."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import redis

from arena import keys
from arena.errors import ArenaError
from arena.local.arena import LocalArena
from arena.local.ladder_runner import LadderRunner
from arena.service.client import ArenaClient
from referee import transcript as transcripts
from tests.helpers import SlowRandom, call, finished, register, run_bots, wait_for


def test_redis_out_of_memory_for_a_while_loses_nothing_and_says_unavailable(redis_url: str, tmp_path: Path) -> None:
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
            r.config_set("maxmemory", 1)  # every write refused: OOM command not allowed
            try:
                with pytest.raises(ArenaError) as refused:
                    await call(admin.request_match, "shanghaien", ["alpha", "beta"])
                assert refused.value.code == "UNAVAILABLE", refused.value
                assert "full (maxmemory)" in refused.value.message
                await asyncio.sleep(4)  # past the worker's heartbeat and lease renewals
            finally:
                r.config_set("maxmemory", 0)
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
