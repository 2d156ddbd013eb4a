"""The public Play path through nginx: the routes, and nginx's config made from the live workers.

Behind a Play proxy the gateway keeps sessions, authorization and assignments but moves no Play bytes:
each assignment names the proxy and a route (``route_of`` the worker's address), which the bot sends as the
``x-arena-route`` metadata of its Play call; nginx maps the route to the worker's private address and
carries the stream there with ``grpc_pass``. A relayed message then costs nginx's C hop, not the
gateway's Python one (issue 32: about 36 us of CPU against 168 us). nginx passes only
``arena.v1.BotService/Play`` to workers and refuses every other call itself; the worker still
authenticates every seat with the bot's own token.

Routes are opaque (a hash of the address), so a bot learns no worker address, and nginx's map holds only
the live workers' routes, so a route reaches nothing else. ``sync`` rewrites the config as workers come and
go (the workers' registry in Redis; a takeover's assignment wakes it at once) and has nginx reload it:
SIGHUP to the master whose pid file is in the config's ``state_dir`` (nginx run by hand or by another
container sharing the pid namespace), or to the nginx ``run_nginx`` started as its child (one container).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import os
import re
import signal
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import redis
import structlog

from arena import keys

log = structlog.get_logger("arena.service.playproxy")

PLAY_PATH: Final = "/arena.v1.BotService/Play"
_ADDRESS: Final = re.compile(r"^[A-Za-z0-9.\-]+:[0-9]{1,5}$|^\[[0-9A-Fa-f:.]+\]:[0-9]{1,5}$")
"""A worker address nginx may be given: host:port or [v6]:port, nothing that could end a directive."""
WAKE_MS: Final = 1_000
"""The longest a new or departed worker waits to enter or leave the map (an assignment wakes it sooner)."""


def route_of(address: str) -> str:
    """The route a Play proxy maps to the worker at ``address``: the same on every gateway and proxy,
    and no address."""
    return "w" + hashlib.sha256(address.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class ProxyConfig:
    """How the generated nginx config listens and reaches the workers.

    ``tls_cert``/``tls_key``: TLS for bots terminates at nginx (none: plaintext HTTP/2, for tests and a
    proxy behind another TLS terminator). ``worker_ca``: the workers serve TLS signed by this CA, with
    ``worker_name`` on their certificate (none: plaintext on the internal network). ``state_dir``: nginx's
    pid file and its temporary files."""

    listen: str = "0.0.0.0:8443"
    tls_cert: str = ""
    tls_key: str = ""
    worker_ca: str = ""
    worker_name: str = ""
    state_dir: str = "/tmp/arena-play-proxy"
    worker_processes: int = 1

    def __post_init__(self) -> None:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("give the proxy's TLS certificate and key together")
        if bool(self.worker_name) != bool(self.worker_ca):
            raise ValueError("give the workers' CA and the name on their certificates together (nginx dials IPs)")
        if not _ADDRESS.match(self.listen) and not self.listen.isdigit():
            raise ValueError(f"listen {self.listen!r}: write host:port or a port")
        if self.worker_processes < 1:
            raise ValueError("worker_processes must be at least 1")

    @property
    def pid_file(self) -> Path:
        return Path(self.state_dir) / "nginx.pid"


def _grpc_error(name: str, code: int, message: str) -> str:
    """A named location that ends the call with a gRPC status (trailers only), not an HTTP error page."""
    return (
        f"        location @{name} {{\n"
        "            default_type application/grpc;\n"
        f"            add_header grpc-status {code} always;\n"
        f'            add_header grpc-message "{message}" always;\n'
        "            return 204;\n"
        "        }\n"
    )


def pin(address: str) -> str | None:
    """``address`` with its host resolved to an IP (nginx refuses a whole config, reload included, when
    one upstream's name does not resolve, so a worker whose name does not resolve yet is left out alone);
    None for one that cannot be used."""
    if not _ADDRESS.match(address):
        return None
    host, _, port = address.rpartition(":")
    if host.startswith("["):
        return address
    try:
        return f"{ipaddress.ip_address(host)}:{port}"
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    ip = str(infos[0][4][0])
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def render(conf: ProxyConfig, workers: Iterable[str], resolve: Callable[[str], str | None] = pin) -> str:
    """nginx.conf for the Play proxy in front of the workers advertised at ``workers`` (the routes are of
    these addresses; nginx dials ``resolve(address)``, and addresses it gives None for are left out, with a
    warning)."""
    addresses: list[tuple[str, str]] = []
    for a in sorted(set(workers)):
        dial = resolve(a)
        if dial is not None and _ADDRESS.match(dial):
            addresses.append((a, dial))
        else:
            log.warning("worker address left out of the proxy's map", address=a[:100])
    state = conf.state_dir
    scheme = "grpcs" if conf.worker_ca else "grpc"
    lines = [
        "# The arena's Play proxy (arena proxy-config, from the live workers in Redis). Generated: do not edit.",
        f"worker_processes {conf.worker_processes};",
        f"pid {state}/nginx.pid;",
        "error_log stderr warn;",
        "worker_shutdown_timeout 30s;  # a reload or stop waits this long for streams in flight, then cuts them",
        "events { worker_connections 8192; }",
        "http {",
        "    access_log off;",
        "    server_tokens off;",
        *(f"    {kind}_temp_path {state}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")),
        "    # a Play stream lasts a whole match (or many): no body limit, long idle timeouts",
        "    client_max_body_size 0;",
        "    client_body_timeout 1h;",
        "    keepalive_timeout 1h;",
        "    grpc_read_timeout 1h;",
        "    grpc_send_timeout 1h;",
        "    http2_max_concurrent_streams 1024;",
        "",
        "    # route (MatchAssigned.route, sent as x-arena-route) -> the worker's upstream; nothing else",
        "    map $http_x_arena_route $arena_worker {",
        '        default "";',
        *(f"        {route_of(a)} {route_of(a)};" for a, _ in addresses),
        "    }",
    ]
    for a, dial in addresses:
        lines += [f"    upstream {route_of(a)} {{", f"        server {dial};", "        keepalive 64;", "    }"]
    listen = conf.listen if ":" in conf.listen else f"0.0.0.0:{conf.listen}"
    tls = " ssl" if conf.tls_cert else ""
    lines += [
        "",
        "    server {",
        f"        listen {listen}{tls} http2;",
    ]
    if conf.tls_cert:
        lines += [
            f"        ssl_certificate {conf.tls_cert};",
            f"        ssl_certificate_key {conf.tls_key};",
            "        ssl_protocols TLSv1.2 TLSv1.3;",
        ]
    if conf.worker_ca:
        lines += [
            f"        grpc_ssl_trusted_certificate {conf.worker_ca};",
            "        grpc_ssl_verify on;",
            "        grpc_ssl_server_name on;",
            "        grpc_ssl_session_reuse on;",
        ]
        lines.append(f"        grpc_ssl_name {conf.worker_name};")
    lines += [
        "        error_page 401 = @unauthenticated;",
        "        error_page 403 = @denied;",
        "        error_page 502 503 504 = @unavailable;",
        f"        location = {PLAY_PATH} {{",
        '            if ($http_authorization = "") { return 401; }',
        '            if ($arena_worker = "") { return 503; }',
        f"            grpc_pass {scheme}://$arena_worker;",
        "        }",
        "        location / {",
        '            if ($http_authorization = "") { return 401; }',
        "            return 403;",
        "        }",
    ]
    text = "\n".join(lines) + "\n"
    text += _grpc_error("unauthenticated", 16, "no token: send authorization: Bearer <the bot token>")
    text += _grpc_error("denied", 7, "the Play proxy passes arena.v1.BotService/Play only")
    text += _grpc_error(
        "unavailable", 14, "no live worker on this route: play where the session's latest MatchAssigned says"
    )
    return text + "    }\n}\n"


def live_workers(r: Any) -> list[str]:
    """The addresses of the workers alive now (their registry hash has not run out)."""
    ids = sorted(keys.text(w) for w in r.smembers(keys.workers()))
    pipe = r.pipeline(transaction=False)
    for worker_id in ids:
        pipe.hget(keys.worker(worker_id), "address")
    return sorted({keys.text(a) for a in pipe.execute() if a})


def write(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` whole (a reader never sees half a config); False when it held it already."""
    with contextlib.suppress(FileNotFoundError):
        if path.read_text(encoding="utf-8") == text:
            return False
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)
    return True


