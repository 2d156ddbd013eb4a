"""Child processes' log files rotate by size (``arena.local.logsink``): a real child writing lines, and
the worker processes of a real local arena (``arena serve`` and ``arena local`` start them so)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from arena.local import logsink
from arena.local.arena import LocalArena
from arena.service.client import ArenaClient
from tests.helpers import FAST, SlowRandom, call, finished, register, run_bots

LINE = 99  # bytes a line, with its newline


def test_a_childs_lines_rotate_whole_and_only_the_newest_files_stay(tmp_path: Path) -> None:
    path = tmp_path / "child.log"
    code = f"import sys\nfor i in range(1000): print(f'{{i:06d}}' + 'x' * {LINE - 7})\nprint('err', file=sys.stderr)"
    process, log = logsink.spawn_logged([sys.executable, "-c", code], path, max_bytes=10 * LINE, backups=2)
    assert process.wait(30) == 0
    log.close()
    files = sorted(tmp_path.iterdir())
    assert [f.name for f in files] == ["child.log", "child.log.1", "child.log.2"]  # the oldest dropped
    for f in files:
        assert f.stat().st_size <= 10 * LINE
    kept = [line for f in (path.with_name("child.log.2"), path.with_name("child.log.1"), path)
            for line in f.read_text().splitlines()]  # fmt: skip
    assert kept[-1] == "err"  # stderr too
    numbers = [int(line[:6]) for line in kept[:-1]]
    assert numbers == list(range(numbers[0], 1000)) and all(len(line) == LINE - 1 for line in kept[:-1])


def test_a_local_arenas_worker_logs_rotate(redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, a worker's log grew without end (DATA/logs/worker-I.log under ``arena serve``)."""
    monkeypatch.setattr(logsink, "MAX_BYTES", 2_000)

    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta")
            runners = run_bots({"alpha": SlowRandom(0, 1), "beta": SlowRandom(0, 2)}, tokens, arena.gateway)
            ids = [(await call(admin.request_match, "shanghaien", ["alpha", "beta"]))[0] for _ in range(3)]
            await finished(admin, ids, 120)
            for r in runners:
                r.stop()
            admin.close()

    asyncio.run(main())
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert "worker-0.log.1" in logs, logs
    assert len([n for n in logs if n.startswith("worker-0.log")]) <= 1 + logsink.BACKUPS
