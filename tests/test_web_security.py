"""The website's defences as a client meets them, over a real ``arena web`` process and a real Redis: the
security headers on every answer, the per-address limit and whose address counts, the owners' session
cookie (its attributes, forged, expired and rotated-away cookies), an owner's private data kept from
others, no token or token hash in any page or log, the metrics, and the read-only Redis user of the
deployment (deploy/redis-server.sh, which Compose and Kubernetes run) with which the site works and cannot write."""

from __future__ import annotations

import copy
import http.client
import importlib.util
import json
import re
import shlex
import ssl
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
import redis
import trustme
import yaml  # type: ignore[import-untyped]

from arena import keys
from arena.ladder.elo import Row
from arena.ladder.store import Ladder, member
from arena.local.redisproc import free_port
from arena.service.matches import MatchStore
from arena.service.owners import Owners
from arena.service.registry import Registry
from arena.web.owners import COOKIE, make_cookie
from referee.wire.values import token_sha256
from tests.helpers import setup_owner_world, web_server

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPT = ROOT / "tests" / "data" / "transcripts" / "scripted-shanghaien.jsonl"
SECURITY_HEADERS = ("Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy")


class Client:
    """HTTP requests to one site, with its cookies kept (no redirects followed: the tests read them)."""

    def __init__(self, url: str, context: ssl.SSLContext | None = None) -> None:
        self.url = url
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.tls = u.hostname or "", u.port or 0, u.scheme == "https"
        self.context = context
        self.cookies: dict[str, str] = {}

    def request(
        self, method: str, path: str, form: dict[str, str] | None = None, headers: dict[str, str] | None = None,
        origin: bool = True,
    ) -> tuple[int, http.client.HTTPMessage, str]:  # fmt: skip
        conn: http.client.HTTPConnection
        if self.tls:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=10)
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        h = dict(headers or {})
        if self.cookies:
            h["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            h["Content-Type"] = "application/x-www-form-urlencoded"
            if origin:
                h.setdefault("Origin", self.url)
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        text = r.read().decode()
        for value in r.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            cookie_value = rest.split(";")[0]
            if cookie_value in ("", '""') or "Max-Age=0" in value:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = cookie_value
        conn.close()
        return r.status, r.headers, text

    def get(self, path: str, **kw: object) -> tuple[int, http.client.HTTPMessage, str]:
        return self.request("GET", path, **kw)  # type: ignore[arg-type]

    def sign_in(self, token: str) -> tuple[int, http.client.HTTPMessage, str]:
        return self.request("POST", "/signin", form={"token": token})


def store_finished_match(r: redis.Redis) -> str:
    """The scripted transcript (seat 0 ``bot0`` refuses moves) as a finished match of bot0 and bot1."""
    match_id = "scripted-shanghaien"
    MatchStore(r).request("shanghaien", ["bot0", "bot1"], match_id=match_id, seed="s")
    r.hset(keys.match(match_id), mapping={"status": "finished", "finished_at": f"{time.time():.6f}"})
    r.set(keys.transcript(match_id), TRANSCRIPT.read_text())
    return match_id


def world(r: redis.Redis) -> dict[str, str]:
    """Owners me (bots mine, bot0) and them (theirs, bot1) with a finished match between bot0 and bot1;
    every token, by name."""
    tokens = setup_owner_world(r)
    registry = Registry(r)
    _, tokens["bot0"] = registry.register("bot0", "me", ["shanghaien"])
    _, tokens["bot1"] = registry.register("bot1", "them", ["shanghaien"])
    registry.set_enabled("mine", False, "disabled by the test: too many crashes")
    r.hset(
        keys.ladder_pauses(),
        json.dumps(["bot0", ""]),
        json.dumps({"state": "paused", "streak": 3, "reason": "forfeited 3 matches in a row", "since": 1.0}),
    )
    store_finished_match(r)
    return tokens


# ---------------------------------------------------------------------- headers, 404, limits


def test_every_answer_has_the_security_headers_and_unknown_paths_404(redis_url: str) -> None:
    with web_server(redis_url) as url:
        c = Client(url)
        for path, status in (("/", 200), ("/signin", 200), ("/no/such", 404), ("/api/v1/nothing", 404),
                             ("/owner", 303), ("/owner/matches/x.jsonl", 401)):  # fmt: skip
            got, headers, body = c.get(path)
            assert got == status, (path, body[:300])
            for h in SECURITY_HEADERS:
                assert headers[h], (path, h)
            assert "nonce-" in headers["Content-Security-Policy"]
        # a POST from another site is refused, and still carries the headers
        got, headers, _ = c.request("POST", "/signout", form={}, headers={"Origin": "https://evil.example"})
        assert got == 403 and headers["X-Frame-Options"] == "DENY"
        got, _, _ = c.request("POST", "/signout", form={}, origin=False)
        assert got == 403


def test_past_the_limit_a_429_with_retry_after_and_the_forwarded_address_counts_only_from_a_trusted_proxy(
    redis_url: str,
) -> None:
    with web_server(redis_url, "--requests-per-min", "5") as url:
        c = Client(url)
        # an untrusted peer's X-Forwarded-For is ignored: five requests "from five addresses" are one's
        for i in range(5):
            assert c.get("/", headers={"X-Forwarded-For": f"198.51.100.{i}"})[0] == 200
        status, headers, body = c.get("/", headers={"X-Forwarded-For": "198.51.100.99"})
        assert status == 429 and 1 <= int(headers["Retry-After"]) <= 60, body
        assert "Too many requests" in body and headers["Content-Security-Policy"]
        status, headers, body = c.get("/api/v1/anything")
        assert status == 429 and json.loads(body)["error"]["status"] == 429
    with web_server(redis_url, "--requests-per-min", "5", "--trusted-proxies", "127.0.0.0/8") as url:
        c = Client(url)
        for client in ("203.0.113.1", "203.0.113.2"):  # the proxy (loopback) says who: each counts apart
            for _ in range(5):  # the client's own claim, left of the one the proxy appended, is not believed
                assert c.get("/", headers={"X-Forwarded-For": f"10.9.9.9, {client}"})[0] == 200
            assert c.get("/", headers={"X-Forwarded-For": f"10.9.9.9, {client}"})[0] == 429
        assert c.get("/", headers={"X-Forwarded-For": "203.0.113.3"})[0] == 200


# ---------------------------------------------------------------------- the owners' session


def test_signing_in_sets_a_strict_httponly_cookie_and_shows_only_the_owners_own_bots(
    redis_url: str, tmp_path: Path
) -> None:
    r = redis.Redis.from_url(redis_url)
    tokens = world(r)
    log = tmp_path / "web.log"
    with web_server(redis_url, log=log) as url:
        c = Client(url)
        status, headers, body = c.sign_in(tokens["me"])
        assert status == 303 and headers["Location"] == "/owner", body
        cookie = headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie  # plain HTTP here; under TLS below
        status, headers, page = c.get("/owner")
        assert status == 200 and headers["Cache-Control"] == "private, no-store"
        assert "mine" in page and "bot0" in page and "theirs" not in page and "bot1" not in page.split("<table")[0]
        assert "too many crashes" in page and "forfeited 3 matches in a row" in page
        assert re.search(r'id="requests-left">30<', page) and "sessions-left" in page

        # the owner's transcript: its seat's refusal texts; the other owner's: none of them
        status, headers, mine = c.get("/owner/matches/scripted-shanghaien.jsonl")
        assert status == 200 and "kein Zug" in mine and headers["Content-Type"].startswith("application/x-ndjson")
        them = Client(url)
        assert them.sign_in(tokens["them"])[0] == 303
        status, _, theirs = them.get("/owner/matches/scripted-shanghaien.jsonl")
        assert status == 200 and "kein Zug" not in theirs and '"type":"refusal"' in theirs
        assert len(theirs.splitlines()) == len(mine.splitlines())
        # the same as a page: my seat's refused moves with the referee's reasons; theirs has none of them
        status, _, refusals = c.get("/owner/matches/scripted-shanghaien")
        assert status == 200 and "kein Zug" in refusals and "is not a Shanghaien action" in refusals
        status, _, none = them.get("/owner/matches/scripted-shanghaien")
        assert status == 200 and "kein Zug" not in none and "sent no refused move" in none
        # a match none of whose bots is yours: 404, like no match at all
        MatchStore(r).request("shanghaien", ["theirs", "bot1"], match_id="their-own")  # none of mine
        r.hset(keys.match("their-own"), mapping={"status": "finished", "finished_at": f"{time.time():.6f}"})
        r.set(keys.transcript("their-own"), TRANSCRIPT.read_text())
        assert them.get("/owner/matches/their-own.jsonl")[0] == 200
        assert c.get("/owner/matches/their-own.jsonl")[0] == 404 and c.get("/owner/matches/their-own")[0] == 404
        assert c.get("/owner/matches/nothing.jsonl")[0] == 404

        # signing out ends it
        assert c.request("POST", "/signout", form={})[0] == 303
        assert COOKIE not in c.cookies and c.get("/owner")[0] == 303

        # no token, token hash or cookie in any page, nor in the log
        bodies = [page, mine, theirs] + [Client(url).get(p)[2] for p in ("/", "/signin", "/api/v1/x", "/nothing")]
        secrets_ = [*tokens.values(), *(token_sha256(t) for t in tokens.values())]
        secrets_ += [keys.text(v) for v in r.hvals(keys.owner("me"))]
    logged = log.read_text()
    for s in secrets_:
        if len(s) >= 32:
            assert all(s not in b for b in bodies), s[:12]
            assert s not in logged, s[:12]
    assert them.cookies[COOKIE] not in logged and "kein Zug" not in logged
    assert [json.loads(line) for line in logged.splitlines() if line.startswith("{")]  # it did log, as JSON


def test_forged_expired_and_rotated_away_cookies_are_refused(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    tokens = setup_owner_world(r)
    stored = keys.text(r.hget(keys.owner("me"), "token_sha256") or b"")
    with web_server(redis_url) as url:
        c = Client(url)
        assert c.sign_in(tokens["me"])[0] == 303 and c.get("/owner")[0] == 200
        good = c.cookies[COOKIE]
        name, expires = "me", int(time.time()) + 3600
        forged = {
            "another owner's name with my mac": good.replace(good.split(".")[1], "dGhlbQ"),
            "a longer expiry": good.replace(good.split(".")[2], str(int(good.split(".")[2]) + 10)),
            "signed with a guessed key": make_cookie(name, "0" * 64, expires),
            "expired": make_cookie(name, stored, int(time.time()) - 1),
            "garbage": "v1.!!.x.y",
        }
        for what, value in forged.items():
            assert Client(url).get("/owner", headers={"Cookie": f"{COOKIE}={value}"})[0] == 303, what
        assert Client(url).get("/owner", headers={"Cookie": f"{COOKIE}={make_cookie(name, stored, expires)}"})[0] == 200
        # rotating the token signs the owner out on every replica: the key of the HMAC changed
        new = Owners(r).rotate_token("me")
        assert c.get("/owner")[0] == 303
        assert c.sign_in(tokens["me"])[0] == 401  # the old token no longer signs in
        assert c.sign_in(new)[0] == 303 and c.get("/owner")[0] == 200


def test_a_wrong_token_fails_with_a_clear_message_and_guessing_is_limited(redis_url: str) -> None:
    setup_owner_world(redis.Redis.from_url(redis_url))
    with web_server(redis_url) as url:
        c = Client(url)
        status, _, body = c.sign_in("arena_owner_" + "x" * 43)
        assert status == 401 and "not a current owner token" in body and COOKIE not in c.cookies
        for _ in range(9):
            assert c.sign_in("wrong")[0] == 401
        status, headers, body = c.sign_in("wrong")
        assert status == 429 and int(headers["Retry-After"]) >= 1 and "failed sign-ins" in body


def test_under_tls_the_cookie_is_secure(redis_url: str, tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    tokens = setup_owner_world(redis.Redis.from_url(redis_url))
    context = ssl.create_default_context()
    ca.configure_trust(context)
    with web_server(redis_url, "--tls-cert", str(tmp_path / "cert.pem"), "--tls-key", str(tmp_path / "key.pem")) as url:
        c = Client(url, context)
        status, headers, _ = c.sign_in(tokens["me"])
        assert status == 303 and "Secure" in headers["Set-Cookie"] and "HttpOnly" in headers["Set-Cookie"]
        assert headers["Strict-Transport-Security"]
        assert c.get("/owner")[0] == 200


# ---------------------------------------------------------------------- metrics


def test_the_web_process_exports_its_requests_by_route_and_status(redis_url: str) -> None:
    port = free_port()
    with web_server(redis_url, "--metrics-port", str(port)) as url:
        c = Client(url)
        c.get("/")
        c.get("/no/such/thing")
        c.get("/owner/matches/some-id.jsonl")
        deadline = time.monotonic() + 10
        while True:
            try:
                status, _, text = Client(f"http://127.0.0.1:{port}").get("/metrics")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    assert status == 200
    assert 'arena_web_requests_total{route="/",status="200"} 1.0' in text
    assert 'arena_web_requests_total{route="unmatched",status="404"} 1.0' in text
    assert 'route="/owner/matches/{match_id}.jsonl",status="401"' in text  # the pattern, not the path
    assert "some-id" not in text
    assert "arena_web_request_seconds_bucket" in text and "arena_web_live_viewers 0.0" in text


# ---------------------------------------------------------------------- the read-only Redis user


def web_acl_rules() -> str:
    """The web user's rules as deploy/redis-server.sh gives them to every Redis server of the set (Compose
    and Kubernetes run that script; check_public.py checks the k8s copy is identical)."""
    script = (ROOT / "deploy" / "redis-server.sh").read_text().replace("\\\n", " ")
    words = shlex.split(script[script.index("--user web on") :].splitlines()[0])
    assert words[:4] == ["--user", "web", "on", ">$REDIS_WEB_PASSWORD"], words
    end = words.index("$@") if "$@" in words else len(words)
    return " ".join(words[4:end])


@contextmanager
def acl_redis(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A redis-server with the admin's password and the deployment's web user: (admin URL, web URL)."""
    port = free_port()
    rules = web_acl_rules().split()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path), "--requirepass", "adminpw", "--user", "web", "on", ">webpw", *rules],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    admin = f"redis://:adminpw@127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(admin).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield admin, f"redis://web:webpw@127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_site_works_with_the_read_only_redis_user_which_cannot_write(redis_url: str, tmp_path: Path) -> None:
    with acl_redis(tmp_path) as (admin_url, web_url):
        admin = redis.Redis.from_url(admin_url)
        tokens = world(admin)
        row = Row("bot0", "1.0", rating=1512.5, games=1, wins=1)  # a ladder row, as the ladder writes it
        admin.zadd(keys.ladder_board("shanghaien"), {member(("bot0", "1.0")): row.rating})
        admin.hset(keys.ladder_rows("shanghaien"), member(("bot0", "1.0")), json.dumps(asdict(row)))
        web = redis.Redis.from_url(web_url)
        # what the web reads works; the ladder's top rows through its read-only script too
        assert web.hget(keys.owner("me"), "name") == b"me"
        assert [s.row.rating for s in Ladder(web).leaderboard("shanghaien", 10)] == [1512.5]
        # any write is refused, directly or from a script
        for attempt in (lambda: web.set(keys.owner("me"), "x"), lambda: web.hset(keys.owner("me"), "max_bots", 1),
                        lambda: web.delete(keys.owner("me")), lambda: web.xadd(keys.results(), {"a": "b"}),
                        lambda: web.eval("return redis.call('DEL', KEYS[1])", 1, keys.owner("me")),
                        lambda: web.eval_ro("return redis.call('DEL', KEYS[1])", 1, keys.owner("me")),
                        web.flushall, lambda: web.config_set("appendonly", "no"),
                        lambda: web.get("not-arena-key")):  # fmt: skip
            with pytest.raises(redis.ResponseError):
                attempt()
        assert admin.exists(keys.owner("me"))
        # the site itself, signed in too
        with web_server(web_url) as url:
            c = Client(url)
            status, _, body = c.get("/")
            assert status == 200 and "bots online" in body, body[:500]
            for path in ("/ladder/shanghaien", "/bots/bot0", "/matches", "/queue", "/api/v1/ladder/shanghaien",
                         "/api/v1/bots/bot0", "/api/v1/matches", "/api/v1/queue"):  # fmt: skip
                status, _, body = c.get(path)
                assert status == 200, (path, body[body.find('class="error"') :][:400])
            assert c.sign_in(tokens["me"])[0] == 303
            status, _, page = c.get("/owner")
            assert status == 200 and "bot0" in page, page[:500]
            assert c.get("/owner/matches/scripted-shanghaien.jsonl")[0] == 200


# ---------------------------------------------------------------------- the deploy rules for the website


def _check_public() -> Any:
    spec = importlib.util.spec_from_file_location("check_public", ROOT / "deploy" / "check_public.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_deploy_rules_catch_a_website_that_could_write_or_be_reached_directly() -> None:
    """deploy/check_public.py passes on the shipped files and fails each mistake that would give the
    website more than reading Redis, or let anything but the ingress reach it."""
    check = _check_public()
    assert check.structured_problems(yaml) == []
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    broken = copy.deepcopy(compose)
    broken["services"]["web"]["environment"]["ARENA_REDIS_URL"] = "redis://:${REDIS_PASSWORD:?x}@redis:6379/0"
    broken["services"]["web"]["ports"] = ["8080:8080"]
    found = check.compose_problems(broken)
    assert any("web's ARENA_REDIS_URL is not the read-only user web's" in p for p in found), found
    assert any("web publishes ports" in p for p in found), found
    # the servers' rules live in the script Compose and Kubernetes run (deploy/redis-server.sh)
    script = (ROOT / "deploy" / "redis-server.sh").read_text()
    assert check.script_problems(script) == []
    found = check.script_problems(script.replace("+evalsha_ro +eval_ro", "+evalsha_ro +eval_ro +@write"))
    assert any("user web may write" in p for p in found), found

    resources = yaml.safe_load((ROOT / "deploy" / "k8s" / "kustomization.yaml").read_text())["resources"]
    docs = [d for r in resources for d in yaml.safe_load_all((ROOT / "deploy" / "k8s" / r).read_text()) if d]
    assert check.k8s_problems(docs) == []
    policy = next(d for d in docs if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "web-from-ingress-only")
    policy["spec"]["ingress"][0]["from"] = [{"namespaceSelector": {}}]
    web = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "web")
    url = next(e for e in web["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == "ARENA_REDIS_URL")
    url["value"] = url["value"].replace(
        "redis+sentinel://web:$(REDIS_WEB_PASSWORD)@", "redis+sentinel://:$(REDIS_PASSWORD)@"
    )
    found = check.k8s_problems(docs)
    assert any("web-from-ingress-only: web:8080 admits more than the ingress namespace" in p for p in found), found
    assert any("web does not connect as Redis's read-only user web" in p for p in found), found
