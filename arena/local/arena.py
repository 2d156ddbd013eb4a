"""A whole arena on this machine: a ``redis-server`` with its data in a folder, the gateway, and
referee workers in their own processes. Used by ``arena serve``, ``arena local``, the tests and the
benchmarks, so that they all run the same processes a deployment runs.

The redis-server it starts keeps its port and a password in ``DATA/redis-url`` (mode 0600). With TLS the
gateway dials its workers at 127.0.0.1, so it checks their certificate for a name on it (the certificate
is usually for a DNS name); ``supervise`` replaces a worker that dies, as a deployment's orchestrator would.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import structlog

from arena import keys
from arena.local.logsink import RotatingLog, spawn_logged
from arena.local.redisproc import RedisProcess
from arena.redis_client import connect
from arena.service.gateway import ArenaServicer, start_gateway
from arena.service.registry import Registry
from arena.tokens import new_admin_token, weak_token_reason
from referee.wire.tls import ClientTls, ServerTls, server_name_for

log = structlog.get_logger("arena.local")

RESTARTS_PER_MIN: Final = 5
"""Deaths of one worker slot within a minute after which ``supervise`` gives up on it (a crash loop)."""
MAX_RESTART_DELAY_S: Final = 30.0


def arena_command(*args: str) -> list[str]:
    """The ``arena`` command as a child process (the same interpreter, whatever the PATH)."""
    return [sys.executable, "-m", "arena.cli", *args]


def start_bot(name: str, token: str, gateway: str, logs: Path, time_per_move: float) -> subprocess.Popen[bytes]:
    """A reference bot as its own process, connected to the gateway through its session (``arena bot
    run``), logging to ``logs/bot-NAME.log``; ``strong`` at its measured rollout counts unless
    ``time_per_move`` is given. Used by ``arena local`` and the benchmarks."""
    extra: list[str] = []
    if name == "strong":
        extra = ["--time-per-move", str(time_per_move)] if time_per_move else ["--rollouts", "measured"]
    process, _ = spawn_logged(
        arena_command("bot", "run", name, "--arena", gateway, "--log-level", "WARNING", *extra),
        logs / f"bot-{name}.log",
        env={**os.environ, "ARENA_BOT_TOKEN": token},
    )
    return process


@dataclass
class WorkerProcess:
    index: int
    process: subprocess.Popen[bytes]
    log_path: Path
    log_file: RotatingLog = field(repr=False)
    worker_id: str = ""

    def kill(self) -> None:
        """Like a crash: SIGKILL, nothing cleaned up."""
        self.process.kill()
        self.process.wait()

    def stop(self, timeout: float = 15.0) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log_file.close()


class LocalArena:
    """``async with LocalArena(folder) as arena:`` Redis (unless ``redis_url`` is given), the gateway
    in this process, and ``workers`` worker processes; everything stopped on exit."""

    def __init__(
        self,
        data_dir: Path,
        *,
        workers: int = 2,
        redis_url: str | None = None,
        gateway_address: str = "127.0.0.1:0",
        admin_token: str | None = None,
        worker_args: tuple[str, ...] = (),
        log_level: str = "INFO",
        gateway_extra: Any = None,
        tls: ServerTls | None = None,
        tls_ca: Path | None = None,
        limiter: Any = None,
        limits: Any = None,
        archive: Any = None,
        retention_s: float | None = None,
        metrics_port: int = 0,
        direct: bool = False,
        play_proxy: str = "",
        tls_server_name: str = "",
        supervise: bool = False,
        say: Callable[[str], None] | None = None,
        worker_redis: Callable[[int, str], str] | None = None,
        web: str = "",
    ) -> None:
        self.data_dir = data_dir
        self.n_workers = workers
        self.redis_url = redis_url or ""
        self.gateway_address = gateway_address
        self.admin_token = admin_token or os.environ.get("ARENA_ADMIN_TOKEN", "")
        self.worker_args = worker_args
        self.log_level = log_level
        self.gateway_extra = gateway_extra
        self.tls = tls  # the gateway's and the workers' certificate
        self.tls_ca = tls_ca  # what the gateway trusts dialling its workers (None: the system's roots)
        self.tls_server_name = tls_server_name  # the name to check the workers for ("": found on the certificate)
        self.supervise = supervise  # restart dead workers (arena serve)
        self.say = say  # where a person hears of a worker's death and restart (arena serve: the terminal)
        self.limiter = limiter  # a ready RateLimiter (tests), else one from ``limits`` (RateLimits; None: defaults)
        self.limits = limits
        self.archive = archive  # TranscriptArchive: where the gateway reads (and moves) old transcripts
        self.retention_s = retention_s
        # a worker slot's own way to Redis, from (slot, Redis's URL): a test's TCP proxy that cuts one worker off
        self.worker_redis = worker_redis
        # the website (arena.web) in this process, listening here ("": none); served with the gateway's TLS
        self.web_listen = web
        self.web_url = ""
        self._web: Any = None
        self.direct = direct  # sessions name the worker and bots dial it themselves (gateway --advertise-workers)
        self.play_proxy = play_proxy  # sessions name this Play proxy and the worker's route (gateway --play-proxy)
        self.metrics_port = metrics_port  # the gateway's (served by the caller); worker i gets metrics_port + 1 + i
        self.redis: RedisProcess | None = None
        self.workers: list[WorkerProcess] = []
        self.gateway = ""
        self._server: Any = None
        self._servicer: ArenaServicer | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._deaths: dict[int, list[float]] = {}  # worker slot -> when it died, the last minute's
        self._handled: set[int] = set()  # pids of dead workers already reported

    @property
    def logs(self) -> Path:
        return self.data_dir / "logs"

    async def __aenter__(self) -> LocalArena:
        try:
            return await self._start()
        except BaseException:
            await self.__aexit__()  # what did start (Redis, workers) must not outlive us
            raise

    async def _start(self) -> LocalArena:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        if not self.redis_url:
            self.redis = RedisProcess.kept(self.data_dir / "redis", self.data_dir / "redis-url").start()
            self.redis_url = self.redis.url
        token_file = self.data_dir / "admin-token"
        if not self.admin_token:
            if token_file.is_file():
                self.admin_token = token_file.read_text().strip()
            if not self.admin_token or weak_token_reason(self.admin_token) is not None:  # made by an older version
                self.admin_token = new_admin_token()
                token_file.write_text(self.admin_token + "\n")
                token_file.chmod(0o600)
        client = connect(self.redis_url)
        Registry(client).set_admin_token(self.admin_token)
        client.close()
        for _ in range(self.n_workers):  # first: the gateway's TLS towards them is read off their certificate
            self.start_worker()
        await self.wait_for_workers(self.n_workers)
        worker_tls = await asyncio.to_thread(self._worker_tls) if self.tls is not None else None
        self._server, port, self._servicer = await start_gateway(
            self.redis_url, self.gateway_address, self.gateway_extra, tls=self.tls, worker_tls=worker_tls,
            limiter=self.limiter, limits=self.limits, archive=self.archive, retention_s=self.retention_s,
            direct=self.direct, play_proxy=self.play_proxy,
        )  # fmt: skip
        self.gateway = f"{self.gateway_address.rpartition(':')[0]}:{port}"
        if self.web_listen:
            await self._start_web()
        if self.supervise:
            self._supervisor = asyncio.get_running_loop().create_task(self._supervise(), name="worker-supervisor")
        return self

    async def _start_web(self) -> None:
        """The website on ``web_listen``; on a port that is taken (another arena's site), on a free one
        instead, said in ``web_url``, so that the main command never fails for a busy 8080."""
        from arena.web.app import start
        from arena.web.config import WebConfig

        tls = self.tls
        config = WebConfig(
            redis_url=self.redis_url, listen=self.web_listen, archive=self.archive.root if self.archive else None,
            tls_cert=tls.cert if tls else None, tls_key=tls.key if tls else None,
        )  # fmt: skip
        try:
            self._web, self.web_url = await start(config)
        except OSError:
            host = self.web_listen.rpartition(":")[0]
            self._web, self.web_url = await start(replace(config, listen=f"{host}:0"))

    def _worker_tls(self) -> ClientTls:
        """How the gateway verifies its workers: they listen on 127.0.0.1, which a certificate for a DNS
        name does not carry, so the name is checked instead (``tls_server_name``, else the certificate's
        own, read off a worker's handshake). TlsConfigError when ``tls_ca`` does not verify it, said at
        start-up: else every relayed stream fails its handshake and every match aborts."""
        address = self._a_worker_address()
        if address is None:  # no worker to ask
            return ClientTls(self.tls_ca, self.tls_server_name)
        return ClientTls(self.tls_ca, server_name_for(address, self.tls_ca, self.tls_server_name))

    def _a_worker_address(self) -> str | None:
        client = connect(self.redis_url, timeout_s=2)
        try:
            for w in self.workers:
                address: Any = client.hget(keys.worker(w.worker_id), "address")
                if address:
                    return str(address.decode())
            return None
        finally:
            client.close()

    async def __aexit__(self, *exc: object) -> None:
        if self._web is not None:
            await self._web.cleanup()
            self._web = None
        if self._supervisor is not None:
            self._supervisor.cancel()
            await asyncio.gather(self._supervisor, return_exceptions=True)
        await asyncio.to_thread(self.stop_workers)
        if self._server is not None:
            await self._server.stop(1.0)
        if self._servicer is not None:
            await self._servicer.close()
        if self.redis is not None:
            self.redis.stop()

    def start_worker(self, index: int | None = None) -> WorkerProcess:
        """A new worker process; with ``index``, in that slot (a replacement: same log, same metrics port)."""
        index = len(self.workers) if index is None else index
        log_path = self.logs / f"worker-{index}.log"
        redis_url = self.worker_redis(index, self.redis_url) if self.worker_redis else self.redis_url
        # the Redis URL in the environment, not on the command line, where any local user reads its password
        env = {**os.environ, "ARENA_ADMIN_TOKEN": "", "ARENA_TLS_CERT": "", "ARENA_TLS_KEY": "",
               "ARENA_REDIS_URL": redis_url}  # fmt: skip
        # explicit, so that an ARENA_METRICS_PORT meant for the gateway does not give every worker its port
        metrics = ["--metrics-port", str(self.metrics_port + 1 + index if self.metrics_port else 0)]
        worker_id = f"local-{index}-{secrets.token_hex(2)}"
        process, log_file = spawn_logged(
            arena_command(
                "worker", "--listen", "127.0.0.1:0", "--log-level", self.log_level, "--worker-id", worker_id,
                *metrics, *self._worker_tls_args(), *self.worker_args,
            ),
            log_path,
            env=env,
        )  # fmt: skip
        w = WorkerProcess(index, process, log_path, log_file, worker_id)
        if index < len(self.workers):
            self.workers[index] = w
        else:
            self.workers.append(w)
        return w

    async def _supervise(self) -> None:
        """Reap a worker that died (no ``<defunct>`` left behind), say so with its exit code or signal, and
        start another in its slot after a back-off (1 s, doubling to 30 s while it keeps dying); a slot that
        died more than ``RESTARTS_PER_MIN`` times in a minute is given up on, and that is said too."""
        while True:
            await asyncio.sleep(0.5)
            for w in list(self.workers):
                code = w.process.poll()  # reaps it
                if code is None or w.process.pid in self._handled:
                    continue
                self._handled.add(w.process.pid)
                w.log_file.close()
                now = time.monotonic()
                deaths = [t for t in self._deaths.get(w.index, []) if now - t < 60] + [now]
                self._deaths[w.index] = deaths
                how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
                fields = {"signal": signal.Signals(-code).name} if code < 0 else {"exit_code": code}
                if len(deaths) > RESTARTS_PER_MIN:
                    log.error("worker restarts given up", worker=w.index, pid=w.process.pid, deaths_per_min=len(deaths),
                              log_file=str(w.log_path), **fields)  # fmt: skip
                    self._tell(f"worker {w.index} exited ({how}), its {len(deaths)}th death in a minute: not "
                               f"restarting it; see {w.log_path}")  # fmt: skip
                    continue
                delay = min(MAX_RESTART_DELAY_S, 2.0 ** (len(deaths) - 1))
                log.error("worker exited", worker=w.index, pid=w.process.pid, restart_in_s=delay,
                          log_file=str(w.log_path), **fields)  # fmt: skip
                self._tell(f"worker {w.index} exited ({how}); restarting it in {delay:g} s; see {w.log_path}")
                asyncio.get_running_loop().call_later(delay, self._restart, w.index)

    def _restart(self, index: int) -> None:
        if self._supervisor is None or self._supervisor.done():  # stopping
            return
        w = self.start_worker(index)
        log.info("worker restarted", worker=index, pid=w.process.pid)

    def _tell(self, line: str) -> None:
        if self.say is not None:
            self.say(line)

    def _worker_tls_args(self) -> list[str]:
        return [] if self.tls is None else ["--tls-cert", str(self.tls.cert), "--tls-key", str(self.tls.key)]

    def live_workers(self) -> int:
        """How many of the workers this arena started are registered. Only ours: a data folder's Redis keeps
        the last run's workers registered until their time-to-live runs out."""
        client = connect(self.redis_url, timeout_s=2)
        try:
            return sum(1 for w in self.workers if client.exists(keys.worker(w.worker_id)))
        finally:
            client.close()

    async def wait_for_workers(self, n: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if await asyncio.to_thread(self.live_workers) >= n:
                return
            dead = [w for w in self.workers if w.process.poll() is not None]
            if dead:
                raise RuntimeError(f"worker {dead[0].index} exited at start; see {dead[0].log_path}")
            await asyncio.sleep(0.1)
        raise TimeoutError(f"{n} worker(s) did not register within {timeout} s; see {self.logs}")

    def stop_workers(self) -> None:
        for w in self.workers:
            if w.process.poll() is None:
                w.process.send_signal(signal.SIGTERM)
        for w in self.workers:
            w.stop()
