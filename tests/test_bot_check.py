"""``arena bot check``: the reference bots pass every check; bots broken on purpose each fail exactly the
check for their fault, with a reason that names it; exit status and ``--json``.

Short time controls and few games keep it fast; each run spawns the bot as ``arena bot check`` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from arena.cli.main import main
from arena.local.check import CHECK_NAMES

ROOT = Path(__file__).resolve().parent.parent
MOVE_MS = 1000  # roomy: a loaded CI machine must not make a sound bot miss it
FAST = ["--games", "2", "--move-ms", str(MOVE_MS), "--first-move-ms", "1500", "--disconnect-grace-ms", "2000",
        "--exit-s", "2"]  # fmt: skip

BROKEN = '''
import random
import threading
import time

from sdk import Bot


class Base(Bot):
    version = "1"
    game_ids = ("shanghaien",)

    def __init__(self):
        self.rng = random.Random(1)
        self.moves = {}

    def count(self, turn):
        key = (turn.match_id, turn.seat)
        self.moves[key] = self.moves.get(key, 0) + 1
        return self.moves[key]


class Illegal(Base):
    """Its second move of each match is first an action that is never legal; refused, it answers well."""
    name = "illegal"

    def act(self, turn):
        if not turn.refusals and self.count(turn) == 2:
            return "place 9 fwd"
        return self.rng.choice(turn.legal_actions)


class Slow(Base):
    """Its third move of each match sleeps past the move limit (the bank pays, so no strike)."""
    name = "slow"

    def act(self, turn):
        if self.count(turn) == 3:
            time.sleep(turn.move_ms / 1000 + 0.4)
        return self.rng.choice(turn.legal_actions)


class CrashOnReconnect(Base):
    """Dies when a match it already plays starts again (as after a reconnection)."""
    name = "crash-on-reconnect"

    def __init__(self):
        super().__init__()
        self.seen = set()

    def on_match_start(self, match):
        key = (match.match_id, match.seat)
        if key in self.seen:
            raise RuntimeError("cannot resume a match")
        self.seen.add(key)

    def act(self, turn):
        return self.rng.choice(turn.legal_actions)


class HangOnExit(Base):
    """A thread of its own that never ends keeps the process alive after its matches."""
    name = "hang-on-exit"

    def __init__(self):
        super().__init__()
        threading.Thread(target=time.sleep, args=(3600,)).start()

    def act(self, turn):
        return self.rng.choice(turn.legal_actions)
'''

NEVER_RECONNECTS = """
import asyncio
import random
import sys
import time

from sdk import Bot
from sdk.client import BotClient


class Once(Bot):
    name = "once"
    version = "1"

    def act(self, turn):
        return random.choice(turn.legal_actions)


address, token, matches = sys.argv[1], sys.argv[2], int(sys.argv[3])
outcomes = asyncio.run(BotClient(Once(), address, token, max_matches=matches, reconnect=False).run())
if len(outcomes) < matches:  # cut off: stay up, but never come back
    time.sleep(3600)
