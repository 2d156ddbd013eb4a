"""Backup and restore as docs/backup.md says, with its scripts (deploy/backup-redis.sh and
deploy/restore-redis.sh): real matches on a real redis-server (AOF + RDB, password), some transcripts
archived, a backup, a restore into a fresh folder and a fresh redis-server: every match, result,
transcript (from Redis or the archive) and ladder standing is back."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import redis

from arena import keys
from arena.ladder.store import Ladder
from arena.local.arena import LocalArena
from arena.local.redisproc import RedisProcess
from arena.service.archive import Archiver, TranscriptArchive
from arena.service.client import ArenaClient
from arena.service.matches import MatchStore
from tests.helpers import FAST, SlowRandom, call, finished, register, require_tool, run_bots

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "backup-test-password"


def _everything(r: Any, archive: TranscriptArchive) -> dict[str, Any]:
    """What a restore must give back: each match's record and transcript, the results, the ladder."""
    ids = sorted(keys.text(m) for m in r.zrange(keys.matches_by_time(), 0, -1))
    store = MatchStore(r, archive=archive)
    ladder = Ladder(r)
    return {
        "records": {m: r.hgetall(keys.match(m)) for m in ids},
        "transcripts": {m: store.transcript(m) for m in ids},
        "results": [fields for _, fields in r.xrange(keys.results())],
        "ladder": [
            (s.row.name, s.row.version, round(s.row.rating, 6), s.row.games) for s in ladder.leaderboard("shanghaien")
        ],
        "bots": r.smembers(keys.bots()),
    }


def test_a_backup_restores_into_a_fresh_redis_with_every_match(tmp_path: Path) -> None:
    require_tool("redis-cli", "apt-get install redis-tools")
    server = RedisProcess(tmp_path / "redis", password=PASSWORD).start()
    archive = TranscriptArchive(tmp_path / "archive")
    try:

        async def play(arena: LocalArena, admin: ArenaClient, n: int) -> list[str]:
            ids = [(await call(admin.request_match, "shanghaien", ["alpha", "beta"], rated=True))[0] for _ in range(n)]
            await finished(admin, ids, 120)
            return ids

        async def main() -> None:
            async with LocalArena(tmp_path / "arena", workers=1, redis_url=server.url, worker_args=FAST,
                                  archive=archive) as arena:  # fmt: skip
                admin = ArenaClient(arena.gateway, arena.admin_token)
                tokens = await register(admin, "alpha", "beta")
                runners = run_bots({"alpha": SlowRandom(0, 1), "beta": SlowRandom(0, 2)}, tokens, arena.gateway)
                await play(arena, admin, 3)
                r = redis.Redis.from_url(server.url)
                assert (await call(Archiver(r, archive, 0.0).run_pass, time.time() + 1)).archived == 3
                await play(arena, admin, 2)  # these stay in Redis
                await call(Ladder(r).sync)
                r.close()
                for runner in runners:
                    runner.stop()
                admin.close()

        asyncio.run(main())
        r = redis.Redis.from_url(server.url)
        before = _everything(r, archive)
        assert len(before["records"]) == 5 and all(before["transcripts"].values())
        assert sum(1 for rec in before["records"].values() if b"archived_at" in rec) == 3
        assert before["ladder"] and all(games == 5 for *_, games in before["ladder"])

        env = {**os.environ, "REDIS_URL": server.url, "REDIS_DIR": str(server.data_dir)}
        backup = tmp_path / "backup"
        done = subprocess.run(["bash", str(ROOT / "deploy" / "backup-redis.sh"), str(backup), str(archive.root)],
                              env=env, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert (backup / "dump.rdb").is_file() and len(list((backup / "archive").rglob("*.jsonl.gz"))) == 3
        manifest = (backup / "MANIFEST").read_text()
        assert f"keys: {r.dbsize()}" in manifest
        r.close()
    finally:
        server.stop()

    # a different machine: a fresh data folder, a fresh archive folder, then the usual redis-server on them
    fresh, fresh_archive = tmp_path / "fresh-redis", tmp_path / "fresh-archive"
    done = subprocess.run(["bash", str(ROOT / "deploy" / "restore-redis.sh"), str(backup), str(fresh),
                           str(fresh_archive)], capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (fresh / "appendonlydir").is_dir() and (fresh / "dump.rdb").is_file()
    again = subprocess.run(["bash", str(ROOT / "deploy" / "restore-redis.sh"), str(backup), str(fresh)],
                           capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert again.returncode == 2 and "already holds Redis data" in again.stderr  # never over live data

    restored = RedisProcess(fresh, password=PASSWORD).start()  # appendonly yes: it loads the new AOF
    try:
        r = redis.Redis.from_url(restored.url)
        after = _everything(r, TranscriptArchive(fresh_archive))
        assert after == before
        r.close()
    finally:
        restored.stop()
    shutil.rmtree(fresh_archive)
    corrupt = tmp_path / "corrupt"
    shutil.copytree(backup, corrupt)
    with open(corrupt / "dump.rdb", "ab") as f:
        f.write(b"x")
    bad = subprocess.run(["bash", str(ROOT / "deploy" / "restore-redis.sh"), str(corrupt), str(tmp_path / "r3")],
                         capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert bad.returncode == 1 and "does not match its MANIFEST" in bad.stderr
