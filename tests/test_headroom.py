"""Redis's memory headroom: read from a real redis-server with a small maxmemory, a warning past 80 %,
and what happens past 100 % with noeviction (writes refused, reads served: the reason for the warning)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from structlog.testing import capture_logs

from arena.local.redisproc import RedisProcess
from arena.service import headroom


def test_the_headroom_warns_before_noeviction_refuses_writes(tmp_path: Path) -> None:
    server = RedisProcess(tmp_path / "data").start()
    r = redis.Redis.from_url(server.url)
    try:
        base = headroom.read(r)
        assert base.maxmemory == 1024**3 and base.fraction is not None  # deploy/redis.conf's cap
        r.config_set("maxmemory", base.used + 4 * 1024 * 1024)  # 4 MiB of room
        with capture_logs() as logs:
            assert headroom.check(r).fraction < headroom.WARN_AT  # type: ignore[operator]
        assert logs == []
        blob = b"x" * 100_000
        i = 0
        while (headroom.read(r).fraction or 0) < 0.85:
            r.set(f"fill:{i}", blob)
            i += 1
        with capture_logs() as logs:
            h = headroom.check(r)
        assert h.fraction is not None and h.fraction >= 0.85
        assert [e["log_level"] for e in logs] == ["warning"] and "nearly full" in logs[0]["event"]
        assert logs[0]["maxmemory_bytes"] == h.maxmemory
        with pytest.raises(redis.exceptions.OutOfMemoryError):  # noeviction: past the cap, writes fail
            while True:
                r.set(f"fill:{i}", blob)
                i += 1
        assert r.get("fill:0") == blob  # nothing was evicted
        r.config_set("maxmemory", 0)
        with capture_logs() as logs:
            assert headroom.check(r, uncapped_warned=False).fraction is None
        assert "no maxmemory" in logs[0]["event"]
    finally:
        r.close()
        server.stop()
