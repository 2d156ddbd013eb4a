"""The metrics tell the truth: real processes scraped over HTTP and parsed with prometheus_client's own
text parser. Each process exports the families docs/operations.md says it does (and none of the others),
every labelled family has its series from the start, the figures move when matches are queued and
played, the listener stays on the service's host, and /healthz and / are not the metrics page.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from arena import keys, metrics
from arena.local.arena import arena_command
from arena.local.ladder_runner import LadderLagCollector
from arena.local.redisproc import RedisProcess, free_port
from arena.service.client import ArenaClient
from arena.service.queue import QueueCollector

DOCS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


# ---------------------------------------------------------------------- helpers


def documented() -> dict[str, set[str]]:
    """docs/operations.md's table: family -> the process kinds it names."""
    rows: dict[str, set[str]] = {}
    for line in DOCS.read_text().splitlines():
        m = re.match(r"\| `(arena_[a-z_]+)` \| \w+ \| ([a-z, ]+) \|", line)
        if m:
            rows[m.group(1)] = {k.strip() for k in m.group(2).split(",")}
    return rows


def get(url: str) -> tuple[int, str, str]:
    """(status, content type, body) of a GET; 5xx answers too."""
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def scrape(port: int) -> Samples:
    """Every sample of ``/metrics`` by family (counters named without ``_total``, as the parser names them)."""
    status, _, text = get(f"http://127.0.0.1:{port}/metrics")
    assert status == 200
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        series = out.setdefault(family.name, {})
        for s in family.samples:
            if not s.name.endswith("_created"):
                series[(s.name, *sorted(s.labels.items()))] = s.value  # type: ignore[arg-type]
    return out


def healthy(port: int) -> Callable[[], bool]:
    return lambda: get(f"http://127.0.0.1:{port}/healthz")[0] == 200


def value(samples: Samples, family: str, sample: str | None = None, **labels: str) -> float:
    key = (sample or family, *sorted(labels.items()))
    assert key in samples.get(family, {}), f"no sample {key} in {family}: {samples.get(family)}"
    return samples[family][key]  # type: ignore[index]


def arena_families(samples: Samples) -> set[str]:
    return {name for name in samples if name.startswith("arena_")}


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (OSError, AssertionError) as e:
            last = e
        else:
            if last:
                return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def consecutive_free_ports(n: int) -> int:
    """A port P such that P..P+n-1 are free on loopback now."""
    for _ in range(200):
        base = free_port()
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {n} consecutive free ports")