"""


def check(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    code = main(["bot", "check", *argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert isinstance(doc, list)
    return code, doc


def verdicts(doc: list[dict[str, Any]]) -> dict[str, bool | None]:
    return {f"{c['name']}/{c['game_id']}": c["passed"] for c in doc}


def failed(doc: list[dict[str, Any]]) -> dict[str, str]:
    return {c["name"]: c["reason"] for c in doc if c["passed"] is False}


@pytest.fixture
def broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "broken.py").write_text(BROKEN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_random_passes_every_check_in_every_game(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = check(["random", *FAST, "--out", str(tmp_path)], capsys)
    assert code == 0, doc
    assert {(c["name"], c["game_id"]) for c in doc} == {
        (name, gid) for name in CHECK_NAMES[:-1] for gid in ("shanghaien", "shangrila-3p", "shangrila-4p")
    } | {("shutdown", None)}
    for c in doc:
        assert set(c) == {"name", "game_id", "passed", "reason", "figures"}
        assert c["passed"] is True and c["reason"]
    by = {(c["name"], c["game_id"]): c["figures"] for c in doc}
    time_ = by["move-time", "shanghaien"]
    assert time_["moves"] > 20 and 0 < time_["slowest_move_ms"] <= MOVE_MS and time_["move_ms_limit"] == MOVE_MS
    assert by["reconnect", "shangrila-4p"]["reconnect_ms"] < 2000
    assert by["long-match", "shanghaien"]["chance_plies"] > 80
    assert by["long-match", "shangrila-4p"]["plies"] > 150  # stalling opponents: a random table ends near 130
    assert any(tmp_path.glob("*-reconnect.jsonl"))


@pytest.mark.parametrize("bot", ["greedy", "strong"])
def test_the_stronger_reference_bots_pass(bot: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    games = ["--game", "shanghaien"] + (["--game", "shangrila-4p"] if bot == "greedy" else [])
    code, doc = check([bot, *FAST, *games, "--out", str(tmp_path)], capsys)
    assert code == 0, failed(doc)
    assert all(c["passed"] for c in doc)


def test_an_illegal_action_fails_legal_actions_only(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = check(["broken.py:Illegal", *FAST], capsys)
    assert code == 1
    assert list(failed(doc)) == ["legal-actions"], failed(doc)
    reason = failed(doc)["legal-actions"]
    assert "refused" in reason and "'place 9 fwd'" in reason
    legal = next(c for c in doc if c["name"] == "legal-actions")
    assert legal["figures"]["refusals"] == 2  # one per ordinary match
    assert [c["game_id"] for c in doc if c["game_id"]] == ["shanghaien"] * 5  # the games it declares


def test_sleeping_past_the_move_limit_fails_move_time_only(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = check(["broken.py:Slow", *FAST], capsys)
    assert code == 1
    assert list(failed(doc)) == ["move-time"], failed(doc)
    assert "over the limit" in failed(doc)["move-time"] and f"of {MOVE_MS} ms" in failed(doc)["move-time"]
    figures = next(c for c in doc if c["name"] == "move-time")["figures"]
    assert figures["over_limit"] == 2 and figures["slowest_move_ms"] > MOVE_MS


def test_crashing_on_reconnect_fails_reconnect_only(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = check(["broken.py:CrashOnReconnect", *FAST], capsys)
    assert code == 1
    assert list(failed(doc)) == ["reconnect"], failed(doc)
    reason = failed(doc)["reconnect"]
    assert "exited (status 1)" in reason and "cannot resume a match" in reason and "cut" in reason


def test_never_reconnecting_fails_reconnect_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "once.py"
    script.write_text(NEVER_RECONNECTS, encoding="utf-8")
    command = f"{sys.executable} {script} {{address}} {{token}} {{matches}}"
    code, doc = check(["--cmd", command, "--game", "shanghaien", *FAST, "--out", str(tmp_path / "t")], capsys)
    assert code == 1
    assert list(failed(doc)) == ["reconnect"], failed(doc)
    assert "did not reconnect within the 2000 ms grace period" in failed(doc)["reconnect"]
    assert "forfeit" in failed(doc)["reconnect"]


def test_hanging_on_exit_fails_shutdown_only(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = check(["broken.py:HangOnExit", *FAST], capsys)
    assert code == 1
    assert list(failed(doc)) == ["shutdown"], failed(doc)
    reason = failed(doc)["shutdown"]
    assert "did not exit within 2 s of its last match" in reason and "SIGTERM" in reason
    shutdown = next(c for c in doc if c["name"] == "shutdown")
    assert shutdown["game_id"] is None and shutdown["figures"]["sigterm"] is True


def test_the_check_itself_exits_when_the_bot_would_not(broken: Path) -> None:
    """The bot's constructor starts a thread that never ends: only the bot's own processes run its code,
    so ``arena bot check`` reports and exits (it once loaded the bot in-process and then hung for an hour)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "arena.cli", "bot", "check", "broken.py:HangOnExit", *FAST, "--game", "shanghaien",
            "--json"]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stderr
    assert list(failed(json.loads(done.stdout))) == ["shutdown"]


def test_a_bot_started_by_hand(tmp_path: Path) -> None:
    """--server: the check prints where to connect and waits; the bot run by hand passes, its shutdown
    is skipped (it cannot be seen)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    argv = [sys.executable, "-m", "arena.cli", "bot", "check", "--server", "127.0.0.1:0", "--token", "tok-by-hand",
            "--game", "shanghaien", *FAST, "--out", str(tmp_path), "--json"]  # fmt: skip
    checker = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    bot = None
    try:
        assert checker.stderr is not None
        line = ""
        deadline = time.monotonic() + 60
        while "connect to the referee at" not in line and time.monotonic() < deadline:
            line = checker.stderr.readline()
        assert "with token tok-by-hand" in line
        address = line.split("connect to the referee at ")[1].split()[0]
        bot = subprocess.Popen([sys.executable, "-m", "arena.cli", "bot", "run", "random", "--server", address,
                                "--token", "tok-by-hand", "--log-level", "ERROR"], env=env)  # fmt: skip
        out, _ = checker.communicate(timeout=120)
    finally:
        for p in (checker, bot):
            if p is not None and p.poll() is None:
                p.kill()
    doc = json.loads(out)
    assert checker.returncode == 0, doc
    assert {c["name"]: c["passed"] for c in doc} == {**dict.fromkeys(CHECK_NAMES[:-1], True), "shutdown": None}


def test_usage_errors(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bot", "check"]) == 2
    assert main(["bot", "check", "random", "--cmd", "x"]) == 2
    assert main(["bot", "check", "broken.py:Illegal", "--game", "shangrila-3p"]) == 2  # it plays only shanghaien
    assert main(["bot", "check", "nosuch.py:Bot"]) == 2
    assert "no file nosuch.py" in capsys.readouterr().err
