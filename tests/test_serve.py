"""``arena serve``, the one-machine arena, as a person runs it: a real process with its own redis-server
and worker processes, serving a certificate made now (trustme) for a DNS name only, the normal public case.

What each test shows:
- matches are played through its workers although the certificate does not name 127.0.0.1, the
  address the gateway dials them at (it checks them for the certificate's name);
- it schedules rated ladder matches between online bots by itself, as ``arena local`` does;
- a worker killed with SIGKILL is reaped, said so on the terminal and in the gateway log, and replaced;
- a client that is not set up for the arena's TLS is told which flag to add, in one line; a bot's runner
  says so once a try, waits longer, and gives up after a few tries; ``arena ladder rebuild`` without a
  Redis says it is an operator command that needs ``--redis``;
- its Redis has a password and keeps its port across restarts, both in ``DATA/redis-url`` (mode 0600);
  the admin token taken from ``ARENA_ADMIN_TOKEN`` is said to come from there, not from a file.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import structlog
import trustme

from arena.local.redisproc import free_port
from arena.service.client import ArenaClient
from referee.wire.tls import ClientTls
from sdk.arena_client import ArenaBotRunner
from tests.helpers import QUICK_JOIN, Served, SlowRandom, call, finished, register, wait_for

NAME = "arena.test"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("serve")
    ca = trustme.CA()
    cert = ca.issue_cert(NAME)  # a DNS name only: no IP address, no localhost
    pki = {"ca": folder / "ca.pem", "cert": folder / "cert.pem", "key": folder / "key.pem", "other": folder / "o.pem"}
    ca.cert_pem.write_to_path(str(pki["ca"]))
    cert.private_key_pem.write_to_path(str(pki["key"]))
    cert.cert_chain_pems[0].write_to_path(str(pki["cert"]))
    trustme.CA().cert_pem.write_to_path(str(pki["other"]))
    s = Served(folder / "data", f"127.0.0.1:{free_port()}", "arena_admin_" + secrets.token_urlsafe(32), pki, NAME)
    s.seen.append(s.start())
    yield s
    s.stop()


def _play(served: Served, names: tuple[str, str], work: object) -> None:
    """Register two bots, run them (in this process) while ``work(admin)`` runs, then stop them."""

    async def main() -> None:
        admin = ArenaClient(served.gateway, served.token, tls=served.tls)
        tokens = await register(admin, *names)
        runners = [ArenaBotRunner(SlowRandom(0, i), served.gateway, tokens[n], tls=served.tls)
                   for i, n in enumerate(names)]  # fmt: skip
        tasks = [asyncio.create_task(r.run()) for r in runners]
        try:
            await work(admin)  # type: ignore[operator]
        finally:
            for r in runners:
                r.stop()
            await asyncio.gather(*tasks, return_exceptions=True)
            admin.close()

    asyncio.run(main())


def test_a_certificate_for_a_dns_name_only_serves_matches(served: Served) -> None:
    """The gateway dials its workers at 127.0.0.1 and checks them for the certificate's name: a match
    completes (every match once aborted, "did not join", while the relay failed its TLS handshakes)."""

    async def work(admin: ArenaClient) -> None:
        match_id, _ = await call(admin.request_match, "shanghaien", ["alpha", "beta"], time_control=QUICK_JOIN)
        m = (await finished(admin, [match_id], 90))[match_id]
        assert m.result.end_reason == 1, m.result.detail  # completed

    _play(served, ("alpha", "beta"), work)


def test_serve_schedules_rated_ladder_matches_by_itself(served: Served) -> None:
    """Nobody requests a match: the ladder's scheduler (on by default) pairs the two online bots."""

    async def work(admin: ArenaClient) -> None:
        async def a_rated_match_finished() -> bool:
            matches = await call(admin.list_matches, bot_name="gamma")
            return any(m.rated and m.state == 3 and m.result.end_reason == 1 for m in matches)

        await wait_for(a_rated_match_finished, 90, "a rated match the ladder scheduled")

    _play(served, ("gamma", "delta"), work)


def test_a_worker_killed_with_sigkill_is_reaped_reported_and_replaced(served: Served) -> None:
    (victim,) = served.workers()
    os.kill(victim, signal.SIGKILL)
    said = served.line(lambda text: "worker 0" in text and "SIGKILL" in text, 30)
    assert "restart" in said, said

    def replaced() -> bool:
        pids = served.workers()
        return victim not in pids and len(pids) == 1  # reaped (no <defunct> left) and one new

    deadline = time.monotonic() + 30
    while not replaced():
        assert time.monotonic() < deadline, served.workers()
        time.sleep(0.1)
    events = [json.loads(line) for line in (served.data / "logs" / "gateway.log").read_text().splitlines()]
    said_in_log = [e for e in events if e["event"] == "worker exited" and e.get("signal") == "SIGKILL"]
    assert said_in_log and said_in_log[0]["level"] == "error" and said_in_log[0]["worker"] == 0, events[-5:]

    async def work(admin: ArenaClient) -> None:  # the one worker is the new one: it plays
        match_id, _ = await call(admin.request_match, "shanghaien", ["eps", "zeta"], time_control=QUICK_JOIN)
        assert (await finished(admin, [match_id], 90))[match_id].result.end_reason == 1

    _play(served, ("eps", "zeta"), work)


