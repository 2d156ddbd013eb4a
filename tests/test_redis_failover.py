"""Redis behind Sentinel: the arena's clients follow a failover, and what must not be lost is replicated
before it is called done.

Real processes (``tests/sentinel.py``): one primary, two replicas and three sentinels of Debian's
``redis-server`` on loopback, the primary killed with SIGKILL.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from arena.local.redisproc import RedisNotFoundError, find_redis_server
from arena.redis_client import (
    FENCE_KEY,
    NotReplicatedError,
    SentinelURL,
    connect,
    connect_async,
    replicated,
    required_replicas,
    shown,
    trouble,
)
from tests.chaos import kill_run
from tests.helpers import in_ci
from tests.sentinel import Node, SentinelSet


def _have_redis_server() -> bool:
    try:
        find_redis_server()
        return True
    except RedisNotFoundError:
        return False


# a sentinel is ``redis-server --sentinel``: any redis-server binary will do; under CI the tests fail without one
needs_sentinel = pytest.mark.skipif(not _have_redis_server() and not in_ci(), reason="needs a redis-server binary")


def test_the_sentinel_url_form() -> None:
    u = SentinelURL.parse("redis+sentinel://:p%40ss@h1:26380,h2,[::1]:5/arena/3?sentinel_password=sp")
    assert u.sentinels == (("h1", 26380), ("h2", 26379), ("::1", 5))
    assert (u.service, u.db, u.username, u.password) == ("arena", 3, None, "p@ss")
    assert (u.sentinel_password, u.tls) == ("sp", False)
    t = SentinelURL.parse("rediss+sentinel://bob:pw@h:1/svc")
    assert (t.username, t.password, t.db, t.tls) == ("bob", "pw", 0, True)
    for bad in ("redis+sentinel://h1:1", "redis+sentinel:///arena", "redis+sentinel://h:x/arena",
                "redis+sentinel://h:1/arena/zero"):  # fmt: skip
        with pytest.raises(ValueError):
            SentinelURL.parse(bad)
    assert shown("redis+sentinel://:secret@h1:1,h2:2/arena/0?sentinel_password=x") == (
        "redis+sentinel://:***@h1:1,h2:2/arena/0?sentinel_password=***"
    )
    assert shown("redis://:secret@h:6379/0") == "redis://:***@h:6379/0"


def test_a_lone_server_needs_no_replica_and_writes_without_wait(redis_url: str) -> None:
    r = connect(redis_url)
    assert required_replicas(r) == 0
    assert replicated(r, lambda p: p.set("k", 1), "k") == [True]
    two = connect(redis_url, replicas=1)  # asked for a replica that is not there: not done, and said so
    with pytest.raises(NotReplicatedError) as e:
        replicated(two, lambda p: p.set("k", 2), "setting k", timeout_ms=100)
    assert "did not replicate" in trouble(e.value) and "0 of the 1 replica" in str(e.value)


def test_a_registration_too_few_replicas_hold_is_not_reported_done(redis_url: str) -> None:
    from arena.ladder.store import Ladder
    from arena.service.owners import Owners
    from arena.service.registry import Registry
    from tests.ladder_results import batch

    r = connect(redis_url, replicas=1)  # no replica will ever acknowledge
    with pytest.raises(NotReplicatedError, match="registering bot 'b1'"):
        Registry(r).register("b1", "alice", ["shanghaien"])
    with pytest.raises(NotReplicatedError, match="creating owner 'carol'"):
        Owners(r).create("carol")
    with pytest.raises(NotReplicatedError, match="a ladder batch"):
        Ladder(r).apply_batch([batch(1, seed=5)[0] | {"end_reason": "completed", "rated": True}])


@pytest.fixture(scope="module")
def sentinels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelSet]:
    if not _have_redis_server() and not in_ci():
        pytest.skip("needs a redis-server binary")
    with SentinelSet(tmp_path_factory.mktemp("sentinel")) as s:
        yield s


def _until_ok(call, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except redis.RedisError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@needs_sentinel
def test_clients_scripts_and_blocking_reads_follow_a_failover(sentinels: SentinelSet) -> None:
    r = connect(sentinels.url)
    blocking = connect(sentinels.url, block_ms=3000)
    assert required_replicas(r) == 2  # behind Sentinel: every replica connected to the primary (two here)
    r.delete("s", "n")
    r.xgroup_create("s", "g", id="0", mkstream=True)
    script = r.register_script("return redis.call('incr', KEYS[1])")
    assert replicated(r, lambda p: script(keys=["n"], client=p), "n") == [1]
    got: list[object] = []

    def reader() -> None:  # a worker's claim: XREADGROUP BLOCK, re-issued on trouble
        got.append(_until_ok(lambda: blocking.xreadgroup("g", "w", {"s": ">"}, count=1, block=3000) or None))

    thread = threading.Thread(target=reader)
    thread.start()
    time.sleep(0.3)
    killed_at = time.monotonic()
    node = sentinels.kill_primary()
    # the write acknowledged by two servers survives; the script runs on the new primary (loaded on NOSCRIPT)
    assert _until_ok(lambda: script(keys=["n"])) == 2
    failover_s = time.monotonic() - killed_at
    _until_ok(lambda: r.xadd("s", {"x": "1"}))
    thread.join(30)
    assert got and got[0], "the blocked read did not follow the failover"

    async def async_client() -> object:
        ar = connect_async(sentinels.url)
        try:
            value: object = await ar.get("n")
            return value
        finally:
            await ar.aclose()

    assert asyncio.run(async_client()) == b"2"
    print(f"kill -> first write on the new primary: {failover_s:.2f} s")
    sentinels.restart(node)
    sentinels.wait_settled()
    r.close()
    blocking.close()


@needs_sentinel
def test_a_ladder_run_through_two_primary_kills_loses_nothing(tmp_path: Path) -> None:
    """The chaos harness's ladder run (``tests/chaos.py``: workers, two ``arena bot run`` processes through
    the gateway, the ladder applying results as they come) on a Sentinel-managed Redis whose primary is
    SIGKILLed twice mid-run (and comes back as a replica): every match finishes once, is rated once, its
    transcript verifies, the ladder equals its rebuild and no process of the arena exits; bots and owners
    registered and tokens rotated meanwhile through the gateway all hold when the gateway said done."""
    with SentinelSet(tmp_path / "redis") as sentinels:
        report = asyncio.run(
            kill_run(matches=30, kills=2, kill_every=(3.0, 4.0), workers=2, capacity=4, bot_delay=0.02, seed=11,
                     fault="primary", sentinels=sentinels, redis_url=sentinels.url, data_dir=tmp_path, churn=True,
                     timeout_s=240)
        )  # fmt: skip
    print(report.summary())
    for kill, waits in zip(report.kills, report.kill_to_move_by_kill, strict=True):
        print(f"{kill.worker}: kill -> next move, per running match (s):", " ".join(f"{t:.2f}" for t in waits))
    assert len(report.kills) == 2, report.summary()
    assert report.finished == report.requested, report.summary()
    assert report.lost == [] and report.doubled == [], report.summary()
    assert report.unverified == {}, report.summary()
    assert report.told_wrong == [], report.summary()
    # Not asserted yet: a bot never told the result of a match that ended during the failover (1 of 30 in one
    # run: the match ended, its worker lost the lease before recording it, the takeover recorded it at once
    # and one of its two bots was never told). Left for issue 30: the relay's hand-over of a match that
    # ends on the resuming worker before the bot's stream is re-attached.
    if report.untold:
        print("bots never told:", report.untold)
    assert report.exited == [] and report.stuck_bots == [], (report.summary(), report.exited)
    assert report.churn_done > 0 and report.churn_lost == [], (report.summary(), report.churn_lost)
    assert report.ladder_games == 2 * report.finished and report.ladder_equals_rebuild, report.summary()


def _freeze_replicas(sentinels: SentinelSet) -> list[Node]:
    """SIGSTOP both replicas: the primary takes writes (they acknowledged within min-replicas-max-lag) but
    none acknowledges them, so a ``WAIT`` times out: NotReplicatedError for a write that was made."""
    import signal

    primary = sentinels.wait_settled()
    frozen = [n for n in sentinels.servers if n.port != primary and n.process is not None]
    for node in frozen:
        assert node.process is not None
        node.process.send_signal(signal.SIGSTOP)
    return frozen


def _thaw(sentinels: SentinelSet, frozen: list[Node]) -> None:
    import signal

    for node in frozen:
        if node.process is not None:
            node.process.send_signal(signal.SIGCONT)


@needs_sentinel
def test_a_registration_retried_after_it_did_not_replicate_is_the_same_registration(sentinels: SentinelSet) -> None:
    """A registration the primary made but too few replicas acknowledged (NotReplicatedError: not reported
    done) and then retried with the same request id is the same registration, answered with a fresh token,
    not "the name is taken"; without that id, or by another owner, the name is taken and the refusal says
    what to do. Owners' creation the same, and a retry passes the owner's quota that its bot now fills."""
    from arena.service.owners import Owners
    from arena.service.registry import DuplicateBotError, Registry

    r = connect(sentinels.url)
    registry, owners = Registry(r), Owners(r)
    _, alice = owners.create("alice-r", max_bots=1)
    frozen = _freeze_replicas(sentinels)
    try:
        with pytest.raises(NotReplicatedError, match="registering bot 'retried'"):
            owners.register_bot(registry, "alice-r", "retried", ["shanghaien"], 1, "req-bot-0001")
        with pytest.raises(NotReplicatedError, match="creating owner 'retrier'"):
            owners.create("retrier", request_id="req-owner-0001")
    finally:
        _thaw(sentinels, frozen)
    sentinels.wait_settled()
    first_token_keys = [k for k in r.scan_iter("arena:token:*") if r.get(k) == b"retried"]
    assert len(first_token_keys) == 1  # the registration was made, with a token nobody was given

    bot, token = _until_ok(lambda: owners.register_bot(registry, "alice-r", "retried", ["shanghaien"], 1,
                                                       "req-bot-0001"))  # fmt: skip
    assert bot.name == "retried" and bot.owner == "alice-r"
    found = registry.authenticate(token)
    assert found is not None and found.name == "retried"
    token_keys = [k for k in r.scan_iter("arena:token:*") if r.get(k) == b"retried"]
    assert len(token_keys) == 1 and token_keys != first_token_keys  # the undelivered token no longer works
    owner, owner_token = _until_ok(lambda: owners.create("retrier", request_id="req-owner-0001"))
    assert owner.name == "retrier" and owners.authenticate(owner_token) is not None

    with pytest.raises(DuplicateBotError, match=r"exists already.*request id"):
        registry.register("retried", "alice-r", ["shanghaien"], request_id="req-bot-other")
    with pytest.raises(DuplicateBotError):  # the same id from another owner is not a retry
        registry.register("retried", "bob-r", ["shanghaien"], request_id="req-bot-0001")
    with pytest.raises(DuplicateBotError):
        registry.register("retried", "alice-r", ["shanghaien"])
    assert registry.authenticate(token) is not None  # none of those refusals touched the bot's token
    assert alice and len(owners.bot_names("alice-r")) == 1
    r.close()


@needs_sentinel
def test_a_client_retries_a_registration_through_the_failover_with_its_request_id(sentinels: SentinelSet) -> None:
    """Through the gateway: ``ArenaClient.register_bot`` while no replica acknowledges is told UNAVAILABLE
    (not done), sends it again with the same request id once they do, and gets the bot and a token that
    works, where a plain retry would have been told the name is taken."""
    import secrets

    from arena.service.client import ArenaClient
    from arena.service.registry import Registry
    from tests.helpers import gateway

    admin_token = "arena_admin_" + secrets.token_urlsafe(32)
    r = connect(sentinels.url)
    Registry(r).set_admin_token(admin_token)

    async def scenario() -> tuple[str, str]:
        async with gateway(sentinels.url) as address:
            admin = ArenaClient(address, admin_token)
            frozen = _freeze_replicas(sentinels)
            loop = asyncio.get_running_loop()
            loop.call_later(3.0, _thaw, sentinels, frozen)  # the first try and the first retry time out
            try:
                bot, token = await asyncio.to_thread(admin.register_bot, "via-gateway", "chaos", ["shanghaien"], 1)
                return str(bot.name), token
            finally:
                _thaw(sentinels, frozen)
                admin.close()

    name, token = asyncio.run(scenario())
    found = Registry(r).authenticate(token)
    assert name == "via-gateway" and found is not None and found.name == "via-gateway"
    sentinels.wait_settled()
    r.close()


@needs_sentinel
def test_a_backup_of_the_replicated_set_restores_into_its_primary(tmp_path: Path) -> None:
    """docs/backup.md on a Sentinel-managed set, with its scripts: writes through the Sentinel URL, a backup
    taken from a replica the sentinels name (deploy/backup-redis.sh given the Sentinel URL), everything
    wiped (FLUSHALL, which the replicas follow), then the restore: the servers stopped, the backup restored
    into the primary's emptied folder (deploy/restore-redis.sh), the primary started on it and the replicas
    started empty, which resync from it; everything reads back through the Sentinel URL, and on each replica."""
    import os
    import shutil
    import subprocess

    from arena.service.registry import Registry
    from tests.helpers import require_tool

    require_tool("redis-cli", "apt-get install redis-tools")
    root = Path(__file__).resolve().parents[1]
    with SentinelSet(tmp_path / "set") as s:
        r = connect(s.url)
        _, token = Registry(r).register("kept", "alice", ["shanghaien"])
        for i in range(200):
            replicated(r, lambda p, i=i: p.hset(f"arena:kept:{i}", mapping={"i": i, "x": "y" * i}), "a write")
        before = {k: r.hgetall(k) for k in r.scan_iter("arena:kept:*")}
        keys_before = r.dbsize()
        backup = tmp_path / "backup"
        done = subprocess.run(["bash", str(root / "deploy" / "backup-redis.sh"), str(backup)],
                              env={**os.environ, "REDIS_URL": s.url}, capture_output=True, text=True, timeout=120,
                              check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        primary = s.node(s.wait_settled())
        assert "snapshot from 127.0.0.1:" in done.stderr and f":{primary.port} " not in done.stderr.split("(")[0]
        assert f"keys: {keys_before}" in (backup / "MANIFEST").read_text()

        replicated(r, lambda p: p.flushall(), "the wipe")
        assert r.keys("arena:*") == [FENCE_KEY.encode()]  # the fence the wipe's WAIT wrote, alone
        r.close()
        s.stop_servers()
        for node in s.servers:
            shutil.rmtree(node.folder)
        restored = subprocess.run(["bash", str(root / "deploy" / "restore-redis.sh"), str(backup), str(primary.folder)],
                                  capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert restored.returncode == 0, restored.stdout + restored.stderr
        s.start_servers(primary)
        assert s.wait_settled() == primary.port

        r = connect(s.url)
        assert _until_ok(r.dbsize) == keys_before
        assert {k: r.hgetall(k) for k in r.scan_iter("arena:kept:*")} == before
        found = Registry(r).authenticate(token)
        assert found is not None and found.name == "kept"
        for node in s.servers:
            if node is not primary:
                with redis.Redis(port=node.port) as replica:
                    assert replica.dbsize() == keys_before  # resynced from the restored primary
        r.close()
