"""Refused calls, seen from outside the handlers: every gateway call that ends UNAUTHENTICATED or
PERMISSION_DENIED is logged once and counted in ``arena_calls_refused_total{method, code}``.

An interceptor rather than a line beside each ``abort``: the refusals come from many places (the
gateway's token checks, ``TokenGate`` before LadderService, the Play relay), and one watch at the edge
sees them all and cannot be forgotten by a new call. The labels stay bounded: ``method`` is one of the
methods the server serves (others never reach a handler), ``code`` one of ``CODES``. The log line holds
the method, the code, the reason and the peer, never the token.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Final

import grpc
import structlog
from google.protobuf import descriptor_pool  # type: ignore[import-untyped]

from arena import metrics

log = structlog.get_logger("arena.service.refusals")

CODES: Final = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
_KINDS: Final = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")


def method_label(method: str) -> str:
    """``/arena.v1.ArenaService/ListBots`` as a label value: ``arena.v1.ArenaService/ListBots``."""
    return method.removeprefix("/")


class RefusalWatch(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Wraps each method's behaviour (whatever the call: ``EdgeInterceptor`` keeps one handler a method)
    to look at the call's status once it ends."""

    async def intercept_service(self, continuation: Callable[[Any], Any], details: grpc.HandlerCallDetails) -> Any:
        handler = await continuation(details)
        if handler is None:
            return handler
        label = method_label(details.method)
        for kind in _KINDS:
            behavior = getattr(handler, kind)
            if behavior is not None:
                return handler._replace(**{kind: _watched(behavior, label)})
        return handler

    @staticmethod
    def expect(services: Iterable[str]) -> None:
        """Start the counter's series of every method of these services (full names) at 0, so that the
        first refusal is a change ``rate()`` sees."""
        pool = descriptor_pool.Default()
        for service in services:
            for m in pool.FindServiceByName(service).methods:
                for code in CODES:
                    metrics.CALLS_REFUSED.labels(method_label(f"{service}/{m.name}"), code.name)


def _seen(label: str, context: grpc.aio.ServicerContext) -> None:
    """Log and count the call if its status is a refusal."""
    code = context.code()
    if code in CODES:
        metrics.CALLS_REFUSED.labels(label, code.name).inc()
        log.info("call refused", method=label, code=code.name, reason=str(context.details() or "")[:200],
                 peer=context.peer())  # fmt: skip


def _watched(behavior: Any, label: str) -> Any:
    """``behavior`` (a coroutine or async generator function, or a plain one) with ``_seen`` at its end."""
    if inspect.isasyncgenfunction(behavior):

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            try:
                async for response in behavior(request, context):
                    yield response
            finally:
                _seen(label, context)

        return stream

    async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            result = behavior(request, context)
            return await result if inspect.isawaitable(result) else result
        finally:
            _seen(label, context)

    return call
