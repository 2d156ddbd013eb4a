"""Every long-running process logs JSON lines: a gateway, a worker, two ``arena bot run`` processes (one
whose ``act`` raises), a ``referee serve``, each a real process whose stderr is a file. Every line parses,
carries level, timestamp and service, and an error is one line naming the exception's type. The standard
library's loggers (asyncio, grpc) come out the same way, not as multi-line tracebacks.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from arena.errors import ArenaError
from arena.local.arena import arena_command
from arena.local.redisproc import free_port
from arena.service.client import ArenaClient

CRASHER = '''
import random

from sdk.bot import Bot, Turn


class Crasher(Bot):
    """Raises on its first turn of each match (a bug), then plays at random."""

    name = "crasher"
    version = "1.0"

    def __init__(self) -> None:
        self.rng = random.Random(7)
        self.crashed: set[str] = set()

    def act(self, turn: Turn) -> str:
        if turn.match_id not in self.crashed:
            self.crashed.add(turn.match_id)
            raise ValueError("deliberate bug in act")
        return self.rng.choice(turn.legal_actions)
'''
QUICK = {"first_move_ms": 400, "move_ms": 400, "bank_ms": 0, "grace_ms": 100, "join_timeout_ms": 20_000}


class Proc:
    def __init__(self, name: str, argv: list[str], folder: Path, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.stderr = folder / f"{name}.stderr"
        with self.stderr.open("wb") as err, (folder / f"{name}.stdout").open("wb") as out:
            self.process = subprocess.Popen(arena_command(*argv), stdout=out, stderr=err,
                                            env={**os.environ, **(env or {})})  # fmt: skip

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def lines(self) -> list[str]:
        return self.stderr.read_text().splitlines()


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (OSError, ArenaError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def parsed(lines: list[str], service: str) -> list[dict[str, Any]]:
    """Every line as JSON, each with a level, a UTC ISO timestamp and the service (AssertionError if not)."""
    events = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            raise AssertionError(f"{service}: not a JSON line: {line!r}") from None
        assert isinstance(event, dict), line
        assert event["level"] in ("debug", "info", "warning", "error", "critical"), line
        assert datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).utcoffset() is not None, line
        assert event["service"] == service, line
        assert event["event"], line
        events.append(event)
    return events


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for p in started:
        p.stop()


def test_every_service_logs_json_lines_and_errors_as_one_line(
    redis_url: str, tmp_path: Path, procs: list[Proc]
) -> None:
    token = "arena_admin_" + secrets.token_urlsafe(32)
    gateway = f"127.0.0.1:{free_port()}"
    referee_port = free_port()
    procs.append(Proc("gateway", ["gateway", "--redis", redis_url, "--listen", gateway, "--admin-token", token],
                      tmp_path))  # fmt: skip
    procs.append(Proc("worker", ["worker", "--redis", redis_url, "--listen", "127.0.0.1:0"], tmp_path))
    allowed = "arena_" + secrets.token_urlsafe(24)
    procs.append(Proc("referee", ["referee", "serve", "--port", str(referee_port), "--allow-token", allowed],
                      tmp_path))  # fmt: skip
    (tmp_path / "crasher.py").write_text(CRASHER)

    with ArenaClient(gateway, token) as admin:
        wait_until(lambda: admin.list_bots() == [], 30, "the gateway")
        wait_until(lambda: any("worker started" in x for x in procs[1].lines()), 30, "the worker")
        tokens = {name: admin.register_bot(name, "tests", ["shanghaien"], 2)[1] for name in ("crasher", "steady")}
        for name, bot in (("crasher", f"{tmp_path / 'crasher.py'}:Crasher"), ("steady", "random")):
            procs.append(Proc(f"bot-{name}", ["bot", "run", bot, "--arena", gateway, "--matches", "1"], tmp_path,
                              env={"ARENA_BOT_TOKEN": tokens[name]}))  # fmt: skip
        wait_until(lambda: all(b.online for b in admin.list_bots()), 30, "both bots online")
        match_id, _ = admin.request_match("shanghaien", ["crasher", "steady"], time_control=QUICK)
        wait_until(lambda: admin.describe(match_id).state == 3, 120, "the match to finish")

        # bad tokens: a client call, a bot on the arena, a bot on the standalone referee
        with ArenaClient(gateway, "arena_" + secrets.token_urlsafe(24)) as stranger, pytest.raises(ArenaError):
            stranger.list_bots()
    bad = "arena_" + secrets.token_urlsafe(24)
    refused = [
        Proc("bot-refused", ["bot", "run", "random", "--arena", gateway], tmp_path, env={"ARENA_BOT_TOKEN": bad}),
        Proc("bot-refused-referee", ["bot", "run", "random", "--server", f"127.0.0.1:{referee_port}"], tmp_path,
             env={"ARENA_BOT_TOKEN": bad}),
    ]  # fmt: skip
    for p in refused:
        assert p.process.wait(timeout=60) == 1
    for p in procs:
        p.stop()
        assert p.process.returncode in (0, -15), (p.name, p.process.returncode, p.lines()[-5:])

    logs = {p.name: p.lines() for p in procs}
    services = {"gateway": "gateway", "worker": "worker", "referee": "referee", "bot-crasher": "bot",
                "bot-steady": "bot"}  # fmt: skip
    events = {name: parsed(lines, services[name]) for name, lines in logs.items()}
    # the referee announces its port as a log event
    assert any(e["event"] == "listening" and e["port"] == referee_port for e in events["referee"])
    # what is known is bound: the match on the worker's lines, the bot on the gateway's session lines
    assert any(e.get("match_id") == match_id and e["event"] == "result recorded" for e in events["worker"])
    assert {e.get("bot") for e in events["gateway"] if e["event"] == "bot session opened"} == {"crasher", "steady"}
    # the bot's bug: one error line with the exception's type and message, no traceback text anywhere
    (crash,) = [e for e in events["bot-crasher"] if e["event"] == "bot.act raised"]
    assert crash["level"] == "error" and crash["match_id"] == match_id
    (exc,) = crash["exception"]
    assert exc["exc_type"] == "ValueError" and exc["exc_value"] == "deliberate bug in act"
    assert all("locals" not in frame for frame in exc["frames"])  # frames' variables may hold tokens
    # a refused bot: JSON lines to the end, the last one the command's exit report (one line, no "arena: error:")
    for p in refused:
        lines = p.lines()
        events_of = parsed(lines, "bot")
        assert events_of[-1]["event"] == "exiting" and events_of[-1]["level"] == "error", lines
        assert "refused the bot" in events_of[-1]["error"] and events_of[-1]["exit_code"] == 1
        for e in events_of:
            assert "\n" not in e.get("error", ""), e  # a gRPC error's text, on one line


PROBE = """
import asyncio, gc, logging, warnings
from referee.logs import configure

