"""A Sentinel-managed Redis on loopback for tests and benchmarks: one primary, two replicas and three
sentinels, each a real process (Debian's ``redis-server``; a sentinel is ``redis-server --sentinel``), on
free ports, with short failure detection (``down_after_ms``) and failover timeout.

``SentinelSet.url`` is the arena's Sentinel URL for it (``redis+sentinel://...``). ``kill_primary`` SIGKILLs
the current primary (asked of the sentinels) and ``restart`` starts it again as a replica of the new one,
so the set is back to two replicas for the next kill; ``stop_primary``/``cont`` freeze and wake it.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from arena.local.redisproc import find_redis_server, free_port

SERVICE = "arena"


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class Node:
    name: str
    port: int
    folder: Path
    process: subprocess.Popen[bytes] | None = None


@dataclass
class SentinelSet:
    folder: Path
    down_after_ms: int = 1000
    failover_timeout_ms: int = 3000
    min_replicas_max_lag: int = 10
    binary: str = field(default_factory=find_redis_server)
    servers: list[Node] = field(default_factory=list)
    sentinels: list[Node] = field(default_factory=list)

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}/0"

    def _start_server(self, node: Node, replica_of: int | None) -> None:
        node.folder.mkdir(parents=True, exist_ok=True)
        args = [self.binary, "--port", str(node.port), "--bind", "127.0.0.1", "--dir", str(node.folder),
                "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
                "--logfile", str(node.folder / "redis.log"),
                # a primary cut off from its replicas refuses writes (deploy/redis.conf explains)
                "--min-replicas-to-write", "1", "--min-replicas-max-lag", str(self.min_replicas_max_lag),
                "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
                *(["--replicaof", "127.0.0.1", str(replica_of)] if replica_of else [])]  # fmt: skip
        node.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait(node)

    def _start_sentinel(self, node: Node, primary: int) -> None:
        node.folder.mkdir(parents=True, exist_ok=True)
        conf = node.folder / "sentinel.conf"
        conf.write_text(
            f"port {node.port}\nbind 127.0.0.1\ndir {node.folder}\nlogfile {node.folder / 'sentinel.log'}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary} 2\n"
            f"sentinel down-after-milliseconds {SERVICE} {self.down_after_ms}\n"
            f"sentinel failover-timeout {SERVICE} {self.failover_timeout_ms}\n"
            f"sentinel parallel-syncs {SERVICE} 1\n"
        )
        node.process = subprocess.Popen([self.binary, str(conf), "--sentinel"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)  # fmt: skip
        self._wait(node)

    def _wait(self, node: Node, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if node.process is not None and node.process.poll() is not None:
                raise RuntimeError(f"{node.name} exited at start; see {node.folder}")
            if _answers(node.port):
                return
            time.sleep(0.02)
        raise TimeoutError(f"{node.name} did not answer on port {node.port}")

    def start(self) -> SentinelSet:
        self.servers = [Node(f"redis-{i}", free_port(), self.folder / f"redis-{i}") for i in range(3)]
        self.sentinels = [Node(f"sentinel-{i}", free_port(), self.folder / f"sentinel-{i}") for i in range(3)]
        primary = self.servers[0].port
        self._start_server(self.servers[0], None)
        for node in self.servers[1:]:
            self._start_server(node, primary)
        for node in self.sentinels:
            self._start_sentinel(node, primary)
        self.wait_settled()
        return self

    def primary_port(self) -> int | None:
        """The primary's port as the sentinels' majority sees it, None when they do not agree."""
        seen: dict[int, int] = {}
        for node in self.sentinels:
            try:
                with redis.Redis(port=node.port, socket_timeout=1, socket_connect_timeout=1) as s:
                    addr = s.sentinel_get_master_addr_by_name(SERVICE)
            except redis.RedisError:
                continue
            if addr:
                seen[int(addr[1])] = seen.get(int(addr[1]), 0) + 1
        best = max(seen.items(), key=lambda kv: kv[1], default=None)
        return best[0] if best and best[1] >= 2 else None

    def node(self, port: int) -> Node:
        return next(n for n in self.servers if n.port == port)

    def wait_settled(self, timeout: float = 30.0, replicas: int = 2) -> int:
        """Wait until the sentinels agree on a primary that answers as one with ``replicas`` replicas in
        sync, and every sentinel knows them; the primary's port."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            port = self.primary_port()
            if port is not None:
                try:
                    with redis.Redis(port=port, socket_timeout=1, socket_connect_timeout=1) as r:
                        info = r.info("replication")
                    online = sum(1 for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)
                                 and v.get("state") == "online")  # fmt: skip
                    if info.get("role") == "master" and online >= replicas:
                        return port
                except redis.RedisError:
                    pass
            time.sleep(0.1)
        raise TimeoutError(f"the sentinels did not settle on a primary with {replicas} replicas; see {self.folder}")

    def kill_primary(self) -> Node:
        port = self.primary_port()
        assert port is not None, "no primary agreed on"
        node = self.node(port)
        assert node.process is not None
        node.process.kill()
        node.process.wait()
        node.process = None
        return node

    def restart(self, node: Node, timeout: float = 30.0) -> None:
        """Start a killed server again, as a replica of the primary the sentinels elected meanwhile."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            port = self.primary_port()
            if port is not None and port != node.port:
                break
            time.sleep(0.1)
        else:
            raise TimeoutError("no new primary elected")
        self._start_server(node, port)

    def stop_primary(self) -> Node:
        port = self.primary_port()
        assert port is not None
        node = self.node(port)
        assert node.process is not None
        node.process.send_signal(signal.SIGSTOP)
        return node

    def role(self, node: Node) -> str:
        """``master`` or ``slave``, as the server itself says."""
        with redis.Redis(port=node.port, socket_timeout=2, socket_connect_timeout=2) as r:
            return str(r.info("replication")["role"])

    def cont(self, node: Node) -> None:
        assert node.process is not None
        node.process.send_signal(signal.SIGCONT)

    def stop_servers(self) -> None:
        """Stop every Redis server (the sentinels stay): a restore's first step (docs/backup.md)."""
        for node in self.servers:
            if node.process is not None:
                node.process.send_signal(signal.SIGCONT)
                node.process.terminate()
                node.process.wait(10)
                node.process = None

    def start_servers(self, primary: Node) -> None:
        """Start ``primary`` on its folder as it is, then the others as its replicas (they sync from it)."""
        self._start_server(primary, None)
        for node in self.servers:
            if node is not primary:
                self._start_server(node, primary.port)

    def stop(self) -> None:
        for node in [*self.sentinels, *self.servers]:
            if node.process is not None:
                node.process.send_signal(signal.SIGCONT)
                node.process.terminate()
        for node in [*self.sentinels, *self.servers]:
            if node.process is not None:
                try:
                    node.process.wait(10)
                except subprocess.TimeoutExpired:
                    node.process.kill()
                    node.process.wait()
                node.process = None

    def __enter__(self) -> SentinelSet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