def reload_nginx(pid_file: Path) -> bool:
    """Have the nginx master of ``pid_file`` reload its config (SIGHUP); False when none runs yet."""
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, signal.SIGHUP)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return False
    return True


async def sync(
    r: Any, conf: ProxyConfig, out: Path, stop: asyncio.Event, reload: Callable[[], bool] | None = None
) -> None:
    """Keep ``out`` the config for the live workers until ``stop``, reloading nginx after each change
    (``reload``; default: SIGHUP to the pid in the state folder). ``r``: a Redis client whose socket
    timeout allows ``WAKE_MS`` blocking reads. Redis away: the last config stays (running streams never
    need it), and it is read again with back-off."""
    reload = reload or (lambda: reload_nginx(conf.pid_file))
    Path(conf.state_dir).mkdir(parents=True, exist_ok=True)
    last: Any = b"$"
    delay = 0.1
    unloaded = False  # a config written that nginx was not told of yet (it was not running): told next round
    while not stop.is_set():
        try:
            workers = await asyncio.to_thread(live_workers, r)
            changed = await asyncio.to_thread(write, out, render(conf, workers))
            if changed or unloaded:
                unloaded = not reload()
                if changed or not unloaded:
                    log.info("play proxy config written", workers=len(workers), path=str(out), reloaded=not unloaded)
            # an assignment (a match started or taken over, perhaps by a new worker) wakes the next round
            reply: Any = await asyncio.to_thread(r.xread, {keys.assignments(): last}, count=100, block=WAKE_MS)
            for _, entries in reply or []:
                last = entries[-1][0]
            delay = 0.1
        except redis.RedisError as e:
            log.warning("redis unavailable, the proxy keeps its config", error=str(e)[:200])
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
            delay = min(5.0, delay * 2)


