"""A TCP proxy that faults a link for real: ``cut`` closes every connection through it and refuses new
ones (a cable pulled, a firewall's reject), ``blackhole`` keeps the connections open but passes no byte
either way (packets dropped: the far side learns of nothing until its own timeouts fire), ``heal``
passes traffic again. It runs on its own thread and event loop, so a busy test loop does not slow it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from typing import Literal

Mode = Literal["pass", "cut", "blackhole"]


class TcpProxy:
    """``with TcpProxy(port) as proxy:`` listens on ``proxy.port`` (loopback) and forwards to ``port``."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.mode: Mode = "pass"
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.StreamWriter] = set()

    def __enter__(self) -> TcpProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def url(self, redis_url: str) -> str:
        """``redis_url`` with its port replaced by the proxy's."""
        head, _, tail = redis_url.rpartition(f":{self.target[1]}")
        return f"{head}:{self.port}{tail}"

    def cut(self) -> None:
        self._set("cut")

    def blackhole(self) -> None:
        self._set("blackhole")

    def heal(self) -> None:
        self._set("pass")

    def _set(self, mode: Mode) -> None:
        async def apply() -> None:
            self.mode = mode
            if mode == "cut":
                for w in list(self._links):
                    _reset(w)
                self._links.clear()

        asyncio.run_coroutine_threadsafe(apply(), self._loop).result(10)

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._links):
            _reset(w)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "cut":
            _reset(writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            _reset(writer)
            return
        self._links.update((writer, up_writer))
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        self._links.difference_update((writer, up_writer))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                if self.mode == "blackhole":
                    continue  # dropped on the floor
                if self.mode == "cut":
                    break
                writer.write(data)
                await writer.drain()
        _reset(writer)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a link that breaks does, rather than a polite FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    with contextlib.suppress(Exception):
        writer.close()
