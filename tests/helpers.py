"""Helpers the test modules share (fixtures are in conftest.py): the ``arena`` command run as a person runs
it, in its own process, or in-process against a gateway in the test's event loop; ``arena serve`` in its
own process; a gateway, a referee and bots in the test's event loop; waiting for matches to finish; the
tools the tests need.

A test module imports what it needs from here, never from another test module.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis

from arena import keys
from arena.cli.main import main as arena_main
from arena.errors import ArenaError
from arena.service.client import ArenaClient
from arena.service.gateway import start_gateway
from arena.service.owners import REFERENCE_OWNER, Owners
from arena.service.registry import Registry
from referee.host import Referee
from referee.server import start_server
from referee.wire import bot_pb2
from referee.wire.tls import ClientTls
from sdk.arena_client import ArenaBotRunner
from sdk.bot import Bot, Turn

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------- the tools and the CI


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


def tls_files(folder: Path) -> dict[str, Path]:
    """A trustme CA (``ca``) and a certificate for localhost and 127.0.0.1 (``cert``, ``key``) in ``folder``."""
    import trustme

    folder.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    paths = {"ca": folder / "ca.pem", "cert": folder / "cert.pem", "key": folder / "key.pem"}
    ca.cert_pem.write_to_path(str(paths["ca"]))
    cert.private_key_pem.write_to_path(str(paths["key"]))
    for i, blob in enumerate(cert.cert_chain_pems):
        blob.write_to_path(str(paths["cert"]), append=i > 0)
    return paths


def _listens(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def nginx_play_proxy(
    redis_url: str,
    folder: Path,
    port: int,
    *,
    tls: tuple[Path, Path] | None = None,
    worker_tls: tuple[Path, str] | None = None,
    nginx_workers: int = 1,
    child: bool = False,
) -> Iterator[tuple[subprocess.Popen[bytes], subprocess.Popen[bytes] | None]]:
    """The Play proxy as docs/deploy.md runs it by hand: ``arena proxy-config --watch`` (the config from the
    live workers in Redis, nginx reloaded as they come and go) and Debian's ``nginx`` on 127.0.0.1:``port``,
    TLS for bots with ``tls`` (certificate chain, key), to the workers with ``worker_tls`` (their CA, the name
    on their certificate); yields the (config, nginx) processes. ``child``: nginx runs as the config
    process's child (``--nginx``, as the containers run it; yielded as None). Logs in ``folder``."""
    nginx = require_tool("nginx", "apt-get install nginx-light")
    folder.mkdir(parents=True, exist_ok=True)
    conf, state = folder / "nginx.conf", folder / "state"
    args = ["--redis", redis_url, "--proxy-listen", f"127.0.0.1:{port}", "--state-dir", str(state), "--out",
            str(conf), "--nginx-workers", str(nginx_workers)]  # fmt: skip
    if tls is not None:
        args += ["--tls-cert", str(tls[0]), "--tls-key", str(tls[1])]
    if worker_tls is not None:
        args += ["--tls-ca", str(worker_tls[0]), "--tls-server-name", worker_tls[1]]
    env = {k: v for k, v in checkout_env().items() if not k.startswith("ARENA_")}
    if child:
        args += ["--nginx", nginx]
    with (folder / "proxy-config.log").open("ab") as log:
        sync = subprocess.Popen([sys.executable, "-m", "arena.cli", "proxy-config", *args, "--watch"], env=env,
                                stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    procs = [sync]
    try:
        deadline = time.monotonic() + 30
        if child:
            while not _listens(port):
                assert sync.poll() is None and time.monotonic() < deadline, (folder / "proxy-config.log").read_text()
                time.sleep(0.05)
            yield sync, None
            return
        while not conf.exists():
            assert sync.poll() is None and time.monotonic() < deadline, (folder / "proxy-config.log").read_text()
            time.sleep(0.05)
        with (folder / "nginx.log").open("ab") as log:
            proxy = subprocess.Popen([nginx, "-c", str(conf), "-p", str(state), "-g", "daemon off;"], stdout=log,
                                     stderr=subprocess.STDOUT)  # fmt: skip
        procs.append(proxy)
        while not (state / "nginx.pid").exists() or not _listens(port):
            assert proxy.poll() is None and time.monotonic() < deadline, (folder / "nginx.log").read_text()
            time.sleep(0.05)
        yield sync, proxy
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


# ---------------------------------------------------------------------- the arena command


def checkout_env(**extra: str) -> dict[str, str]:
    """This process's environment with this checkout first on ``PYTHONPATH`` (so the processes a command
    starts run this code whatever their directory), and ``extra``."""
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def arena(
    *args: str,
    timeout: float = 180,
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
    check: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """``arena ARGS`` as a person runs it: its own process (this interpreter), in ``cwd``, stdout and stderr
    captured as text. ``env`` is its whole environment (default: ``checkout_env()``). With ``check``, its
    exit status must be that."""
    done = subprocess.run([sys.executable, "-m", "arena.cli", *args], check=False, capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=dict(env) if env is not None else checkout_env())  # fmt: skip
    if check is not None:
        assert done.returncode == check, (args, done.returncode, done.stdout[-500:], done.stderr[-2000:])
    return done


def service_exit_error(stderr: str) -> str:
    """A service's stderr is JSON lines to the end: its last line is the ``exiting`` event (no traceback,
    no "arena: error:" text). Returns that event's error message."""
    assert "Traceback" not in stderr, stderr
    last = [line for line in stderr.splitlines() if line.strip()][-1]
    event = json.loads(last)
    assert event["event"] == "exiting" and event["level"] == "error", last
    assert event["exit_code"] != 0 and "\n" not in event["error"], last
    return str(event["error"])


LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[")  # structlog's console lines (the gateway, in-process)


async def arena_in_process(
    address: str, capsys: pytest.CaptureFixture[str], *argv: str, env: Mapping[str, str] | None = None
) -> tuple[int, Any]:
    """``arena ARGV --gateway ADDRESS --json`` run in this process (the gateway in this event loop), with
    ``env`` set meanwhile: its exit status, and its stdout as JSON (its stderr when it failed), the
    gateway's log lines left out."""
    with pytest.MonkeyPatch.context() as m:
        for k, v in (env or {}).items():
            m.setenv(k, v)
        code = await call(arena_main, [*argv, "--gateway", address, "--json"])
    out, err = capsys.readouterr()
    mine = [line for line in out.splitlines() if not LOG_LINE.match(line)]  # not the gateway's logs
    if code != 0:  # the gateway logs the refusal while the command's stdout points at stderr
        return code, "\n".join(line for line in err.splitlines() if not LOG_LINE.match(line))
    assert len(mine) == 1, out  # one JSON document, nothing else
    return code, json.loads(mine[0])


# ---------------------------------------------------------------------- arena serve, in its own process


@dataclass
class Served:
    """A running ``arena serve`` as a person runs it (its own process, with its own redis-server and worker
    processes) and what a test needs to talk to it: its terminal lines, its workers' process ids, the
    ``arena`` command pointed at it. ``pki``: TLS (``cert``, ``key``, ``ca``) for ``server_name``, served by
    the gateway and the workers; ``flags``: serve's other flags."""

    data: Path
    gateway: str
    token: str
    pki: dict[str, Path] = field(default_factory=dict)
    server_name: str = ""
    flags: tuple[str, ...] = ("--workers", "1")
    proc: subprocess.Popen[str] | None = None
    lines: queue.Queue[str] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)

    @property
    def tls(self) -> ClientTls | None:
        return ClientTls(self.pki["ca"], self.server_name) if self.pki else None

    @property
    def redis_url(self) -> str:
        """Its Redis, with the password (``DATA/redis-url``): what an operator's commands take."""
        return (self.data / "redis-url").read_text().strip()

    def env(self) -> dict[str, str]:
        """Its environment and its commands': the admin token, and no ``ARENA_*`` setting nor config file of
        the person running the tests."""
        config = self.data.parent / "none.toml"
        if not config.exists():
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text("")
        env = {k: v for k, v in checkout_env().items() if not k.startswith("ARENA_")}
        return env | {"ARENA_ADMIN_TOKEN": self.token, "ARENA_CONFIG": str(config)}

    def start(self) -> str:
        """Start it; its first line (the serving summary), once everything is up."""
        from arena.local.arena import arena_command

        tls = [] if not self.pki else ["--tls-cert", str(self.pki["cert"]), "--tls-key", str(self.pki["key"]),
                                       "--tls-ca", str(self.pki["ca"])]  # fmt: skip
        self.proc = subprocess.Popen(
            arena_command("serve", "--data", str(self.data), "--listen", self.gateway, *self.flags, *tls),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.env(),
        )  # fmt: skip
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        return self.line(lambda text: text.startswith("arena serving:"), 60)

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for text in proc.stdout:
            self.lines.put(text.rstrip("\n"))

    def line(self, wanted: Callable[[str], bool], timeout: float) -> str:
        """The next terminal line for which ``wanted(line)`` holds (skipping the others)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                text = self.lines.get(timeout=0.2)
            except queue.Empty:
                assert self.proc is not None and self.proc.poll() is None, ("serve exited", self.seen)
                continue
            self.seen.append(text)
            if wanted(text):
                return text
        raise AssertionError(f"no such line in {timeout} s; saw {self.seen}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def workers(self) -> list[int]:
        """Process ids of serve's children that are not its redis-server (its workers), zombies included."""
        assert self.proc is not None
        pids = []
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            pids += [int(p) for p in (task / "children").read_text().split()]
        return [p for p in pids if b"redis-server" not in Path(f"/proc/{p}/cmdline").read_bytes()]

    def worker_pid(self, worker_id: str) -> int | None:
        """The process id of the worker that registered as ``worker_id`` (a match record's ``worker``): serve
        starts each with ``--worker-id``. None when no live child has it."""
        for pid in self.workers():
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except FileNotFoundError:  # exited and reaped meanwhile
                continue
            if worker_id.encode() in argv:
                return pid
        return None

    def cli(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """``arena ARGV --gateway GATEWAY`` with its admin token (no TLS flags: a test adds its own)."""
        return arena(*argv, "--gateway", self.gateway, env=self.env(), timeout=timeout)


# ---------------------------------------------------------------------- a gateway in this event loop


@asynccontextmanager
async def gateway(redis_url: str, **kwargs: Any) -> AsyncIterator[str]:
    """A gateway in this event loop (``start_gateway``'s keywords); yields its address."""
    server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0", **kwargs)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(0)
        await servicer.close()


async def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """The gateway runs in this event loop: blocking client calls go through a thread."""
    return await asyncio.to_thread(fn, *args, **kwargs)


async def refused(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The status name of a call that must be refused."""
    with pytest.raises(ArenaError) as e:
        await call(fn, *args, **kwargs)
    return e.value.code


async def wait_for(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


def setup_owner_world(r: Any) -> dict[str, str]:
    """Owners ``me`` and ``them`` with a bot each (``mine``, ``theirs``) and the reference bot ``ref``;
    returns the owners' tokens by name."""
    owners, registry = Owners(r), Registry(r)
    _, me = owners.create("me")
    _, them = owners.create("them")
    registry.register("mine", "me", ["shanghaien"])
    registry.register("theirs", "them", ["shanghaien"])
    registry.register("ref", REFERENCE_OWNER, ["shanghaien"])
    return {"me": me, "them": them}


def early_in_window(r: Any, window_s: float) -> None:
    """Wait until Redis's clock (the limiter's) is in the first fifth of a rate window."""
    deadline = time.monotonic() + 2 * window_s
    while time.monotonic() < deadline:
        seconds, micros = r.time()
        if (int(seconds) * 1000 + int(micros) // 1000) % round(window_s * 1000) < window_s * 200:
            return
        time.sleep(0.02)


# ---------------------------------------------------------------------- bots and matches through the service

FAST = ("--lease-ms", "1500")  # worker flags: takeovers within seconds in tests
QUICK_JOIN = {"join_timeout_ms": 5_000, "disconnect_grace_ms": 8_000}


class SlowRandom(Bot):
    """Random legal moves, ``delay`` seconds each: matches last long enough to interrupt."""

    name = "slow-random"
    version = "2.1"

    def __init__(self, delay: float = 0.0, seed: int = 0) -> None:
        self.delay = delay
        self.rng = random.Random(seed)

    async def act(self, turn: Turn) -> Any:
        await asyncio.sleep(self.delay)
        return self.rng.choice(turn.legal_actions)


async def register(admin: ArenaClient, *names: str, game: str = "shanghaien") -> dict[str, str]:
    tokens = {}
    for name in names:
        _, tokens[name] = await call(admin.register_bot, name, "tests", [game], 20)
    return tokens


async def finished(admin: ArenaClient, match_ids: list[str], timeout: float) -> dict[str, Any]:
    done: dict[str, Any] = {}

    async def all_done() -> bool:
        for match_id in match_ids:
            if match_id not in done:
                m = await call(admin.describe, match_id)
                if m.state == 3:
                    done[match_id] = m
        return len(done) == len(match_ids)

    await wait_for(all_done, timeout, f"{len(match_ids)} matches to finish")
    return done


def run_bots(
    bots: dict[str, Bot], tokens: dict[str, str], gateway: str, *, ladder: bool = True
) -> list[ArenaBotRunner]:
    """Each bot's session in this event loop; ``ladder`` False: sessions that ask the ladder not to seat them."""
    runners = [ArenaBotRunner(bots[name], gateway, tokens[name], ladder=ladder) for name in bots]
    for r in runners:
        asyncio.get_running_loop().create_task(r.run())
    return runners


def results_recorded(url: str) -> int:
    r = redis.Redis.from_url(url)
    try:
        return int(r.xlen(keys.results()))
    finally:
        r.close()


# ---------------------------------------------------------------------- a referee in this event loop


def run_referee(test: Callable[[Referee, str], Awaitable[None]]) -> None:
    """Run ``test(referee, address)`` against a referee served on a loopback port (120 s at most)."""

    async def main() -> None:
        referee = Referee()
        server, port = await start_server(referee)
        try:
            await asyncio.wait_for(test(referee, f"127.0.0.1:{port}"), 120)
        finally:
            await referee.shutdown()
            await server.stop(None)

    asyncio.run(main())


def raw_session(stub: Any, token: str) -> tuple[Any, asyncio.Queue[bot_pb2.PlayRequest | None]]:
    """A Play stream driven by hand, request by request (put None to close it)."""
    requests: asyncio.Queue[bot_pb2.PlayRequest | None] = asyncio.Queue()

    async def feed() -> Any:
        while (item := await requests.get()) is not None:
            yield item

    return stub.Play(feed(), metadata=(("authorization", f"Bearer {token}"),)), requests


@contextmanager
def web_server(
    redis_url: str, *extra: str, env: dict[str, str] | None = None, log: Path | None = None
) -> Iterator[str]:
    """``arena web`` as its own process on a free loopback port, reading ``redis_url``; yields its URL
    (``http://127.0.0.1:PORT``, https with ``--tls-cert``) once it listens; SIGTERM at the end. Its JSON
    log lines go to ``log`` (default: discarded)."""
    from arena.local.arena import arena_command
    from arena.local.redisproc import free_port

    port = free_port()
    out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        arena_command("web", "--listen", f"127.0.0.1:{port}", *extra),
        env={**os.environ, "ARENA_REDIS_URL": redis_url, **(env or {})}, stdout=out, stderr=out,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"arena web exited with {proc.returncode} (log: {log})")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError("arena web did not listen within 30 s") from None
                time.sleep(0.05)
        yield f"{'https' if '--tls-cert' in extra else 'http'}://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log is not None:
            out.close()  # type: ignore[union-attr]


# ---------------------------------------------------------------------- a real browser

CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--no-first-run")  # fmt: skip


@contextmanager
def headless_chromium(width: int = 1200, height: int = 800, *, network_log: bool = False) -> Iterator[Any]:
    """Debian's headless Chromium through chromedriver (selenium), in a fresh profile, as
    tests/test_replay.py drives it; skipped when missing (failed under CI, which installs them)."""
    import tempfile

    chromium, chromedriver = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
    missing = [str(p) for p in (chromium, chromedriver) if not p.exists()]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("the selenium package")
    if missing:
        message = f"no browser: {', '.join(missing)} missing (apt-get install chromium chromium-driver)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    profile = tempfile.mkdtemp(prefix="arena-chromium-")
    options = Options()
    options.binary_location = str(chromium)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    # ``network_log``: the DevTools network events too (what the page loaded: tests/test_replay.py)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", **({"performance": "ALL"} if network_log else {})})
    driver = webdriver.Chrome(service=Service(str(chromedriver)), options=options)
    try:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})  # fmt: skip
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