configure(json=True, service="probe")

async def main():
    async def fails():
        raise RuntimeError("nobody awaited me")
    task = asyncio.get_running_loop().create_task(fails())
    await asyncio.sleep(0.05)
    del task
    gc.collect()

asyncio.run(main())
try:
    {}["missing"]
except KeyError:
    logging.getLogger("grpc._cython.cygrpc").exception("Unexpected error in a handler")
warnings.warn("an old call", DeprecationWarning, stacklevel=1)
logging.getLogger("grpc").debug("below the level: not written")
"""


def test_the_standard_librarys_loggers_come_out_as_json_lines_too() -> None:
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-W", "always", "-c", textwrap.dedent(PROBE)], capture_output=True,
                          text=True, timeout=60, check=False, env={**os.environ, "PYTHONPATH": root})  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = parsed(done.stderr.splitlines(), "probe")
    by_logger = {e["logger"]: e for e in events}
    assert set(by_logger) == {"asyncio", "grpc._cython.cygrpc", "py.warnings"}, events
    task = by_logger["asyncio"]
    assert task["level"] == "error" and task["exception"][0]["exc_type"] == "RuntimeError"
    assert task["exception"][0]["exc_value"] == "nobody awaited me"
    handler = by_logger["grpc._cython.cygrpc"]
    assert handler["level"] == "error" and handler["exception"][0]["exc_type"] == "KeyError"
    assert by_logger["py.warnings"]["level"] == "warning" and "an old call" in by_logger["py.warnings"]["event"]
