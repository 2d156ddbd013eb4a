"""The web application: one aiohttp ``Application`` whose pages, API and live streams are registered by
their modules (``pages``, ``api``, ``live``, ``owners``), with what every response shares here: the
templates (Jinja2, autoescaped), the security headers, the error pages (404, 503 when Redis cannot answer,
500 without a traceback) and one JSON log line a request.
"""

from __future__ import annotations

import asyncio
import secrets
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

import jinja2
import structlog
from aiohttp import web

from arena import metrics
from arena.web.config import WebConfig
from arena.web.data import DataUnavailableError, WebData

log = structlog.get_logger("arena.web")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

DATA: web.AppKey[WebData] = web.AppKey("data", WebData)
CONFIG: web.AppKey[WebConfig] = web.AppKey("config", WebConfig)
TEMPLATES: web.AppKey[jinja2.Environment] = web.AppKey("templates", jinja2.Environment)

# What a page may load and run: only this site's files, and inline scripts carrying the response's nonce
# (the replay's data); no plugin, no framing by another site, no form posted elsewhere.
CSP = ("default-src 'self'; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")  # fmt: skip


def templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("arena.web", "templates"),
        autoescape=True,  # every value is text unless a template says otherwise (none takes bot text raw)
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["utc"] = _utc
    return env


def render(request: web.Request, template: str, status: int = 200, **context: Any) -> web.Response:
    """A page from ``template`` with ``context``; every page gets the request's CSP nonce and the games."""
    from referee import games

    env = request.app[TEMPLATES]
    html = env.get_template(template).render(nonce=request["nonce"], game_ids=games.GAME_IDS, **context)
    return web.Response(text=html, status=status, content_type="text/html", charset="utf-8")


def wants_json(request: web.Request) -> bool:
    return request.path.startswith("/api/")


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Unknown paths 404, Redis away 503 (saying so), anything else 500: a page (or JSON under /api),
    never a traceback."""
    try:
        return await handler(request)
    except web.HTTPException as e:
        if e.status < 400 or e.empty_body:
            raise
        return _error(request, e.status, e.reason if e.text is None or e.text.startswith(f"{e.status}:") else e.text)
    except DataUnavailableError as e:
        log.warning("redis unavailable", path=request.path, error=str(e))
        response = _error(request, 503, f"The arena's data cannot be read right now: {e}")
        response.headers["Retry-After"] = "5"
        return response
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("request failed", path=request.path)
        return _error(request, 500, "Something went wrong on our side; it is logged.")


def _error(request: web.Request, status: int, message: str) -> web.Response:
    if wants_json(request):
        return web.json_response({"error": {"status": status, "message": message}}, status=status)
    return render(request, "error.html", status=status, status_code=status, message=message)


@web.middleware
async def headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The nonce for this response's inline scripts, the security headers, and one log line a request."""
    request["nonce"] = secrets.token_urlsafe(16)
    started = time.perf_counter()
    try:
        response = await handler(request)
    except web.HTTPException as e:  # a redirect or a 304 raised past the error pages: the same treatment
        _secure(request, e.headers)
        _observe(request, e.status, started, log_it=True)
        raise
    _secure(request, response.headers)
    _observe(request, response.status, started, log_it=not response.prepared)  # a stream logs when it ends
    return response


def _secure(request: web.Request, h: Any) -> None:
    h.setdefault("Content-Security-Policy", CSP.format(nonce=request["nonce"]))
    h.setdefault("X-Content-Type-Options", "nosniff")
    h.setdefault("X-Frame-Options", "DENY")
    h.setdefault("Referrer-Policy", "same-origin")
    h.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    h.setdefault("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
    if request.app[CONFIG].secure:
        h.setdefault("Strict-Transport-Security", "max-age=31536000")


def _observe(request: web.Request, status: int, started: float, log_it: bool) -> None:
    """The request in the metrics (by route pattern and status) and, unless a stream, one log line."""
    elapsed = time.perf_counter() - started
    route = route_label(request)
    metrics.WEB_REQUESTS.labels(route, str(status)).inc()
    metrics.WEB_DURATION.labels(route).observe(elapsed)
    if log_it:
        log.info("request", method=request.method, path=request.path, status=status, ms=round(elapsed * 1000, 1))


def route_label(request: web.Request) -> str:
    """The route's pattern, not the path asked for: a metric's series stay few whatever clients type."""
    info = request.match_info
    if info.http_exception is not None or info.route.resource is None:
        return "unmatched"
    return info.route.resource.canonical


def make_app(config: WebConfig, data: WebData | None = None) -> web.Application:
    from arena.web import api, limits, live, owners, pages

    # headers first (every answer gets them, a 429 too), then the per-address limit, then the error pages
    app = web.Application(middlewares=[headers, limits.limits, errors])
    app[CONFIG] = config
    app[DATA] = data or WebData(config.redis_url, config.archive)
    app[TEMPLATES] = templates()
    for module in (limits, pages, api, live, owners):
        module.setup(app)
    metrics.WEB_LIVE_VIEWERS.set_function(lambda: float(live.live_viewers()))  # the live module keeps the count
    app.router.add_static("/static/", path=str(_static()), name="static", append_version=True)

    async def close(app: web.Application) -> None:
        app[DATA].close()

    app.on_cleanup.append(close)
    return app


def _static() -> Any:
    from importlib import resources

    return resources.files("arena.web") / "static"


def ssl_context(config: WebConfig) -> ssl.SSLContext | None:
    if config.tls_cert is None or config.tls_key is None:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(config.tls_cert, config.tls_key)
    return ctx


async def start(config: WebConfig, data: WebData | None = None) -> tuple[web.AppRunner, str]:
    """Serve the site; returns the runner (``await runner.cleanup()`` stops it) and its URL."""
    runner = web.AppRunner(make_app(config, data), access_log=None, handle_signals=False)
    await runner.setup()
    host, port = config.host_port
    ctx = ssl_context(config)
    site = web.TCPSite(runner, host, port, ssl_context=ctx, shutdown_timeout=2.0)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    server: Any = site._server
    bound = server.sockets[0].getsockname()[1] if server is not None and server.sockets else port
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    url = f"{'https' if ctx else 'http'}://{shown}:{bound}"
    log.info("web serving", url=url, tls=ctx is not None)
    return runner, url


def _utc(t: float | None) -> str:
    """A stored unix time as the pages show it: UTC, to the second; empty for none."""
    if not t:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