@pytest.mark.parametrize(
    ("flags", "advice"),
    [
        ((), "add --tls"),
        (("--tls",), "add --tls-ca"),  # the system's roots do not know the arena's CA
        (("--tls-ca", "other"), "add --tls-ca"),
        (("--tls-ca", "ca"), f"add --tls-server-name {NAME}"),  # 127.0.0.1 is not on the certificate
    ],
)
@pytest.mark.parametrize(
    "command", [("bot", "list"), ("ladder", "show", "--game", "shanghaien"), ("event", "list")], ids=" ".join
)  # each service's client: the ladder's said only gRPC's own text before they shared one (GatewayClient)
def test_a_client_not_set_up_for_the_arenas_tls_is_told_which_flag_to_add(
    served: Served, flags: tuple[str, ...], advice: str, command: tuple[str, ...]
) -> None:
    argv = [str(served.pki.get(f, f)) for f in flags]
    done = served.cli(*command, *argv)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("arena: error: ") and advice in lines[0], done.stderr


def test_a_bot_whose_tls_does_not_fit_says_why_in_one_line_and_gives_up(served: Served) -> None:
    """``arena bot run``'s runner: a CA that did not sign the arena's certificate is said as such (no raw
    ``<AioRpcError ...>``), retried after a longer wait, and ends the run after TLS_ATTEMPTS tries."""
    from sdk.arena_client import TLS_ATTEMPTS, TlsSetupError

    with structlog.testing.capture_logs() as logs, pytest.raises(TlsSetupError) as caught:
        runner = ArenaBotRunner(SlowRandom(0, 1), served.gateway, "arena_bot_x",
                                tls=ClientTls(served.pki["other"], NAME), tls_backoff=0.05)  # fmt: skip
        asyncio.run(asyncio.wait_for(runner.run(), 30))
    assert "add --tls-ca" in str(caught.value), caught.value
    said = [e for e in logs if e["log_level"] in ("warning", "error")]
    assert [e["event"] for e in said] == ["cannot open a session: TLS"] * (TLS_ATTEMPTS - 1), said
    assert all("add --tls-ca" in e["problem"] and e["retry_in_s"] >= 0.05 for e in said), said


def test_ladder_rebuild_without_redis_says_it_is_an_operator_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.cli.main import main

    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", 6379)) == 0:
            pytest.skip("a Redis answers on 127.0.0.1:6379 here: rebuild would work on it")
    monkeypatch.delenv("ARENA_REDIS_URL", raising=False)
    assert main(["ladder", "rebuild", "--game", "shanghaien"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("arena: error: arena ladder rebuild is an operator command") and "--redis" in line, line


def test_serve_redis_has_a_password_and_keeps_its_port_and_the_token_line_tells_the_truth(served: Served) -> None:
    """Last in this file: it restarts the module's arena."""
    url_file = served.data / "redis-url"
    assert url_file.stat().st_mode & 0o777 == 0o600
    url = url_file.read_text().strip()
    parsed = redis.Redis.from_url(url).connection_pool.connection_kwargs
    assert parsed["password"] and len(parsed["password"]) >= 32
    stranger = redis.Redis(host="127.0.0.1", port=parsed["port"])
    with pytest.raises(redis.AuthenticationError):
        stranger.ping()
    stranger.close()
    first = served.seen[0]
    assert "ARENA_ADMIN_TOKEN" in first and "admin-token" not in first, first
    assert parsed["password"] not in first, first
    assert not (served.data / "admin-token").exists()
    served.stop()
    served.start()
    assert url_file.read_text().strip() == url
    with redis.Redis.from_url(url) as r:
        assert r.ping()


def test_serve_runs_the_website_over_https_with_the_gateways_certificate(served: Served) -> None:
    """``arena serve`` prints its website's address and serves it with --tls-cert: the page answers over
    HTTPS, its certificate verifies against the CA, and the response carries HSTS."""
    import http.client
    import ssl

    line = next((t for t in served.seen if t.startswith("website: ")), None) or served.line(
        lambda text: text.startswith("website: "), 10
    )
    url = line.split()[1]
    assert url.startswith("https://127.0.0.1:"), line
    ctx = ssl.create_default_context(cafile=str(served.pki["ca"]))
    ctx.check_hostname = False  # the certificate names NAME only; the chain is still verified
    host, port = url.removeprefix("https://").split(":")
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=10)
    conn.request("GET", "/")
    response = conn.getresponse()
    body = response.read().decode()
    assert response.status == 200 and "bots online" in body
    assert response.getheader("Strict-Transport-Security")
    peer: Any = conn.sock.getpeercert()
    assert [v for k, v in peer.get("subjectAltName", ()) if k == "DNS"] == [NAME]
    conn.close()
