"""structlog set-up: JSON lines for services, a readable console for interactive commands.

In JSON every event is one line: ``timestamp`` (ISO 8601, UTC), ``level``, ``service`` (which process),
``logger``, ``event`` and the fields the caller bound (``match_id``, ``bot``, ``worker`` ...). An
exception is one ``exception`` field (type, message and frames, never the frames' local variables, which
may hold tokens), not a multi-line traceback. The standard library's loggers (grpc, asyncio, warnings)
go through the same processors, so their errors come out as the same JSON lines, not as text.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, TextIO

import structlog
from structlog.tracebacks import ExceptionDictTransformer

_opened: list[TextIO] = []  # a log file configure() opened (closed when it is configured again)
_json_stderr: list[bool] = [False]  # whether the last configure() sent JSON lines to stderr
_handlers: list[logging.Handler] = []  # the root handler configure() added (others, e.g. pytest's, stay)


class _NamedLogger(structlog.PrintLogger):
    """A PrintLogger that knows the name it was asked for (``structlog.get_logger("arena.x")``)."""

    def __init__(self, file: TextIO, name: str) -> None:
        super().__init__(file)
        self.name = name


def _add_logger_name(logger: Any, method: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
    name = getattr(logger, "name", "")
    if name and "logger" not in event:
        event["logger"] = name
    return event


def _add_service(service: str) -> structlog.types.Processor:
    def add(logger: Any, method: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
        event.setdefault("service", service)
        return event

    return add


def _one_line_error(logger: Any, method: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
    """``error=str(e)`` of a gRPC error is several lines (``<AioRpcError of RPC that terminated with:...``):
    one line, whatever the renderer."""
    error = event.get("error")
    if isinstance(error, str) and "\n" in error:
        event["error"] = " ".join(error.split())
    return event


def json_on_stderr() -> bool:
    """Whether stderr carries JSON log lines (a service's): a last error then goes there as JSON too."""
    return _json_stderr[0]


def wants_json(stream: TextIO | None = None) -> bool:
    """The rule for commands that may be a service or a person's terminal (``arena bot run``): JSON
    unless the stream is a terminal."""
    stream = stream or sys.stderr
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return True


def configure(*, json: bool | None = True, level: str = "INFO", service: str = "", file: Path | None = None) -> None:
    """Send structlog's and the standard library's logging to stderr (or appended to ``file``), as JSON
    lines or (``json=False``) a readable console; ``json=None``: JSON unless stderr is a terminal.
    ``service`` names the process in every JSON line."""
    for f in _opened:
        f.close()
    _opened.clear()
    stream: TextIO = sys.stderr
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        stream = file.open("a", buffering=1, encoding="utf-8")
        _opened.append(stream)
    as_json = wants_json() if json is None else json
    _json_stderr[0] = as_json and file is None
    common: list[structlog.types.Processor] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if service:
        common.append(_add_service(service))
    if as_json:
        exceptions: structlog.types.Processor = structlog.processors.ExceptionRenderer(
            ExceptionDictTransformer(show_locals=False, use_rich=False, max_frames=20)
        )
        renderer: structlog.types.Processor = structlog.processors.JSONRenderer()
    else:
        exceptions = structlog.processors.format_exc_info
        renderer = structlog.dev.ConsoleRenderer(colors=file is None and stream.isatty())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            *common,
            _add_logger_name,
            _one_line_error,
            exceptions,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=lambda *args: _NamedLogger(stream, str(args[0]) if args else ""),
        # Not cached: a module's logger follows the configuration in force when it logs. A cached one kept the
        # first configuration it met (its level filter, a log file since closed) for the life of the process;
        # no hot path logs (a match logs at its start, end and incidents), so the lookup costs nothing that counts.
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*common, structlog.stdlib.add_logger_name],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, exceptions, renderer],
        )
    )
    root = logging.getLogger()
    for old in _handlers:
        root.removeHandler(old)
    _handlers[:] = [handler]
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.captureWarnings(True)
