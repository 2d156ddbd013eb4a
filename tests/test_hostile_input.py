"""Hostile bots and malformed input, each tried for real (issue 12):

- bot-reported text (name, version) is checked once, at the edge: the gateway's OpenSession and the
  referee's Hello refuse what the rules (``referee.wire.values.bot_text_error``) do not allow, with
  INVALID_ARGUMENT; what they allow, such as ``[/oops]``, is printed by the CLI as text, never as markup;
- every ``arena`` command given a malformed input ends with one clear line on stderr and a non-zero exit
  status, never a traceback; a closed pipe ends quietly;
- a second server on a busy port fails at start-up with a clear error instead of sharing the port;
- ``arena play`` loads every bot before it starts anything, and says so (exit 1) when a bot's ``act``
  raised or its process died; ``arena match request --wait`` exits 1 for an aborted match;
- request bodies that are not valid messages are answered INVALID_ARGUMENT by every service, never UNKNOWN.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import message_factory  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from arena.cli.main import main
from arena.local.play import Player, play
from arena.redis_client import connect
from arena.service.gateway import start_gateway
from arena.service.registry import Registry
from referee.games import TimeControl
from referee.host import Referee
from referee.server import start_server
from referee.spec import MatchSpec, SeatSpec
from referee.wire import arena_pb2, arena_pb2_grpc, bot_pb2, bot_pb2_grpc, ladder_pb2, match_pb2, referee_pb2
from referee.wire.contract import ListenError
from referee.wire.values import BOT_TEXT_MAX_CHARS, bot_text_error, token_sha256
from sdk.bot import Bot, Turn
from sdk.client import BotClient, BotLoadError, load_bot
from tests.helpers import arena, service_exit_error

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "transcripts"
DEAD = "127.0.0.1:1"  # nothing listens there: connection refused at once
QUICK = TimeControl(first_move_ms=300, move_ms=200, bank_ms=0, grace_ms=50, disconnect_grace_ms=2000,
                    join_timeout_ms=10_000)  # fmt: skip


def one_clear_line(err: str) -> str:
    """stderr holds exactly one line, no traceback; returns it."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


# ---------------------------------------------------------------------- bot-supplied text


def test_the_rules_for_bot_reported_names_and_versions() -> None:
    for ok in ("", "1.0", "2024-05-01 nightly", "[/oops]", "v" * BOT_TEXT_MAX_CHARS, "Straße-β"):
        assert bot_text_error(bot_version=ok) is None, ok
    for bad, fragment in [
        ("v" * (BOT_TEXT_MAX_CHARS + 1), "at most 64"),
        ("x" * 200_000, "200,000 characters"),
        ("1.0\n2.0", "U+000A"),
        ("\x1b[31mred", "U+001B"),
        ("abc\u202edcba", "U+202E"),  # right-to-left override
        ("zero\u200bwidth", "U+200B"),
        (" 1.0", "space"),
        ("1.0 ", "space"),
    ]:
        problem = bot_text_error(bot_name="fine", bot_version=bad)
        assert problem is not None and problem.startswith("bot_version") and fragment in problem, (bad, problem)
    assert bot_text_error(bot_version=5) == "bot_version must be text, not int"  # type: ignore[arg-type]


class Labelled(Bot):
    name, version = "labelled", "1.0"

    def act(self, turn: Turn) -> Any:
        return turn.legal_actions[0]


def test_the_sdk_refuses_a_bot_with_an_unacceptable_version_before_connecting(tmp_path: Path) -> None:
    class TooLong(Labelled):
        version = "x" * 200

    with pytest.raises(BotLoadError, match="version is 200 characters long"):
        BotClient(TooLong(), DEAD, "token")
    path = tmp_path / "bots.py"
    path.write_text("from sdk import Bot\n\nclass Ctl(Bot):\n    name, version = 'ctl', '1\\x07'\n")
    with pytest.raises(BotLoadError, match="U\\+0007"):
        load_bot(f"{path}:Ctl")


