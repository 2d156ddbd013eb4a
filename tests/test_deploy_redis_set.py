"""The replicated Redis layout's start scripts (deploy/redis-server.sh, deploy/redis-sentinel.sh), which
deploy/compose.yaml and deploy/k8s/ run, started as they are on loopback: three servers and three sentinels
form a set the arena's Sentinel URL reaches with the deploy's passwords; the website's user reads and
cannot write; a killed primary is replaced, and started again by its script it comes back as a replica of
the new primary (it asks the sentinels), never as a second primary."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from arena.local.redisproc import RedisNotFoundError, find_redis_server, free_port
from arena.redis_client import connect, replicated
from tests.helpers import in_ci, require_tool

ROOT = Path(__file__).resolve().parents[1]
PASSWORD, WEB_PASSWORD, SENTINEL_PASSWORD = "serverpw1", "webpw2", "sentinelpw3"


def _have_redis() -> bool:
    try:
        find_redis_server()
        return True
    except RedisNotFoundError:
        return False


class DeploySet:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.servers = [f"127.0.0.1:{free_port()}" for _ in range(3)]
        self.sentinels = [f"127.0.0.1:{free_port()}" for _ in range(3)]
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.env = {**os.environ, "REDIS_PASSWORD": PASSWORD, "REDIS_WEB_PASSWORD": WEB_PASSWORD,
                    "SENTINEL_PASSWORD": SENTINEL_PASSWORD, "REDIS_FIRST": self.servers[0],
                    "SENTINELS": ",".join(self.sentinels), "SENTINEL_DOWN_AFTER_MS": "1000",
                    "SENTINEL_FAILOVER_TIMEOUT_MS": "3000",
                    "REDIS_CONF": str(ROOT / "deploy" / "redis.conf")}  # fmt: skip

    def url(self, user: str = "", password: str = PASSWORD) -> str:
        return f"redis+sentinel://{user}:{password}@{','.join(self.sentinels)}/arena/0?sentinel_password={SENTINEL_PASSWORD}"

    def start_server(self, address: str) -> None:
        data = self.folder / address.replace(":", "-")
        data.mkdir(parents=True, exist_ok=True)
        self.processes[address] = subprocess.Popen(
            ["sh", str(ROOT / "deploy" / "redis-server.sh"), "--dir", str(data), "--bind", "127.0.0.1",
             "--logfile", str(data / "redis.log"), "--repl-diskless-sync-delay", "0"],
            env={**self.env, "REDIS_SELF": address, "REDIS_RUN_DIR": str(data)}, stderr=open(data / "start.log", "ab"),  # noqa: SIM115
        )  # fmt: skip
        self._answers(address, PASSWORD)

    def start_sentinel(self, address: str) -> None:
        data = self.folder / address.replace(":", "-")
        self.processes[address] = subprocess.Popen(
            ["sh", str(ROOT / "deploy" / "redis-sentinel.sh")],
            env={**self.env, "SENTINEL_SELF": address, "SENTINEL_DIR": str(data)},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._answers(address, SENTINEL_PASSWORD)

    def _answers(self, address: str, password: str) -> None:
        deadline = time.monotonic() + 15
        host, port = address.split(":")
        while time.monotonic() < deadline:
            assert self.processes[address].poll() is None, f"{address} exited; see {self.folder}"
            try:
                with redis.Redis(host, int(port), password=password, socket_timeout=1) as r:
                    if r.ping():
                        return
            except redis.RedisError:
                time.sleep(0.05)
        raise TimeoutError(address)

    def primary(self) -> str | None:
        seen: list[str] = []
        for s in self.sentinels:
            host, port = s.split(":")
            try:
                with redis.Redis(host, int(port), password=SENTINEL_PASSWORD, socket_timeout=1) as r:
                    addr = r.sentinel_get_master_addr_by_name("arena")
                    if addr:
                        seen.append(f"{addr[0].decode() if isinstance(addr[0], bytes) else addr[0]}:{addr[1]}")
            except redis.RedisError:
                continue
        best = max(set(seen), key=seen.count, default=None)
        return best if best and seen.count(best) >= 2 else None

    def role(self, address: str) -> str:
        host, port = address.split(":")
        with redis.Redis(host, int(port), password=PASSWORD, socket_timeout=2) as r:
            info = r.info("replication")
            return f"{info['role']} of {info.get('master_host')}:{info.get('master_port')}"

    def stop(self) -> None:
        for p in self.processes.values():
            p.send_signal(signal.SIGTERM)
        for p in self.processes.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture
def deploy_set(tmp_path: Path) -> Iterator[DeploySet]:
    if not _have_redis() and not in_ci():
        pytest.skip("needs a redis-server binary")
    require_tool("redis-cli", "apt-get install redis-tools")
    s = DeploySet(tmp_path)
    try:
        for address in s.servers:
            s.start_server(address)
        for address in s.sentinels:
            s.start_sentinel(address)
        yield s
    finally:
        s.stop()


def _until(check, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
            if value:
                return value
        except redis.RedisError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("not in time")
        time.sleep(0.2)


def test_the_deploy_scripts_make_a_set_that_fails_over_and_takes_its_old_primary_back(deploy_set: DeploySet) -> None:
    s = deploy_set
    first = s.servers[0]
    assert _until(lambda: s.primary() == first)
    r = connect(s.url())
    _until(lambda: replicated(r, lambda p: p.set("arena:kept", "1"), "a write"))
    web = connect(s.url("web", WEB_PASSWORD))
    assert web.get("arena:kept") == b"1"
    with pytest.raises(redis.exceptions.NoPermissionError):
        web.set("arena:kept", "2")
    with pytest.raises(redis.RedisError):  # the servers and the sentinels take passwords
        connect(s.url(password="wrong")).get("arena:kept")

    s.processes[first].kill()
    s.processes[first].wait()
    new = _until(lambda: (p := s.primary()) and p != first and p)
    assert _until(lambda: r.get("arena:kept")) == b"1"  # the clients followed
    s.start_server(first)  # the same script, the same REDIS_FIRST: it asks the sentinels first
    assert _until(lambda: s.role(first) == f"slave of {new}")
    _until(lambda: replicated(r, lambda p: p.set("arena:after", "1"), "a write"))
    assert s.primary() == new and r.get("arena:after") == b"1"
    log = (s.folder / first.replace(":", "-") / "start.log").read_text()
    assert f"starts as a replica of {new}" in log, log
    r.close()
    web.close()
