"""The long-running processes: ``arena serve`` (all in one), ``arena gateway``, ``arena worker`` and
``arena referee serve`` (a standalone referee). Each logs JSON lines and stops cleanly on SIGTERM; none
prints a result, so none takes ``--json``."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

from arena.cli.common import (
    CliError,
    add_settings,
    console,
    dial_tls,
    float_type,
    listen_tls,
    port_number,
    positive_int,
    rate_limits,
    run_service,
    settings,
    strong_admin_token,
    transcript_archive,
)
from arena.config import Settings


def cmd_worker(args: argparse.Namespace) -> int:
    from arena import metrics
    from arena.service.worker import Worker
    from referee.logs import configure

    s = settings(args)
    configure(json=True, level=s.log_level, service="worker")
    listen = s.listen or "0.0.0.0:50061"
    strong_admin_token(s.admin_token)
    tls = listen_tls(s, listen)
    metrics.serve(int(s.metrics_port), listen, [metrics.WORKER], s.redis_url)

    async def main(stop: asyncio.Event) -> None:
        worker = Worker(
            s.redis_url, listen=listen, advertise=s.advertise or None,
            worker_id=args.worker_id, capacity=args.capacity, lease_ms=args.lease_ms, drain_s=args.drain_s,
            admin_token=s.admin_token, tls=tls,
        )  # fmt: skip
        await worker.start()
        await worker.run(stop)

    return run_service(main)


def cmd_gateway(args: argparse.Namespace) -> int:
    from arena import metrics
    from arena.events.service import host_ladder_and_events
    from arena.service.gateway import start_gateway
    from arena.service.queue import QueueCollector
    from referee.logs import configure

    s = settings(args)
    configure(json=True, level=s.log_level, service="gateway")
    if args.advertise_workers and s.play_proxy:
        raise CliError("--advertise-workers or --play-proxy: assignments name the workers or the Play proxy", 2)
    listen = s.listen or "0.0.0.0:50051"
    strong_admin_token(s.admin_token, required=True)  # its hash in Redis is what admin calls are checked against
    tls = listen_tls(s, listen)
    worker_tls = dial_tls(s)
    limits = rate_limits(s)
    archive, retention_s = transcript_archive(s)
    metrics.serve(int(s.metrics_port), listen, [metrics.GATEWAY], s.redis_url, [QueueCollector])

    async def main(stop: asyncio.Event) -> None:
        if s.admin_token:  # the deployment's secret: its hash is what admin calls are checked against
            from arena.redis_client import connect
            from arena.service.registry import Registry

            client = connect(s.redis_url)
            Registry(client).set_admin_token(s.admin_token)
            client.close()
        server, _, servicer = await start_gateway(
            s.redis_url,
            listen,
            host_ladder_and_events,
            tls=tls,
            worker_tls=worker_tls,
            direct=args.advertise_workers,
            play_proxy=s.play_proxy,
            limits=limits,
            archive=archive,
            retention_s=retention_s,
        )
        await stop.wait()
        await server.stop(2.0)
        await servicer.close()

    # asyncio's loop: on uvloop's, the gateway stopped answering new sessions at 6,700-9,700 open ones in most
    # runs, loop and threads idle (docs/benchmarks.md, "The scheduler and sessions at scale")
    return run_service(main, uvloop=False)


def cmd_proxy_config(args: argparse.Namespace) -> int:
    import sys

    from arena.redis_client import connect
    from arena.service import playproxy
    from referee.logs import configure

    s = settings(args)
    configure(json=True, level=s.log_level, service="play-proxy")
    try:
        conf = playproxy.ProxyConfig(
            listen=args.proxy_listen, tls_cert=s.tls_cert, tls_key=s.tls_key, worker_ca=s.tls_ca,
            worker_name=s.tls_server_name, state_dir=args.state_dir, worker_processes=args.nginx_workers,
        )  # fmt: skip
    except ValueError as e:
        raise CliError(str(e), 2) from None
    if args.watch and not args.out:
        raise CliError("--watch needs --out (the file nginx reads)", 2)
    if args.nginx and not args.watch:
        raise CliError("--nginx needs --watch (nginx runs as long as the config is kept current)", 2)
    if args.worker and args.watch:
        raise CliError("--worker or --watch: a fixed set of workers, or Redis's live ones", 2)
    r = None if args.worker else connect(s.redis_url, block_ms=playproxy.WAKE_MS)
    if not args.watch:
        text = playproxy.render(conf, args.worker or playproxy.live_workers(r))
        if args.out:
            Path(conf.state_dir).mkdir(parents=True, exist_ok=True)
            playproxy.write(Path(args.out), text)
        else:
            sys.stdout.write(text)
        return 0

    async def main(stop: asyncio.Event) -> None:
        if args.nginx:
            try:
                await playproxy.run_nginx(r, conf, Path(args.out), stop, args.nginx)
            except (RuntimeError, OSError) as e:
                raise CliError(f"the Play proxy stopped: {e}", 1) from None
        else:
            await playproxy.sync(r, conf, Path(args.out), stop)

    return run_service(main)


def cmd_serve(args: argparse.Namespace) -> int:
    from arena import metrics
    from arena.events.service import host_ladder_and_events
    from arena.ladder.scheduler import SchedulerConfig
    from arena.local.arena import LocalArena
    from arena.local.ladder_runner import LadderLagCollector, LadderRunner
    from arena.service.queue import QueueCollector
    from referee.logs import configure
    from referee.wire.tls import TlsConfigError

    s = settings(args)
    data = Path(args.data).resolve()  # redis-server changes into its --dir before it opens its log file
    listen = s.listen or "127.0.0.1:50051"
    strong_admin_token(s.admin_token)
    tls = listen_tls(s, listen)
    limits = rate_limits(s)
    archive, retention_s = transcript_archive(s, default=str(data / "archive"))
    metrics_port = int(s.metrics_port)
    # this process is the gateway (and the ladder): its log is JSON lines in a file, the terminal gets the
    # few lines below; the workers log to their own files
    configure(json=True, level=s.log_level, service="gateway", file=data / "logs" / "gateway.log")

    async def main(stop: asyncio.Event) -> None:
        arena = LocalArena(
            data, workers=args.workers, redis_url=args.redis, gateway_address=listen,
            admin_token=s.admin_token or None, log_level=s.log_level, gateway_extra=host_ladder_and_events,
            tls=tls, tls_ca=Path(s.tls_ca) if s.tls_ca else None, tls_server_name=s.tls_server_name,
            limits=limits, metrics_port=metrics_port, archive=archive, retention_s=retention_s,
            supervise=True, say=console.print, web=args.web,
        )  # fmt: skip
        try:
            await arena.__aenter__()
        except TlsConfigError as e:
            raise CliError(f"the gateway cannot verify its workers (they serve --tls-cert): {e}", 2) from None
        try:
            metrics.serve(metrics_port, listen, [metrics.GATEWAY, metrics.LADDER], arena.redis_url,
                          [QueueCollector, LadderLagCollector])  # fmt: skip
            # the ladder: results applied as they come, and (unless --no-ladder) rated matches scheduled
            runner = LadderRunner(arena.redis_url, SchedulerConfig(), schedule=args.ladder)
            threads = runner.start()
            console.print(
                f"arena serving: gateway {arena.gateway}{' (TLS)' if tls else ''}, "
                f"{_redis_line(args, arena.redis_url, data)}, {args.workers} worker(s); {_token_line(args, s, data)}; "
                f"logs in {arena.logs}"
            )
            if arena.web_url:
                console.print(f"website: {arena.web_url} (leaderboards, matches, replays, live matches)")
            console.print("ladder: scheduling rated matches between online bots" if args.ladder else
                          "ladder: applying results only (--no-ladder: another process schedules)")  # fmt: skip
            if metrics_port:
                console.print(
                    f"metrics: gateway and ladder on port {metrics_port}, workers on "
                    f"{metrics_port + 1}-{metrics_port + args.workers} (/metrics, /healthz)"
                )
            await stop.wait()
            console.print("stopping")
            await asyncio.to_thread(runner.stop, threads)
        finally:
            await arena.__aexit__()

    return run_service(main)


def _redis_line(args: argparse.Namespace, url: str, data: Path) -> str:
    """Where Redis is, without its password (a terminal is read over shoulders, and scrolls into logs)."""
    from arena.local.redisproc import shown

    return f"Redis {shown(url)}" + ("" if args.redis else f" (its URL, with the password, in {data / 'redis-url'})")


def _token_line(args: argparse.Namespace, s: Settings, data: Path) -> str:
    """Where the admin token is: the one given (named by where it came from), else the generated file."""
    if not s.admin_token:
        return f"admin token in {data / 'admin-token'}"
    where = "--admin-token" if args.admin_token else "$ARENA_ADMIN_TOKEN" if os.environ.get("ARENA_ADMIN_TOKEN") else (
        "the config file")  # fmt: skip
    return f"admin token: the one given ({where})"


def cmd_referee_serve(args: argparse.Namespace) -> int:
    import structlog

    from referee.host import Referee
    from referee.logs import configure
    from referee.server import start_server
    from referee.wire.values import token_sha256

    configure(json=True, level=args.log_level, service="referee")
    tls = listen_tls(settings(args), f"{args.host}:{args.port}")
    if args.admin_token:
        strong_admin_token(args.admin_token)

    async def main() -> None:
        referee = Referee(admin_token=args.admin_token)
        for token in args.allow_token or ():
            referee.allow_token(token_sha256(token), "cli")
        server, port = await start_server(referee, f"{args.host}:{args.port}", tls)
        structlog.get_logger("referee.serve").info("listening", host=args.host, port=port, tls=tls is not None)
        await server.wait_for_termination()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return 0
    return 0


RATE_SETTINGS = (
    "session_opens_per_min",
    "match_requests_per_min",
    "rate_window_s",
    "archive",
    "transcript_retention_min",
)  # and the transcripts' archive: the gateway's settings too


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve", help="an all-in-one arena on one machine: Redis, gateway, referee workers and the ladder",
        epilog="Its Redis keeps one port and a password, both in DATA/redis-url (mode 0600): other commands take "
        "--redis \"$(cat DATA/redis-url)\". A worker that dies is restarted (back-off; given up after 5 deaths in "
        "a minute), and said so here and in DATA/logs/gateway.log. TLS: --tls-cert and --tls-key, served by the "
        "gateway and the workers; the gateway verifies its workers (on 127.0.0.1) for the certificate's own "
        "name, against --tls-ca (a private CA's certificate) or, without it, the system's roots (a public "
        "certificate). With --metrics-port N, /metrics and /healthz of the gateway (and ladder) are on port N "
        "and worker I's on N+1+I. Logs: JSON lines in DATA/logs/ (gateway.log, worker-I.log).",
    )  # fmt: skip
    add_settings(p, "listen", "admin_token", "metrics_port", "log_level", "tls_cert", "tls_key", "tls_ca",
                 "tls_server_name", *RATE_SETTINGS, prints_result=False)  # fmt: skip
    p.add_argument("--data", default="arena-data",
                   help="folder for Redis data, its URL (redis-url), logs and the admin token")  # fmt: skip
    p.add_argument("--redis", help="use this Redis instead of starting one")
    p.add_argument("--workers", type=positive_int, default=2, help="referee worker processes (default 2)")
    p.add_argument("--web", default="127.0.0.1:8080", metavar="HOST:PORT",
                   help="serve the website here (arena web, in this process; default 127.0.0.1:8080, another "
                   "free port when that one is taken; '' for none); with --tls-cert over HTTPS")  # fmt: skip
    p.add_argument("--ladder", action=argparse.BooleanOptionalAction, default=True,
                   help="schedule rated ladder matches between online bots, as `arena ladder run` does (default: "
                   "on; --no-ladder: only apply results, when an `arena ladder run` schedules)")  # fmt: skip
    for action in p._actions:  # what the two mean here: the gateway dialling its own workers
        if action.dest == "tls_ca":
            action.help = (
                "the CA (PEM) that signed --tls-cert, for the gateway to verify its workers (env "
                "ARENA_TLS_CA; default: the system's roots, enough for a public certificate)"
            )
        elif action.dest == "tls_server_name":
            action.help = (
                "the name to verify the workers' certificate for (env ARENA_TLS_SERVER_NAME; default: "
                "the certificate's own, found at start-up)"
            )
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser(
        "gateway", help="the public address: bot sessions and Play streams (relayed to the workers), registry, "
        "matches, transcripts, the ladder",
    )  # fmt: skip
    add_settings(p, "redis_url", "listen", "admin_token", "metrics_port", "log_level", "tls_cert", "tls_key",
                 "tls", "tls_ca", "tls_server_name", "play_proxy", *RATE_SETTINGS, prints_result=False)  # fmt: skip
    p.add_argument("--advertise-workers", action="store_true",
                   help="tell bots the worker running each match, for bots inside the arena's network that dial "
                   "workers themselves (default: bots play through this gateway)")  # fmt: skip
    p.set_defaults(func=cmd_gateway)

    p = sub.add_parser(
        "proxy-config", help="nginx's config for the public Play path (BotService/Play straight to the workers)",
        description="Write nginx.conf for the Play proxy from the live workers in Redis: each worker's route "
        "(what `arena gateway --play-proxy` tells bots) to its private address; only BotService/Play passes. "
        "With --watch it is rewritten as workers come and go and nginx (its pid file in --state-dir) reloads.",
    )  # fmt: skip
    add_settings(p, "redis_url", "log_level", "tls_cert", "tls_key", "tls_ca", "tls_server_name",
                 prints_result=False)  # fmt: skip
    for action in p._actions:
        if action.dest == "tls_cert":
            action.help = "the proxy's TLS certificate chain (PEM): TLS for bots ends at nginx (env ARENA_TLS_CERT)"
        elif action.dest == "tls_ca":
            action.help = "the CA (PEM) of the workers' certificates: nginx dials them over TLS (env ARENA_TLS_CA)"
        elif action.dest == "tls_server_name":
            action.help = "the name on the workers' certificates (env ARENA_TLS_SERVER_NAME; needed with --tls-ca)"
    p.add_argument(
        "--proxy-listen",
        default="0.0.0.0:8443",
        metavar="HOST:PORT",
        help="where nginx listens for bots (default 0.0.0.0:8443)",
    )
    p.add_argument(
        "--state-dir",
        default="/tmp/arena-play-proxy",
        help="nginx's pid file and temporary files (default /tmp/arena-play-proxy)",
    )
    p.add_argument("--nginx-workers", type=positive_int, default=1, help="nginx worker processes (default 1)")
    p.add_argument("--out", default="", help="write the config here (default: print it)")
    p.add_argument(
        "--watch",
        action="store_true",
        help="keep --out current as workers come and go, and have nginx reload it (until SIGTERM): "
        "SIGHUP to the pid in --state-dir's nginx.pid (an nginx run apart), or with --nginx to its own",
    )
    p.add_argument("--worker", action="append", default=[], metavar="HOST:PORT",
                   help="write the config for these workers instead of Redis's (repeat; not with --watch): a fixed "
                   "set, or deploy/validate.sh's nginx -t")  # fmt: skip
    p.add_argument(
        "--nginx",
        default="",
        metavar="PATH",
        help="with --watch: run this nginx binary as a child (one process tree, one container)",
    )
    p.set_defaults(func=cmd_proxy_config)

    p = sub.add_parser("worker", help="a referee worker: run matches from the queue")
    add_settings(p, "redis_url", "listen", "advertise", "admin_token", "metrics_port", "log_level", "tls_cert",
                 "tls_key", prints_result=False)  # fmt: skip
    p.add_argument("--worker-id", help="default: host-pid-random")
    p.add_argument("--capacity", type=positive_int, default=500, help="matches at once (default 500)")
    p.add_argument("--lease-ms", type=positive_int, default=10_000, help="lease length (default 10000)")
    p.add_argument("--drain-s", type=float_type(0), default=30.0, help="on SIGTERM, wait this long for matches to end")
    p.set_defaults(func=cmd_worker)

    ref = sub.add_parser("referee", help="the referee service").add_subparsers(dest="referee_command", required=True)
    p = ref.add_parser("serve", help="serve a standalone referee")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=port_number, default=50051)
    p.add_argument("--admin-token", help="required on RefereeService calls when set")
    p.add_argument("--allow-token", action="append", help="a bot token accepted before it is seated")
    p.add_argument("--log-level", default="INFO")
    add_settings(p, "tls_cert", "tls_key", prints_result=False)
    p.set_defaults(func=cmd_referee_serve)