async def run_nginx(r: Any, conf: ProxyConfig, out: Path, stop: asyncio.Event, nginx: str = "nginx") -> None:
    """``sync`` with nginx as this process's child, started once the first config is written and reloaded
    after each change; on ``stop`` nginx stops gracefully (SIGQUIT: streams in flight end first, up to its
    ``worker_shutdown_timeout``). RuntimeError when nginx exits by itself (its own log says why)."""
    Path(conf.state_dir).mkdir(parents=True, exist_ok=True)
    conf.pid_file.unlink(missing_ok=True)  # a last run's: this nginx's says when it takes a reload
    write(out, render(conf, await asyncio.to_thread(live_workers, r)))
    proc = await asyncio.create_subprocess_exec(nginx, "-c", str(out), "-p", conf.state_dir, "-g", "daemon off;")
    log.info("nginx started", pid=proc.pid, config=str(out), listen=conf.listen)

    def reload() -> bool:
        """SIGHUP once nginx wrote its pid file: it sets its signal handlers before that, and a SIGHUP
        before them would end it."""
        if proc.returncode is not None or not conf.pid_file.exists():
            return False
        proc.send_signal(signal.SIGHUP)
        return True

    syncing = asyncio.create_task(sync(r, conf, out, stop, reload))
    exited = asyncio.create_task(proc.wait())
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({syncing, exited, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if exited.done():
            raise RuntimeError(f"nginx exited with status {proc.returncode}")
        if syncing.done():
            syncing.result()  # its error, if any
    finally:
        stop.set()
        for task in (syncing, stopping):
            task.cancel()
        if proc.returncode is None:
            proc.send_signal(signal.SIGQUIT)
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        exited.cancel()
