"""A whole arena on this machine: a ``redis-server`` with its data in a folder, the gateway, and
referee workers in their own processes. Used by ``arena serve``, ``arena local``, the tests and the
benchmarks, so that they all run the same processes a deployment runs.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena import keys
from arena.local.logsink import RotatingLog, spawn_logged
from arena.local.redisproc import RedisProcess
from arena.redis_client import connect
from arena.service.gateway import ArenaServicer, start_gateway
from arena.service.registry import Registry
from arena.tokens import weak_token_reason
from referee.wire.tls import ClientTls, ServerTls


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
    ) -> None:
        self.data_dir = data_dir
        self.n_workers = workers
        self.redis_url = redis_url or ""
        self.gateway_address = gateway_address
        self.admin_token = admin_token or os.environ.get("ARENA_ADMIN_TOKEN", "")
        self.worker_args = worker_args
        self.log_level = log_level
        self.gateway_extra = gateway_extra
        self.tls = tls  # the gateway's and the workers' certificate (for 127.0.0.1/localhost here)
        self.tls_ca = tls_ca  # what the gateway trusts dialling its workers (and what clients need)
        self.limiter = limiter  # a ready RateLimiter (tests), else one from ``limits`` (RateLimits; None: defaults)
        self.limits = limits
        self.archive = archive  # TranscriptArchive: where the gateway reads (and moves) old transcripts
        self.retention_s = retention_s
        self.direct = direct  # sessions name the worker and bots dial it themselves (gateway --advertise-workers)
        self.metrics_port = metrics_port  # the gateway's (served by the caller); worker i gets metrics_port + 1 + i
        self.redis: RedisProcess | None = None
        self.workers: list[WorkerProcess] = []
        self.gateway = ""
        self._server: Any = None
        self._servicer: ArenaServicer | None = None

    @property
    def logs(self) -> Path:
        return self.data_dir / "logs"

    async def __aenter__(self) -> LocalArena:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        if not self.redis_url:
            self.redis = RedisProcess(self.data_dir / "redis").start()
            self.redis_url = self.redis.url
        token_file = self.data_dir / "admin-token"
        if not self.admin_token:
            if token_file.is_file():
                self.admin_token = token_file.read_text().strip()
            if not self.admin_token or weak_token_reason(self.admin_token) is not None:  # made by an older version
                self.admin_token = "arena_admin_" + secrets.token_urlsafe(32)
                token_file.write_text(self.admin_token + "\n")
                token_file.chmod(0o600)
        client = connect(self.redis_url)
        Registry(client).set_admin_token(self.admin_token)
        client.close()
        self._server, port, self._servicer = await start_gateway(
            self.redis_url, self.gateway_address, self.gateway_extra, tls=self.tls,
            worker_tls=ClientTls(self.tls_ca) if self.tls is not None else None, limiter=self.limiter,
            limits=self.limits, archive=self.archive, retention_s=self.retention_s, direct=self.direct,
        )  # fmt: skip
        self.gateway = f"{self.gateway_address.rpartition(':')[0]}:{port}"
        for _ in range(self.n_workers):
            self.start_worker()
        await self.wait_for_workers(self.n_workers)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop_workers)
        if self._server is not None:
            await self._server.stop(1.0)
        if self._servicer is not None:
            await self._servicer.close()
        if self.redis is not None:
            self.redis.stop()

    def start_worker(self) -> WorkerProcess:
        index = len(self.workers)
        log_path = self.logs / f"worker-{index}.log"
        env = {**os.environ, "ARENA_ADMIN_TOKEN": "", "ARENA_TLS_CERT": "", "ARENA_TLS_KEY": ""}
        # explicit, so that an ARENA_METRICS_PORT meant for the gateway does not give every worker its port
        metrics = ["--metrics-port", str(self.metrics_port + 1 + index if self.metrics_port else 0)]
        process, log_file = spawn_logged(
            arena_command(
                "worker", "--redis", self.redis_url, "--listen", "127.0.0.1:0", "--log-level", self.log_level,
                "--worker-id", f"local-{index}-{secrets.token_hex(2)}", *metrics, *self._worker_tls_args(),
                *self.worker_args,
            ),
            log_path,
            env=env,
        )  # fmt: skip
        w = WorkerProcess(index, process, log_path, log_file)
        self.workers.append(w)
        return w

    def _worker_tls_args(self) -> list[str]:
        return [] if self.tls is None else ["--tls-cert", str(self.tls.cert), "--tls-key", str(self.tls.key)]

    def live_workers(self) -> int:
        client = connect(self.redis_url, timeout_s=2)
        try:
            ids: Any = client.smembers(keys.workers())
            return sum(1 for i in ids if client.exists(keys.worker(i.decode())))
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
