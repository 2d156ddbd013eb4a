"""The long-running processes: ``arena serve`` (all in one), ``arena gateway``, ``arena worker`` and
``arena referee serve`` (a standalone referee). Each logs JSON lines and stops cleanly on SIGTERM; none
prints a result, so none takes ``--json``."""

from __future__ import annotations

import argparse
import asyncio
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


def cmd_worker(args: argparse.Namespace) -> int:
    from arena import metrics
    from arena.service.worker import Worker
    from referee.logs import configure

    s = settings(args)
    configure(json=True, level=s["log_level"], service="worker")
    listen = s["listen"] or "0.0.0.0:50061"
    strong_admin_token(s)
    tls = listen_tls(s, listen)
    metrics.serve(int(s["metrics_port"]), listen, [metrics.WORKER], s["redis_url"])

    async def main(stop: asyncio.Event) -> None:
        worker = Worker(
            s["redis_url"], listen=listen, advertise=s["advertise"] or None,
            worker_id=args.worker_id, capacity=args.capacity, lease_ms=args.lease_ms, drain_s=args.drain_s,
            admin_token=s["admin_token"], tls=tls,
        )  # fmt: skip
        await worker.start()
        await worker.run(stop)

    return run_service(main)



def cmd_gateway(args: argparse.Namespace) -> int:
    from arena import metrics
    from arena.ladder.service import host_ladder
    from arena.service.gateway import start_gateway
    from referee.logs import configure

    s = settings(args)
    configure(json=True, level=s["log_level"], service="gateway")
    listen = s["listen"] or "0.0.0.0:50051"
    strong_admin_token(s, required=True)  # its hash in Redis is what admin calls are checked against
    tls = listen_tls(s, listen)
    worker_tls = dial_tls(s)
    limits = rate_limits(s)
    archive, retention_s = transcript_archive(s)
    metrics.serve(int(s["metrics_port"]), listen, [metrics.GATEWAY], s["redis_url"])

    async def main(stop: asyncio.Event) -> None:
        if s["admin_token"]:  # the deployment's secret: its hash is what admin calls are checked against
            from arena.redis_client import connect
            from arena.service.registry import Registry

            client = connect(s["redis_url"])
            Registry(client).set_admin_token(s["admin_token"])
            client.close()
        server, _, servicer = await start_gateway(
            s["redis_url"], listen, host_ladder, tls=tls, worker_tls=worker_tls, direct=args.advertise_workers,
            limits=limits, archive=archive, retention_s=retention_s,
        )
        await stop.wait()
        await server.stop(2.0)
        await servicer.close()

    return run_service(main)


def cmd_serve(args: argparse.Namespace) -> int:
    from arena import metrics
    from arena.ladder.runner import LadderRunner
    from arena.ladder.scheduler import SchedulerConfig
    from arena.ladder.service import host_ladder
    from arena.local.arena import LocalArena
    from referee.logs import configure

    s = settings(args)
    data = Path(args.data).resolve()  # redis-server changes into its --dir before it opens its log file
    listen = s["listen"] or "127.0.0.1:50051"
    strong_admin_token(s)
    tls = listen_tls(s, listen)
    if tls is not None and not s["tls_ca"]:
        raise CliError("with --tls-cert, give --tls-ca too: the gateway verifies its workers (same certificate)", 2)
    limits = rate_limits(s)
    archive, retention_s = transcript_archive(s, default=str(data / "archive"))
    metrics_port = int(s["metrics_port"])
    # this process is the gateway (and the ladder's result consumer): its log is JSON lines in a file,
    # the terminal gets the few lines below; the workers log to their own files
    configure(json=True, level=s["log_level"], service="gateway", file=data / "logs" / "gateway.log")

    async def main(stop: asyncio.Event) -> None:
        arena = LocalArena(
            data, workers=args.workers, redis_url=args.redis, gateway_address=listen,
            admin_token=s["admin_token"] or None, log_level=s["log_level"], gateway_extra=host_ladder,
            tls=tls, tls_ca=Path(s["tls_ca"]) if tls is not None else None, limits=limits, metrics_port=metrics_port,
            archive=archive, retention_s=retention_s,
        )  # fmt: skip
        async with arena:
            metrics.serve(metrics_port, listen, [metrics.GATEWAY, metrics.LADDER], arena.redis_url)
            # rated results count as they come: the ladder applies them (scheduling stays `arena ladder run`'s)
            runner = LadderRunner(arena.redis_url, SchedulerConfig(), schedule=False)
            threads = runner.start()
            console.print(
                f"arena serving: gateway {arena.gateway}{' (TLS)' if tls else ''}, Redis {arena.redis_url}, "
                f"{args.workers} worker(s); admin token in {data / 'admin-token'}; logs in {arena.logs}"
            )
            if metrics_port:
                console.print(
                    f"metrics: gateway and ladder on port {metrics_port}, workers on "
                    f"{metrics_port + 1}-{metrics_port + args.workers} (/metrics, /healthz)"
                )
            await stop.wait()
            console.print("stopping")
            await asyncio.to_thread(runner.stop, threads)

    return run_service(main)



def cmd_referee_serve(args: argparse.Namespace) -> int:
    import structlog

    from referee.logs import configure
    from referee.server import Referee, start_server
    from referee.wire.values import token_sha256

    configure(json=True, level=args.log_level, service="referee")
    tls = listen_tls(settings(args), f"{args.host}:{args.port}")
    if args.admin_token:
        strong_admin_token({"admin_token": args.admin_token})

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



RATE_SETTINGS = ("session_opens_per_min", "match_requests_per_min", "rate_window_s", "archive",
                 "transcript_retention_min")  # and the transcripts' archive: the gateway's settings too


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve", help="an all-in-one local arena: Redis, gateway and referee workers",
        epilog="With --metrics-port N, /metrics and /healthz of the gateway (and ladder) are on port N and "
        "worker I's on N+1+I. Logs: JSON lines in DATA/logs/ (gateway.log, worker-I.log).",
    )  # fmt: skip
    add_settings(p, "listen", "admin_token", "metrics_port", "log_level", "tls_cert", "tls_key", "tls_ca",
                 *RATE_SETTINGS, prints_result=False)  # fmt: skip
    p.add_argument("--data", default="arena-data", help="folder for Redis data, logs and the admin token")
    p.add_argument("--redis", help="use this Redis instead of starting one")
    p.add_argument("--workers", type=positive_int, default=2, help="referee worker processes (default 2)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser(
        "gateway", help="the public address: bot sessions and Play streams (relayed to the workers), registry, "
        "matches, transcripts, the ladder",
    )  # fmt: skip
    add_settings(p, "redis_url", "listen", "admin_token", "metrics_port", "log_level", "tls_cert", "tls_key",
                 "tls", "tls_ca", "tls_server_name", *RATE_SETTINGS, prints_result=False)  # fmt: skip
    p.add_argument("--advertise-workers", action="store_true",
                   help="tell bots the worker running each match, for bots inside the arena's network that dial "
                   "workers themselves (default: bots play through this gateway)")  # fmt: skip
    p.set_defaults(func=cmd_gateway)

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