def listening_addresses(port: int) -> set[str]:
    """The local IPv4/IPv6 addresses a socket LISTENs on ``port`` (Linux's /proc/net/tcp*)."""
    found: set[str] = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, hexport = local.split(":")
            if state == "0A" and int(hexport, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(addr)
                if width == 8:
                    found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:
                    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                    found.add(socket.inet_ntop(socket.AF_INET6, words))
    return found


def start(*argv: str, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    f = log.open("ab")
    return subprocess.Popen(arena_command(*argv), stdout=f, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    stop(started)


WORKER_ONLY = metrics.family_names(metrics.WORKER) - metrics.family_names(metrics.GATEWAY)
GATEWAY_ONLY = metrics.family_names(metrics.GATEWAY) - metrics.family_names(metrics.WORKER)
LADDER_ONLY = metrics.family_names(metrics.LADDER) - metrics.family_names(metrics.WORKER)


# ---------------------------------------------------------------------- the documentation is the code's list


def test_the_documented_families_are_the_registered_ones() -> None:
    docs = documented()
    names = {name.removesuffix("_total"): kinds for name, kinds in docs.items()}
    for kind in metrics.KINDS:
        assert {n for n, kinds in names.items() if kind in kinds} == metrics.family_names(kind), kind


def test_the_label_values_started_at_0_are_the_ones_the_code_uses() -> None:
    """The pre-started series are the real ones: every Redis op the code counts (in the process kind that
    counts it) and every forfeit reason the referee gives."""
    root = Path(__file__).resolve().parents[1]
    counted = re.compile(r'(?:REDIS_ERRORS\.labels|self\._redis)\(\s*"([a-z-]+)"')
    where = {metrics.WORKER: ["arena/service/worker.py"],
             metrics.GATEWAY: ["arena/service/gateway.py", "arena/service/sessions.py", "arena/service/relay.py"],
             metrics.LADDER: ["arena/local/ladder_runner.py"]}  # fmt: skip
    for kind, files in where.items():
        ops = {op for f in files for op in counted.findall((root / f).read_text())}
        assert ops and ops <= set(metrics.REDIS_OPS[kind]), (kind, ops - set(metrics.REDIS_OPS[kind]))
    reasons = set(re.findall(r'self\._forfeit\(\w+, "([a-z]+)"\)', (root / "referee" / "match.py").read_text()))
    assert reasons == set(metrics.FORFEIT_REASONS)


# ---------------------------------------------------------------------- arena serve: gateway+ladder, workers


def test_arena_serve_exports_each_process_own_families_and_they_move(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    base = consecutive_free_ports(3)
    gateway = f"127.0.0.1:{free_port()}"
    token = "arena_admin_" + secrets.token_urlsafe(32)
    procs.append(start("serve", "--data", str(tmp_path / "arena"), "--listen", gateway, "--workers", "2",
                       "--metrics-port", str(base), "--admin-token", token, "--no-ladder",  # the two matches below only
                       log=tmp_path / "serve.log"))  # fmt: skip
    ports = {"gateway": base, "worker-0": base + 1, "worker-1": base + 2}
    for name, port in ports.items():
        wait_until(healthy(port), 60, f"{name}'s /healthz")

    # the listener is on the host of --listen (loopback), not on every address
    for port in ports.values():
        assert listening_addresses(port) == {"127.0.0.1"}, port
    # /healthz and / are not the metrics page
    status, ctype, body = get(f"http://127.0.0.1:{base}/healthz")
    assert (status, body) == (200, "ok\n") and ctype.startswith("text/plain")
    status, ctype, body = get(f"http://127.0.0.1:{base}/")
    assert status == 200 and 'href="/metrics"' in body and "# HELP" not in body
    assert get(f"http://127.0.0.1:{base}/nothing")[0] == 404

    # each process its own families, all present, none of the others'
    docs = documented()
    gw = scrape(base)
    assert arena_families(gw) == metrics.family_names(metrics.GATEWAY) | metrics.family_names(metrics.LADDER)
    assert not arena_families(gw) & WORKER_ONLY
    for worker in ("worker-0", "worker-1"):
        wk = scrape(ports[worker])
        assert arena_families(wk) == metrics.family_names(metrics.WORKER), worker
        assert not arena_families(wk) & (GATEWAY_ONLY | LADDER_ONLY), worker
        for end in ("completed", "forfeit", "aborted"):
            assert value(wk, "arena_matches_finished", "arena_matches_finished_total", end_reason=end) == 0
        for reason in ("disconnected", "refusals", "strikes"):
            assert value(wk, "arena_forfeits", "arena_forfeits_total", reason=reason) == 0
        for op in metrics.REDIS_OPS[metrics.WORKER]:
            assert value(wk, "arena_redis_errors", "arena_redis_errors_total", op=op) == 0
        assert value(wk, "arena_matches_running") == 0
    for name, kinds in docs.items():
        family = name.removesuffix("_total")
        if "gateway" in kinds or "ladder" in kinds:
            assert gw.get(family), f"{family} has no sample on the gateway"
    for priority in ("requested", "ladder"):
        assert value(gw, "arena_queue_depth", priority=priority) == 0
    for state in ("queued", "running"):
        assert value(gw, "arena_matches", state=state) == 0
    assert value(gw, "arena_ladder_lag_seconds") == 0

    # two rated matches between two reference bots, each its own `arena bot run` process
    with ArenaClient(gateway, token) as admin:
        tokens = {name: admin.register_bot(name, "tests", ["shanghaien"], 4)[1] for name in ("alpha", "beta")}
        for name, bot_token in tokens.items():
            procs.append(start("bot", "run", "random", "--arena", gateway, "--matches", "2",
                               log=tmp_path / f"bot-{name}.log", env={"ARENA_BOT_TOKEN": bot_token}))  # fmt: skip
        wait_until(lambda: value(scrape(base), "arena_bot_sessions") == 2, 30, "two bot sessions on the gateway")
        ids = [admin.request_match("shanghaien", ["alpha", "beta"], rated=True)[0] for _ in range(2)]
        wait_until(lambda: all(admin.describe(i).state == 3 for i in ids), 120, "both matches finished")

    def workers_sum(family: str, sample: str | None = None, **labels: str) -> float:
        return sum(value(scrape(ports[w]), family, sample, **labels) for w in ("worker-0", "worker-1"))

    assert workers_sum("arena_matches_finished", "arena_matches_finished_total", end_reason="completed") == 2
    assert workers_sum("arena_move_seconds", "arena_move_seconds_count") > 10  # a Shanghaien match has many plies
    assert workers_sum("arena_move_seconds", "arena_move_seconds_bucket", le="+Inf") == workers_sum(
        "arena_move_seconds", "arena_move_seconds_count"
    )
    wait_until(lambda: workers_sum("arena_matches_running") == 0, 10, "no match running")
    gw = scrape(base)
    assert value(gw, "arena_matches_requested", "arena_matches_requested_total") == 2
    wait_until(
        lambda: value(scrape(base), "arena_ladder_results_applied", "arena_ladder_results_applied_total") == 2,
        30, "the ladder applied both rated results",
    )  # fmt: skip
    assert value(scrape(base), "arena_ladder_unapplied_results") == 0
    for state in ("queued", "running"):
        assert value(scrape(base), "arena_matches", state=state) == 0

    # arena serve's own log (the gateway's) and its workers' are JSON lines in files
    logs = tmp_path / "arena" / "logs"
    for name, service in (("gateway", "gateway"), ("worker-0", "worker"), ("worker-1", "worker")):
        lines = [json.loads(line) for line in (logs / f"{name}.log").read_text().splitlines()]
        assert lines and all(e["service"] == service and e["level"] and e["timestamp"] for e in lines), name


# ---------------------------------------------------------------------- separate processes, queue and Redis loss


def test_queue_depth_moves_and_a_redis_loss_does_not_break_metrics(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    server = RedisProcess(tmp_path / "redis").start()  # its own, to stop
    try:
        url = server.url
        token = "arena_admin_" + secrets.token_urlsafe(32)
        gateway, gw_m, wk_m, ld_m = f"127.0.0.1:{free_port()}", free_port(), free_port(), free_port()
        procs.append(start("gateway", "--redis", url, "--listen", gateway, "--admin-token", token,
                           "--metrics-port", str(gw_m), log=tmp_path / "gateway.log"))  # fmt: skip
        procs.append(start("ladder", "run", "--redis", url, "--listen", "127.0.0.1:0", "--no-schedule",
                           "--metrics-port", str(ld_m), log=tmp_path / "ladder.log"))  # fmt: skip
        for port in (gw_m, ld_m):
            wait_until(healthy(port), 60, f"/healthz on {port}")
        gw_port = int(gateway.rpartition(":")[2])  # /healthz answers before the gateway's gRPC port listens
        wait_until(lambda: _accepts(gw_port), 60, f"the gateway on {gateway}")
        ladder = scrape(ld_m)
        assert arena_families(ladder) == metrics.family_names(metrics.LADDER)
        assert arena_families(scrape(gw_m)) == metrics.family_names(metrics.GATEWAY)

        # no worker yet: requested matches wait in the queue
        with ArenaClient(gateway, token) as admin:
            for name in ("alpha", "beta"):
                admin.register_bot(name, "tests", ["shanghaien"], 4)
            for _ in range(3):
                admin.request_match("shanghaien", ["alpha", "beta"])
        gw = scrape(gw_m)
        assert value(gw, "arena_queue_depth", priority="requested") == 3
        assert value(gw, "arena_matches", state="queued") == 3
        assert value(gw, "arena_matches", state="running") == 0
        assert value(gw, "arena_matches_requested", "arena_matches_requested_total") == 3

        # a worker with room for one: one leaves the queue and runs (its bots never come)
        procs.append(start("worker", "--redis", url, "--listen", "127.0.0.1:0", "--capacity", "1",
                           "--metrics-port", str(wk_m), log=tmp_path / "worker.log"))  # fmt: skip
        wait_until(lambda: value(scrape(gw_m), "arena_queue_depth", priority="requested") == 2, 60, "one claimed")
        gw = scrape(gw_m)
        assert value(gw, "arena_matches", state="running") == 1
        assert value(gw, "arena_matches", state="queued") == 2
        wk = wait_until(lambda: (s := scrape(wk_m)) and value(s, "arena_matches_running") == 1 and s, 30, "running 1")
        assert arena_families(wk) == metrics.family_names(metrics.WORKER)
        assert listening_addresses(wk_m) == {"127.0.0.1"}

        # Redis gone: /metrics still answers, counts the failed read, and /healthz says so
        server.stop()
        for port in (gw_m, ld_m):
            gw = scrape(port)
            assert value(gw, "arena_redis_errors", "arena_redis_errors_total", op="scrape") >= 1
            assert "arena_queue_depth" not in gw and "arena_ladder_lag_seconds" not in gw
        for port in (gw_m, wk_m, ld_m):
            status, _, body = get(f"http://127.0.0.1:{port}/healthz")
            assert status == 503 and body.startswith("unhealthy: redis:"), (port, status, body)
        assert value(scrape(wk_m), "arena_redis_errors", "arena_redis_errors_total", op="health") >= 1
    finally:
        server.stop()


# ---------------------------------------------------------------------- the ladder's lag, read from Redis


def test_a_process_serves_the_redis_read_families_of_its_kinds_exactly() -> None:
    """The collectors live beside what they read and are handed to ``serve``: one left out (or one too
    many) is refused at start, not found missing on a dashboard."""
    client = redis.Redis()  # never dialled: describing the families reads nothing
    try:
        metrics.registry_for([metrics.GATEWAY, metrics.LADDER], client, [QueueCollector, LadderLagCollector])
        metrics.registry_for([metrics.WORKER], client)
        with pytest.raises(ValueError, match="arena_queue_depth"):
            metrics.registry_for([metrics.GATEWAY, metrics.LADDER], client, [LadderLagCollector])
        with pytest.raises(ValueError):
            metrics.registry_for([metrics.LADDER], client, [QueueCollector, LadderLagCollector])
    finally:
        client.close()


def test_ladder_lag_is_the_age_of_the_oldest_unapplied_result(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    collector = LadderLagCollector(client)

    def read() -> dict[str, float]:
        return {m.name: m.samples[0].value for m in collector.collect()}

    try:
        assert read() == {"arena_ladder_lag_seconds": 0, "arena_ladder_unapplied_results": 0}  # no stream yet
        five_s_ago = int(time.time() * 1000) - 5000
        client.xadd(keys.results(), {"match_id": "m1"}, id=f"{five_s_ago}-0")
        client.xadd(keys.results(), {"match_id": "m2"})
        lag = read()  # no ladder group yet: everything waits
        assert lag["arena_ladder_unapplied_results"] == 2
        assert 4.5 < lag["arena_ladder_lag_seconds"] < 60
        client.xgroup_create(keys.results(), keys.LADDER_GROUP, id="0")
        client.xreadgroup(keys.LADDER_GROUP, "c", {keys.results(): ">"}, count=1)  # m1 delivered, not applied
        lag = read()
        assert lag["arena_ladder_unapplied_results"] == 2 and lag["arena_ladder_lag_seconds"] > 4.5
        client.xack(keys.results(), keys.LADDER_GROUP, f"{five_s_ago}-0")  # m1 applied; m2 is fresh
        lag = read()
        assert lag["arena_ladder_unapplied_results"] == 1 and lag["arena_ladder_lag_seconds"] < 4.5
        entries: Any = client.xreadgroup(keys.LADDER_GROUP, "c", {keys.results(): ">"})
        client.xack(keys.results(), keys.LADDER_GROUP, *(i for i, _ in entries[0][1]))
        assert read() == {"arena_ladder_lag_seconds": 0, "arena_ladder_unapplied_results": 0}
    finally:
        client.close()


# ---------------------------------------------------------------------- refused calls


def test_a_refused_call_is_counted_by_method_and_code_and_logged_once_without_its_token(
    redis_url: str, tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    from arena.errors import ArenaError
    from arena.ladder.client import LadderClient
    from arena.service.registry import Registry

    token = "arena_admin_" + secrets.token_urlsafe(32)
    wrong = "arena_" + secrets.token_urlsafe(32)
    r = redis.Redis.from_url(redis_url)
    _, bot_token = Registry(r).register("alpha", "tests", ["shanghaien"])
    r.close()
    gateway, port = f"127.0.0.1:{free_port()}", free_port()
    log = tmp_path / "gateway.log"
    procs.append(start("gateway", "--redis", redis_url, "--listen", gateway, "--admin-token", token,
                       "--metrics-port", str(port), log=log))  # fmt: skip
    wait_until(healthy(port), 60, "/healthz")

    def refused(method: str, code: str) -> float:
        return value(scrape(port), "arena_calls_refused", "arena_calls_refused_total", method=method, code=code)

    owners, bots = "arena.v1.ArenaService/ListOwners", "arena.v1.ArenaService/ListBots"
    board = "arena.v1.LadderService/GetLeaderboard"
    cells = [(owners, "UNAUTHENTICATED"), (owners, "PERMISSION_DENIED"), (bots, "UNAUTHENTICATED"),
             (board, "UNAUTHENTICATED"), ("arena.v1.BotService/Play", "PERMISSION_DENIED")]  # fmt: skip
    # every series exists from the start (once the gateway serves: /metrics comes up first)
    wait_until(lambda: all(refused(m, c) == 0 for m, c in cells), 60, "the refusal series at 0")

    def code_of(fn: Callable[[], Any]) -> str:
        try:
            fn()
        except ArenaError as e:
            return e.code
        return "OK"

    with ArenaClient(gateway) as nobody, ArenaClient(gateway, bot_token) as bot, ArenaClient(gateway, wrong) as who:
        assert code_of(nobody.list_owners) == "UNAUTHENTICATED"
        assert code_of(bot.list_owners) == "PERMISSION_DENIED"
        assert code_of(bot.list_owners) == "PERMISSION_DENIED"
        assert code_of(who.list_bots) == "UNAUTHENTICATED"
        assert code_of(nobody.list_bots) == "OK"
        with LadderClient(gateway, wrong) as ladder:  # refused by the gateway's TokenGate, before the ladder
            assert code_of(lambda: ladder.size("shanghaien")) == "UNAUTHENTICATED"
    assert [refused(m, c) for m, c in cells] == [1, 2, 1, 1, 0]
    assert refused(bots, "PERMISSION_DENIED") == 0

    lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
    said = [(x["method"], x["code"]) for x in lines if x.get("event") == "call refused"]
    assert sorted(said) == sorted([(owners, "UNAUTHENTICATED"), (owners, "PERMISSION_DENIED"),
                                   (owners, "PERMISSION_DENIED"), (bots, "UNAUTHENTICATED"),
                                   (board, "UNAUTHENTICATED")])  # fmt: skip
    text = log.read_text()
    assert bot_token not in text and wrong not in text and token not in text
