"""``arena web``: the arena's website (``arena.web``)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from arena.cli.common import CliError, add_settings, run_service, settings


def cmd_web(args: argparse.Namespace) -> int:
    from arena.service.ratelimit import RateLimits
    from arena.web.app import start
    from arena.web.config import DEFAULT_LISTEN, WebConfig, parse_proxies
    from referee.logs import configure

    s = settings(args)
    configure(json=True, level=s.log_level, service="web")
    if bool(s.tls_cert) != bool(s.tls_key):
        raise CliError("--tls-cert and --tls-key go together")
    try:
        proxies = parse_proxies(args.trusted_proxies)
    except ValueError as e:
        raise CliError(f"--trusted-proxies: {e}") from None
    try:
        gateway_limits = RateLimits.from_settings(s)
    except ValueError as e:
        raise CliError(str(e)) from None
    config = WebConfig(
        redis_url=s.redis_url, listen=s.listen or DEFAULT_LISTEN, archive=Path(s.archive) if s.archive else None,
        tls_cert=Path(s.tls_cert) if s.tls_cert else None, tls_key=Path(s.tls_key) if s.tls_key else None,
        trusted_proxies=proxies, requests_per_min=args.requests_per_min, gateway_limits=gateway_limits,
    )  # fmt: skip

    from arena import metrics

    # /metrics and /healthz on --metrics-port, on the host of --listen (as every service); a Redis PING
    # for health, which the web's read-only Redis user may send
    metrics.serve(int(s.metrics_port), config.listen, [metrics.WEB], s.redis_url)

    async def main(stop: asyncio.Event) -> None:
        runner, url = await start(config)
        print(f"arena web: {url}", flush=True)
        await stop.wait()
        await runner.cleanup()

    return run_service(main)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "web", help="the arena's website: leaderboards, bots, matches, replays and live matches (reads Redis only)",
        epilog="Listens on --listen (default 127.0.0.1:8080), over HTTPS with --tls-cert/--tls-key, else plain HTTP "
        "(behind an ingress that terminates TLS). Stateless: run as many as you like behind a load balancer.",
    )  # fmt: skip
    add_settings(p, "redis_url", "listen", "archive", "metrics_port", "log_level", "tls_cert", "tls_key",
                 prints_result=False)  # fmt: skip
    p.add_argument(
        "--trusted-proxies",
        default="",
        help="addresses or networks (comma-separated) whose X-Forwarded-For is believed (default: none)",
    )
    p.add_argument(
        "--requests-per-min",
        type=int,
        default=600,
        help="requests per client address and minute (0: no limit; default 600)",
    )
    p.set_defaults(func=cmd_web)