async def _play_status(target: str, token: str, hello: bot_pb2.Hello) -> tuple[grpc.StatusCode, str, list[str]]:
    """Open Play, send ``hello``, read until the stream ends (or 3 s): status, details, message kinds."""
    kinds: list[str] = []
    requests: asyncio.Queue[bot_pb2.PlayRequest | None] = asyncio.Queue()
    await requests.put(bot_pb2.PlayRequest(hello=hello))

    async def feed() -> Any:
        while (item := await requests.get()) is not None:
            yield item

    async with grpc.aio.insecure_channel(target) as channel:
        call = bot_pb2_grpc.BotServiceStub(channel).Play(  # type: ignore[no-untyped-call]
            feed(), metadata=(("authorization", f"Bearer {token}"),)
        )

        async def read() -> None:
            async for message in call:
                kinds.append(message.WhichOneof("message"))

        try:
            await asyncio.wait_for(read(), 3)
        except grpc.aio.AioRpcError as e:
            return e.code(), e.details() or "", kinds
        except TimeoutError:
            return grpc.StatusCode.OK, "still open", kinds
        finally:
            await requests.put(None)
    return grpc.StatusCode.OK, "", kinds


def _spec(tokens: list[str], game_id: str = "shanghaien") -> MatchSpec:
    return MatchSpec(f"m-{secrets.token_hex(4)}", game_id,
                     tuple(SeatSpec(i, f"bot{i}", token_sha256(t)) for i, t in enumerate(tokens)),
                     seed="s", time_control=QUICK)  # fmt: skip


def test_the_referee_refuses_a_hello_with_unacceptable_text() -> None:
    async def run() -> None:
        referee = Referee()
        server, port = await start_server(referee)
        target = f"127.0.0.1:{port}"
        try:
            referee.start_match(_spec(["tok-a", "tok-b"]))
            for hello, fragment in [
                (bot_pb2.Hello(bot_name="a", bot_version="x" * 200_000), "bot_version is 200,000 characters"),
                (bot_pb2.Hello(bot_name="a", bot_version="1\x1b[2J"), "bot_version contains"),
                (bot_pb2.Hello(bot_name="n" * 65, bot_version="1"), "bot_name is 65 characters"),
                (bot_pb2.Hello(bot_name="a", bot_version="1", sdk_version="\u202e"), "sdk_version contains"),
            ]:
                code, details, kinds = await _play_status(target, "tok-a", hello)
                assert code == grpc.StatusCode.INVALID_ARGUMENT and fragment in details, (code, details)
                assert "welcome" not in kinds
            code, _, kinds = await _play_status(target, "tok-a", bot_pb2.Hello(bot_name="a", bot_version="[/oops]"))
            assert code == grpc.StatusCode.OK and kinds[:1] == ["welcome"]  # printable text is fine
        finally:
            await referee.shutdown()
            await server.stop(None)

    asyncio.run(run())


