"""The replicated Redis layout's start scripts (deploy/redis-server.sh, deploy/redis-sentinel.sh), which
deploy/compose.yaml and deploy/k8s/ run, started as they are on loopback: three servers and three sentinels
form a set the arena's Sentinel URL reaches with the deploy's passwords; the website's user reads and
cannot write; a killed primary is replaced, and started again by its script it comes back as a replica of
the new primary (it asks the sentinels), never as a second primary. And the deploy checks
(deploy/check_public.py, deploy/check_operations.py) fail each mistake in the set's wiring."""

from __future__ import annotations

import copy
import importlib.util
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml  # type: ignore[import-untyped]

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


# ---------------------------------------------------------------------- the deploy rules for the set


def _check_public() -> Any:
    spec = importlib.util.spec_from_file_location("check_public", ROOT / "deploy" / "check_public.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_public_rules_catch_a_redis_set_wired_wrong() -> None:
    """deploy/check_public.py passes on the shipped replicated layout and fails each mistake that would
    leave a server or a sentinel open, let a process bypass the sentinels (a fixed address stops working at
    the first failover), or give the website more than reading."""
    check = _check_public()
    assert check.structured_problems(yaml) == [] and check.script_problems() == []

    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    broken = copy.deepcopy(compose)
    broken["services"]["worker"]["environment"]["ARENA_REDIS_URL"] = "redis://:${REDIS_PASSWORD:?x}@redis-0:6379/0"
    broken["services"]["redis-1"]["environment"]["SENTINEL_PASSWORD"] = "${SENTINEL_PASSWORD}"
    del broken["services"]["sentinel-2"]
    found = check.compose_problems(broken)
    assert any("worker's ARENA_REDIS_URL is not the Sentinel URL" in p for p in found), found
    assert any("redis-1's SENTINEL_PASSWORD may be empty" in p for p in found), found
    assert any("3 Redis servers and 2 sentinels" in p for p in found), found

    resources = yaml.safe_load((ROOT / "deploy" / "k8s" / "kustomization.yaml").read_text())["resources"]
    docs = [d for r in resources for d in yaml.safe_load_all((ROOT / "deploy" / "k8s" / r).read_text()) if d]
    assert check.k8s_problems(docs) == []

    def named(kind: str, name: str) -> Any:
        return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)

    ladder = named("Deployment", "ladder")["spec"]["template"]["spec"]["containers"][0]
    url = next(e for e in ladder["env"] if e["name"] == "ARENA_REDIS_URL")
    url["value"] = "redis://:$(REDIS_PASSWORD)@redis-0.redis:6379/0"
    sentinel = named("StatefulSet", "sentinel")["spec"]["template"]["spec"]["containers"][0]
    sentinel["env"] = [e for e in sentinel["env"] if e["name"] != "SENTINEL_PASSWORD"]
    named("NetworkPolicy", "sentinel-from-arena-only")["spec"]["ingress"][0]["from"] = [{"namespaceSelector": {}}]
    found = check.k8s_problems(docs)
    assert any("ladder's ARENA_REDIS_URL is not the Sentinel URL" in p for p in found), found
    assert any("sentinel's SENTINEL_PASSWORD is not the Secret arena-redis's sentinel-password" in p for p in found)
    assert any("sentinel-from-arena-only: sentinel:26379 admits other namespaces" in p for p in found), found

    server = (ROOT / "deploy" / "redis-server.sh").read_text()
    sentinel_script = (ROOT / "deploy" / "redis-sentinel.sh").read_text()
    found = check.script_problems(server.replace(" REDIS_WEB_PASSWORD SENTINEL_PASSWORD; do", " SENTINEL_PASSWORD; do")
                                  .replace("--min-replicas-to-write 1 ", ""),
                                  sentinel_script.replace('requirepass "$SENTINEL_PASSWORD"', ""))  # fmt: skip
    assert any("a server would start with an empty password" in p for p in found), found
    assert any("no --min-replicas-to-write 1" in p for p in found), found
    assert any("the sentinels take no password" in p for p in found), found


def test_the_operating_rules_catch_a_redis_set_that_one_machine_could_take_down() -> None:
    """deploy/check_operations.py: fewer than three servers or sentinels, two on one node, no PDB for the
    set, or KEDA on a fixed Redis address each fail it."""
    spec = importlib.util.spec_from_file_location("check_operations", ROOT / "deploy" / "check_operations.py")
    assert spec is not None and spec.loader is not None
    ops: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ops)
    docs = copy.deepcopy(ops.k8s_docs())
    assert ops.k8s_problems(docs) == []

    def workload(name: str) -> Any:
        return next(d for d in docs["base"] if d["kind"] == "StatefulSet" and d["metadata"]["name"] == name)

    workload("redis")["spec"]["replicas"] = 2
    workload("sentinel")["spec"]["template"]["spec"].pop("affinity")
    docs["base"] = [d for d in docs["base"] if (d["kind"], d["metadata"]["name"]) != ("PodDisruptionBudget", "redis")]
    trigger = next(d for d in docs["keda"] if d["kind"] == "ScaledObject")["spec"]["triggers"][0]
    trigger.update(type="redis-streams", metadata={**trigger["metadata"], "address": "redis-0.redis:6379"})
    found = ops.k8s_problems(docs)
    assert any("k8s redis: 2 replica(s); the Redis set needs 3" in p for p in found), found
    assert any("k8s sentinel: no required pod anti-affinity on kubernetes.io/hostname" in p for p in found), found
    assert any("k8s redis: 2 replicas and no PodDisruptionBudget" in p for p in found), found
    assert any("components/keda: a Redis trigger not through the sentinels" in p for p in found), found