def test_the_gateway_refuses_bad_versions_and_the_cli_prints_bot_text_as_text(
    redis_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena.cli.common import console

    monkeypatch.setattr(console, "_width", 250)  # the whole table, unwrapped
    r = connect(redis_url)
    registry = Registry(r)
    _, token = registry.register("alpha", "[bold]owner[/]", ["shanghaien"])
    gateway: list[str] = []  # its address, once it serves

    async def session(version: str) -> tuple[grpc.StatusCode, str]:
        async with grpc.aio.insecure_channel(gateway[0]) as channel:
            stub = arena_pb2_grpc.ArenaServiceStub(channel)  # type: ignore[no-untyped-call]
            call = stub.OpenSession(arena_pb2.OpenSessionRequest(bot_version=version, sdk_version="0.1.0"),
                                    metadata=(("authorization", f"Bearer {token}"),))  # fmt: skip
            try:
                first = await asyncio.wait_for(call.read(), 5)
                assert first.WhichOneof("event") == "welcome"
                return grpc.StatusCode.OK, ""
            except grpc.aio.AioRpcError as e:
                return e.code(), e.details() or ""
            finally:
                call.cancel()

    async def run() -> None:
        server, port, servicer = await start_gateway(redis_url)
        gateway.append(f"127.0.0.1:{port}")
        try:
            for version, fragment in [("x" * 200_000, "200,000 characters"), ("1\x00", "U+0000"), ("", "")]:
                code, details = await session(version)
                if fragment:
                    assert code == grpc.StatusCode.INVALID_ARGUMENT and fragment in details, (code, details)
                    assert registry.get("alpha").version == ""  # nothing of the session was stored
                else:
                    assert code == grpc.StatusCode.OK
            assert await session("[/oops]") == (grpc.StatusCode.OK, "")
            assert registry.get("alpha").version == "[/oops]"
            capsys.readouterr()
            assert await asyncio.to_thread(main, ["bot", "list", "--gateway", gateway[0]]) == 0
            out = capsys.readouterr().out
            assert "[/oops]" in out and "[bold]owner[/]" in out
            # a version stored before these rules, with a terminal escape: shown escaped, not obeyed
            r.hset("arena:bot:alpha", "version", "\x1b[2J\u202egone")
            assert await asyncio.to_thread(main, ["bot", "list", "--gateway", gateway[0]]) == 0
            out = capsys.readouterr().out
            assert "\x1b" not in out and "\u202e" not in out and "\\x1b[2J\\u202egone" in out
        finally:
            await server.stop(None)
            await servicer.close()

    asyncio.run(run())
    r.close()


class MarkupRefusals(Bot):
    """Answers each turn first with markup and an escape sequence (refused), then legally."""

    name, version = "markup", "[/oops]"

    def act(self, turn: Turn) -> Any:
        return "[/oops] [bold]\x1b[2J" if not turn.refusals else turn.legal_actions[0]


def test_transcript_show_prints_refused_markup_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def run() -> list[str]:
        referee = Referee()
        server, port = await start_server(referee)
        try:
            match = referee.start_match(_spec(["tok-a", "tok-b"]))
            clients = [BotClient(MarkupRefusals(), f"127.0.0.1:{port}", t, max_matches=1) for t in ("tok-a", "tok-b")]
            tasks = [asyncio.create_task(c.run()) for c in clients]
            await asyncio.wait_for(referee.tasks[match.match_id], 60)
            await asyncio.wait(tasks, timeout=5)
            return list(match.lines)
        finally:
            await referee.shutdown()
            await server.stop(None)

    lines = asyncio.run(run())
    assert any('"refusal"' in line and "[/oops]" in line for line in lines)
    path = tmp_path / "markup.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["transcript", "verify", str(path)]) == 0
    capsys.readouterr()
    assert main(["transcript", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "bot0 [/oops]" in out and "action=[/oops] [bold]\\x1b[2J" in out and "\x1b" not in out


# ---------------------------------------------------------------------- malformed CLI inputs


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Malformed inputs of each kind, as files; no ambient settings; logging left as it is (a command run
    in this process must not point structlog at this test's captured stderr)."""
    monkeypatch.setattr("referee.logs.configure", lambda **_: None)
    for name in ("ARENA_CONFIG", "ARENA_BOT_TOKEN", "ARENA_ADMIN_TOKEN", "ARENA_METRICS_PORT", "ARENA_GATEWAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.config/arena/config.toml
    good = (DATA / "shanghaien-strikes-forfeit.jsonl").read_text().splitlines()
    header = json.loads(good[0])
    files = {
        "binary": b"\xff\xfe\x00garbage\n",
        "notjson": b"{not json\n",
        "wrongtype": json.dumps({**header, "seats": "everyone"}).encode() + b"\n",
        "empty": b"",
        "toml_bad": b"redis_url = [\n",
        "toml_unknown": b'colour = "blue"\n',
        "toml_type": b"metrics_port = 'nine'\n",
        "syntax": b"from sdk import Bot\nclass X(Bot:\n",
        "raises": b"raise RuntimeError('import-time failure')\n",
        "nobot": b"class X:\n    pass\n",
    }
    out = {}
    for name, content in files.items():
        path = tmp_path / (name + ".py" if name in ("syntax", "raises", "nobot") else name)
        path.write_bytes(content)
        out[name] = str(path)
    out["missing"] = str(tmp_path / "missing.jsonl")
    out["folder"] = str(tmp_path)
    return out


# argv (with {name} for an input file), exit status, a fragment of stderr; "usage" rows are argparse's
CASES: list[tuple[list[str], int, str]] = [
    (["transcript", "verify", "{missing}"], 2, "arena: error: {missing}: No such file or directory"),
    (["transcript", "verify", "{folder}"], 2, "Is a directory"),
    (["transcript", "verify", "{binary}"], 1, "line 1: not UTF-8"),
    (["transcript", "verify", "{wrongtype}"], 1, "line 1:"),
    (["transcript", "verify", "{empty}"], 1, "{empty}: "),
    (["transcript", "show", "{missing}"], 2, "arena: error: {missing}: No such file"),
    (["transcript", "show", "{notjson}"], 1, "line 1: not JSON"),
    (["transcript", "show", "{binary}"], 1, "not UTF-8"),
    (["transcript", "show", "{wrongtype}"], 1, "line 1:"),
    (["transcript", "get", "--gateway", DEAD], 2, "arena: error: no match"),
    (["play", "missing.py:Bot"], 2, "arena: error: cannot load bot 'missing.py:Bot': no file missing.py"),
    (["play", "{nobot}:X"], 2, "has no Bot subclass 'X'"),
    (["play", "{syntax}:X"], 2, "SyntaxError"),
    (["play", "{raises}:X"], 2, "RuntimeError: import-time failure"),
    (["play", "random", "--vs", "nobody"], 2, "unknown reference bot 'nobody'"),
    (["play", "random", "--game", "shangrila-3p", "--vs", "a", "--vs", "b", "--vs", "c"], 2, "has 3 seats"),
    (["play", "random", "--games", "-3"], 2, "usage: argument --games: must be at least 1, not -3"),
    (["play", "random", "--games", "many"], 2, "usage: argument --games: not a whole number"),
    (["play", "random", "--concurrency", "0"], 2, "usage: argument --concurrency: must be at least 1"),
    (["play", "random", "--move-ms", "-5"], 2, "usage: argument --move-ms: must be between 1 and 3,600,000"),
    (["match", "request", "a", "b", "--game", "shanghaien", "--move-ms", "-5"], 2, "usage: argument --move-ms"),
    (["match", "request", "a", "b", "--game", "shanghaien", "--bank-ms", "x"], 2, "usage: argument --bank-ms"),
    (["match", "list", "--limit", "0"], 2, "usage: argument --limit"),
    (["match", "list", "--since-hours", "nan"], 2, "usage: argument --since-hours"),
    (["match", "list", "--gateway", DEAD], 1, "arena: error: failed to connect"),
    (["match", "watch", "m1", "--gateway", DEAD], 1, "UNAVAILABLE"),
    (["bot", "list", "--gateway", DEAD], 1, "UNAVAILABLE"),
    (["bot", "list", "--config", "{missing}"], 2, "arena: error: config file {missing}: No such file"),
    (["bot", "list", "--config", "{toml_bad}"], 2, "arena: error: config file {toml_bad}: "),
    (["bot", "list", "--config", "{toml_unknown}"], 2, "unknown setting(s) colour"),
    (["bot", "list", "--config", "{toml_type}"], 2, "metrics_port must be a whole number, not 'nine'"),
    (["bot", "list", "--config", "{folder}"], 2, "config file {folder}: Is a directory"),
    (["bot", "run", "random"], 2, "arena: error: a bot token is needed"),
    (["bot", "run", "missing.py:Bot", "--token", "t"], 2, "cannot load bot"),
    (["bot", "run", "random", "--rollouts", "lots", "--token", "t"], 2, "usage: argument --rollouts"),
    (
        ["bot", "register", "x", "--owner", "o", "--game", "shanghaien", "--max-concurrent", "-1"],
        2,
        "usage: argument --max-concurrent",
    ),
    (["ladder", "show", "--game", "shanghaien", "--gateway", DEAD], 1, f"error: cannot reach the arena at {DEAD}: "),
    (["ladder", "h2h", "--game", "shanghaien", "--gateway", DEAD], 1, f"error: cannot reach the arena at {DEAD}: "),
    (["ladder", "history", "x", "--gateway", DEAD], 1, f"error: cannot reach the arena at {DEAD}: "),
    (["ladder", "show", "--game", "shanghaien", "--replays", "{missing}"], 2, "error: {missing}: no such folder"),
    (["ladder", "rebuild", "--game", "shanghaien", "--redis", f"redis://{DEAD}/0"], 1, "Redis is unavailable"),
    (["ladder", "show", "--game", "shanghaien", "--limit", "-1"], 2, "usage: argument --limit"),
    (["ladder", "run", "--queue-depth", "0"], 2, "usage: argument --queue-depth"),
    (["referee", "serve", "--port", "70000"], 2, "usage: argument --port: must be between 0 and 65,535"),
    (["worker", "--metrics-port", "-1"], 2, "usage: argument --metrics-port"),
    (["worker", "--capacity", "0"], 2, "usage: argument --capacity"),
    (["serve", "--workers", "0"], 2, "usage: argument --workers"),
    (["local", "--matches", "-1"], 2, "usage: argument --matches"),
    (["demo", "--players", "nobody"], 2, "arena: error: unknown player(s) nobody"),
    (["demo", "--game", "chess"], 2, "usage: argument --game: invalid choice"),
    (["nonsense"], 2, "usage: argument command: invalid choice"),
]


@pytest.mark.parametrize(("argv", "status", "fragment"), CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_every_command_reports_malformed_input_in_one_line(
    argv: list[str], status: int, fragment: str, inputs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.format(**inputs) for a in argv]
    fragment = fragment.format(**inputs)
    started = time.monotonic()
    try:
        code = main(argv)
    except SystemExit as e:  # argparse: its usage and message, status 2
        code = int(e.code or 0)
    err = capsys.readouterr().err
    assert code == status, err
    assert time.monotonic() - started < 15  # nothing waits for a timeout
    assert "Traceback" not in err, err
    if fragment.startswith("usage: "):
        assert err.startswith("usage: ") and fragment.removeprefix("usage: ") in err.splitlines()[-1], err
    else:
        assert fragment in one_clear_line(err), err


def test_a_config_file_from_the_environment_is_checked_too(
    inputs: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ARENA_CONFIG", inputs["missing"])
    assert main(["bot", "list"]) == 2
    assert f"config file {inputs['missing']}" in one_clear_line(capsys.readouterr().err)
    monkeypatch.setenv("ARENA_CONFIG", inputs["toml_bad"])
    assert main(["match", "list"]) == 2
    assert "arena: error: config file" in one_clear_line(capsys.readouterr().err)
    monkeypatch.delenv("ARENA_CONFIG")
    monkeypatch.setenv("ARENA_GATEWAY", DEAD)
    monkeypatch.setenv("ARENA_METRICS_PORT", "lots")
    assert main(["bot", "list"]) == 2
    assert "$ARENA_METRICS_PORT must be a whole number, not 'lots'" in one_clear_line(capsys.readouterr().err)


def test_debug_shows_the_traceback_and_unexpected_errors_name_their_type(
    inputs: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--debug", "transcript", "show", inputs["missing"]]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().endswith(f"arena: error: {inputs['missing']}: No such file or directory")

    def broken(*_: Any) -> Any:
        raise KeyError("surprise")

    monkeypatch.setattr("arena.cli.transcripts.transcripts.file_lines", broken)
    assert main(["transcript", "show", inputs["notjson"]]) == 1
    line = one_clear_line(capsys.readouterr().err)
    assert line == "arena: error: KeyError: 'surprise' (arena --debug shows the traceback)"


@pytest.mark.parametrize(
    "argv", [["demo", "-v", "--game", "shangrila-4p"], ["transcript", "show", str(DATA / "shangrila-4p.jsonl"), "-q"]]
)
def test_a_closed_pipe_ends_quietly(argv: list[str]) -> None:
    """``arena ... | head -1``: the reader goes away; no traceback, the status of a SIGPIPE."""
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and err == "", err


def test_match_request_wait_exits_1_for_an_aborted_match(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    aborted = arena_pb2.MatchRecord(match_id="m1", game_id="shanghaien", state=arena_pb2.MATCH_STATE_FINISHED,
                                    bot_names=["a", "b"])  # fmt: skip
    aborted.result.CopyFrom(match_pb2.MatchResult(match_id="m1", end_reason=match_pb2.END_REASON_ABORTED,
                                                  detail="seat 1 did not join"))  # fmt: skip
    completed = arena_pb2.MatchRecord()
    completed.CopyFrom(aborted)
    completed.result.end_reason = match_pb2.END_REASON_COMPLETED

    class Fake:
        record = aborted

        def __enter__(self) -> Fake:
            return self

        def __exit__(self, *_: object) -> None:
            pass

        def request_match(self, *_: Any, **__: Any) -> tuple[str, str]:
            return "m1", "hash"

        def describe(self, _: str) -> Any:
            return self.record

        def list_bots(self, _: str) -> list[Any]:  # both online: no warning beside the error line
            return [arena_pb2.BotRecord(name=n, online=True) for n in ("a", "b")]

    monkeypatch.setattr("arena.cli.matches.client", lambda *_: Fake())
    for json_flag in ([], ["--json"]):
        assert main(["match", "request", "a", "b", "--game", "shanghaien", "--wait", *json_flag]) == 1
        assert "arena: error: match m1 was aborted: seat 1 did not join" in one_clear_line(capsys.readouterr().err)
    Fake.record = completed
    assert main(["match", "request", "a", "b", "--game", "shanghaien", "--wait"]) == 0


# ---------------------------------------------------------------------- busy ports


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another process listens on (any address of this host)."""
    sock = socket.socket()
    sock.bind(("0.0.0.0", 0))
    sock.listen()
    yield sock.getsockname()[1]
    sock.close()


def test_a_second_server_on_a_busy_port_fails_to_start(redis_url: str) -> None:
    async def run() -> None:
        referee = Referee()
        server, port = await start_server(referee, "127.0.0.1:0")
        try:
            with pytest.raises(ListenError, match=f"cannot listen on 127.0.0.1:{port}: the port is in use"):
                await start_server(Referee(), f"127.0.0.1:{port}")
            with pytest.raises(ListenError, match="cannot listen on"):
                await start_gateway(redis_url, f"127.0.0.1:{port}")
            # a real second process: the CLI's referee and gateway say so and stop (they used to share the port)
            for argv in (["referee", "serve", "--port", str(port)],
                         ["gateway", "--listen", f"127.0.0.1:{port}", "--redis", redis_url,
                          "--admin-token", "arena_admin_" + secrets.token_urlsafe(32)]):  # fmt: skip
                done = await asyncio.to_thread(arena, *argv, timeout=30)
                assert done.returncode == 1, done.stderr
                assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in service_exit_error(done.stderr)
        finally:
            await server.stop(None)

    asyncio.run(run())


def test_a_busy_metrics_port_is_a_clear_error(busy_port: int) -> None:
    done = arena("worker", "--listen", "127.0.0.1:0", "--metrics-port", str(busy_port), "--redis", f"redis://{DEAD}/0",
                 timeout=30)  # fmt: skip
    assert done.returncode == 1
    # the metrics listener binds the service's host (here the loopback of --listen)
    # one line on stderr, the JSON exit event of a service
    assert f"cannot serve /metrics on 127.0.0.1:{busy_port}: Address already in use" in service_exit_error(
        one_clear_line(done.stderr)
    )


# ---------------------------------------------------------------------- arena play's exit status


class Raises(Bot):
    name, version = "raises", "1.0"

    def act(self, turn: Turn) -> Any:
        raise ZeroDivisionError("every time")


def test_play_says_when_a_bots_act_raised(tmp_path: Path) -> None:
    players = [Player("tests.test_hostile_input:Raises", "raises"), Player("random", "random#1")]
    report = asyncio.run(play("shanghaien", players, games_count=2, seed="r", concurrency=2, rotate=True,
                              out_dir=tmp_path, time_control=QUICK))  # fmt: skip
    assert len(report.results) == 2
    problems = report.problems()
    assert len(problems) == 1 and problems[0].startswith("raises: act raised "), problems
    assert "(first: ZeroDivisionError: every time)" in problems[0] and "forfeited 2 match(es)" in problems[0]
    fine = asyncio.run(play("shanghaien", [Player("random", "a"), Player("random", "b")], games_count=1, seed="f",
                            concurrency=1, rotate=False, out_dir=tmp_path / "fine"))  # fmt: skip
    assert fine.problems() == []


def test_play_fails_at_once_for_a_bot_that_cannot_load_and_exits_1_when_a_bot_process_dies(tmp_path: Path) -> None:
    started = time.monotonic()
    done = arena("play", "nofile.py:Bot", "--games", "2", timeout=30)
    assert done.returncode == 2 and time.monotonic() - started < 15
    assert one_clear_line(done.stderr) == "arena: error: cannot load bot 'nofile.py:Bot': no file nofile.py"
    bots = tmp_path / "dies.py"
    bots.write_text("import os\nfrom sdk import Bot\n\nclass Dies(Bot):\n    name, version = 'dies', '1'\n\n"
                    "    def act(self, turn):\n        os._exit(3)\n")  # fmt: skip
    started = time.monotonic()
    done = arena("play", f"{bots}:Dies", "--games", "3", "--out", str(tmp_path / "t"), "--json", timeout=60)
    assert done.returncode == 1 and time.monotonic() - started < 30, done.stderr  # not 3 join timeouts
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert "Dies: its bot process died: exit code 3" in summary["problems"]
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------------- garbage request bodies


def _payloads(rng: random.Random, request_type: Any, count: int) -> Iterator[bytes]:
    """Random bytes, and valid encodings of the request type with bytes flipped, cut or appended."""
    sample = request_type()
    for field in request_type.DESCRIPTOR.fields:  # a value in every string field, so mutations have a base
        if field.type == field.TYPE_STRING:
            try:
                setattr(sample, field.name, "abc")
            except AttributeError:  # a repeated field
                getattr(sample, field.name).append("abc")
    base = sample.SerializeToString() or b"\x0a\x03abc"
    for i in range(count):
        if i % 2 == 0:
            yield bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        else:
            data = bytearray(base)
            for _ in range(rng.randrange(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            yield bytes(data[: rng.randrange(1, len(data) + 1)]) + bytes(rng.randrange(256) for _ in range(i % 3))


def _parses(request_type: Any, payload: bytes) -> bool:
    try:
        request_type.FromString(payload)
    except (DecodeError, UnicodeDecodeError, ValueError):
        return False
    return True


async def _send_garbage(target: str, services: list[Any], token: str, seed: int, per_method: int) -> dict[str, Any]:
    """Every method of ``services`` gets ``per_method`` garbage bodies; returns counts by (method, code)."""
    rng = random.Random(seed)
    seen: dict[str, Any] = {}
    metadata = (("authorization", f"Bearer {token}"),)
    async with grpc.aio.insecure_channel(target) as channel:
        for service in services:
            for method in service.methods:
                name = f"/{service.full_name}/{method.name}"
                request_type = message_factory.GetMessageClass(method.input_type)
                for payload in _payloads(rng, request_type, per_method):
                    code = await _call_raw(channel, name, method, payload, metadata)
                    assert code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL), (name, payload)
                    if not _parses(request_type, payload):
                        assert code == grpc.StatusCode.INVALID_ARGUMENT, (name, payload, code)
                    seen[f"{name} {code.name}"] = seen.get(f"{name} {code.name}", 0) + 1
    return seen


async def _call_raw(channel: Any, name: str, method: Any, payload: bytes, metadata: Any) -> grpc.StatusCode:
    """One call with ``payload`` as its request body, raw bytes through the channel; its status (OK when a
    streamed answer starts)."""
    try:
        if not method.client_streaming and not method.server_streaming:
            await channel.unary_unary(name, request_serializer=None, response_deserializer=None)(
                payload, metadata=metadata, timeout=10
            )
            return grpc.StatusCode.OK
        if not method.client_streaming:
            call = channel.unary_stream(name, request_serializer=None, response_deserializer=None)(
                payload, metadata=metadata, timeout=10
            )
        else:
            call = channel.stream_stream(name, request_serializer=None, response_deserializer=None)(
                iter([payload]), metadata=metadata, timeout=10
            )
        try:
            message = await asyncio.wait_for(call.read(), 3)
        except TimeoutError:  # an open stream waiting for more: the payload was taken
            return grpc.StatusCode.OK
        finally:
            call.cancel()
        if message is grpc.aio.EOF:
            code: grpc.StatusCode = await call.code()
            return code
        return grpc.StatusCode.OK
    except grpc.aio.AioRpcError as e:
        status: grpc.StatusCode = e.code()
        return status


def test_garbage_request_bodies_are_invalid_argument_never_unknown_on_the_referee() -> None:
    async def run() -> None:
        referee = Referee(admin_token="admin")
        server, port = await start_server(referee)
        try:
            referee.start_match(_spec(["admin", "tok-b"]))  # "admin" is also a seated bot token: Play reads
            services = [bot_pb2.DESCRIPTOR.services_by_name["BotService"],
                        referee_pb2.DESCRIPTOR.services_by_name["RefereeService"]]  # fmt: skip
            seen = await _send_garbage(f"127.0.0.1:{port}", services, "admin", seed=12, per_method=40)
            assert seen.get("/arena.v1.RefereeService/StartMatch INVALID_ARGUMENT", 0) >= 20
            assert seen.get("/arena.v1.BotService/Play INVALID_ARGUMENT", 0) >= 20
        finally:
            await referee.shutdown()
            await server.stop(None)

    asyncio.run(run())


def test_garbage_request_bodies_are_invalid_argument_never_unknown_on_the_gateway(redis_url: str) -> None:
    from grpc_health.v1 import health_pb2

    from arena.ladder.service import host_ladder

    registry = Registry(connect(redis_url))
    registry.set_admin_token("admin")

    async def run() -> None:
        server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0", host_ladder)
        try:
            services = [arena_pb2.DESCRIPTOR.services_by_name["ArenaService"],
                        ladder_pb2.DESCRIPTOR.services_by_name["LadderService"],
                        health_pb2.DESCRIPTOR.services_by_name["Health"]]  # fmt: skip
            seen = await _send_garbage(f"127.0.0.1:{port}", services, "admin", seed=13, per_method=12)
            assert sum(n for k, n in seen.items() if k.endswith("INVALID_ARGUMENT")) >= 80
            # a valid message with a value Redis refuses (NaN) is the caller's mistake too, not UNKNOWN
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = arena_pb2_grpc.ArenaServiceStub(channel)  # type: ignore[no-untyped-call]
                with pytest.raises(grpc.aio.AioRpcError) as e:
                    await stub.ListMatches(arena_pb2.ListMatchesRequest(since=float("nan")))
                assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        finally:
            await server.stop(None)
            await servicer.close()

    asyncio.run(run())


def test_arena_serve_takes_a_relative_data_folder(tmp_path: Path) -> None:
    """The README's own ``arena serve --data arena-data``: redis-server changes into its folder before it
    opens its log file, so a relative path once failed with "Can't open the log file"."""
    env = {**os.environ, "ARENA_ADMIN_TOKEN": "arena_admin_" + secrets.token_urlsafe(32)}
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", "--data", "arena-data", "--listen",
                             "127.0.0.1:0"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed once Redis, the gateway and the workers are up
        assert first.startswith("arena serving: gateway 127.0.0.1:"), (first, proc.stderr.read() if proc.stderr else "")
        assert "admin token: the one given ($ARENA_ADMIN_TOKEN)" in first  # not a file it never wrote
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert proc.returncode == 0
