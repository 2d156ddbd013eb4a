"""Bots in other languages, without the other language: ``arena play``/``arena tournament`` with
``--cmd``/``cmd:`` (a Python script standing in for any executable, told where to connect by its
environment or its command line's words) and ``--external``/``external:`` (a bot started by hand), and a
launched bot that dies: its seats forfeit, the run goes on, and the problems say where its stderr is."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from referee import transcript
from tests.helpers import arena, checkout_env

ROOT = Path(__file__).resolve().parents[1]

ENV_BOT = '''
"""A bot that knows nothing of arena.local: the environment says where to play, and how many matches."""
import asyncio
import os
import random
import signal
import sys

from sdk import Bot
from sdk.client import BotClient


class EnvBot(Bot):
    name = "envbot"
    version = "1"

    def act(self, turn):
        return random.choice(turn.legal_actions)


quit_after = int(sys.argv[1]) if len(sys.argv) > 1 else 0
matches = int(os.environ["ARENA_MATCHES"])
client = BotClient(EnvBot(), os.environ["ARENA_SERVER"], os.environ["ARENA_BOT_TOKEN"],
                   max_matches=quit_after or matches)


async def main():
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, client.stop)
    await client.run()


asyncio.run(main())
if quit_after:
    print(f"envbot: giving up after {quit_after} of {matches} matches", file=sys.stderr)
    sys.exit(3)
'''


def env() -> dict[str, str]:
    return checkout_env(COLUMNS="400")


@pytest.fixture
def env_bot(tmp_path: Path) -> str:
    """The command line of ``ENV_BOT`` (add a number: it exits 3 after that many matches)."""
    script = tmp_path / "envbot.py"
    script.write_text(ENV_BOT, encoding="utf-8")
    return f"{sys.executable} {script}"


def events(folder: Path) -> dict[str, list[Any]]:
    """Every transcript of ``folder``, parsed, by match id (the file name)."""
    return {
        path.stem: [transcript.parse_event(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for path in sorted(folder.glob("*.jsonl"))
    }


def seat_of(parsed: list[Any], label: str) -> int:
    header = parsed[0]
    assert isinstance(header, transcript.Header)
    return next(s.seat for s in header.seats if s.bot_name == label)


def assert_clean(parsed: list[Any], label: str) -> None:
    """The match completed, ``label`` moved in it, and nobody was refused, struck or forfeited."""
    footer = parsed[-1]
    assert isinstance(footer, transcript.Footer) and footer.end_reason == "completed", footer
    seat = seat_of(parsed, label)
    assert any(isinstance(e, transcript.Ply) and e.actor == seat and not e.fallback for e in parsed)
    trouble = [e for e in parsed if isinstance(e, transcript.Refusal | transcript.Strike | transcript.Forfeit)]
    assert trouble == []


def test_play_a_command_told_where_by_its_environment(env_bot: str, tmp_path: Path) -> None:
    out = tmp_path / "t"
    done = arena("play", "--cmd", env_bot, "--vs", "random", "--games", "4", "--seed", "cmd", "--out", str(out),
                 "--json", env=env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["players"] == ["envbot.py", "random#1"] and doc["games"] == 4 and doc["problems"] == []
    assert doc["wins"] + doc["draws"] + doc["losses"] == 4 and doc["aborted"] == 0
    parsed = events(out)
    assert sorted(parsed) == [f"cmd-{k:04d}" for k in range(4)]
    assert [seat_of(p, "envbot.py") for p in parsed.values()] == [0, 1, 0, 1]  # the seats rotate
    for p in parsed.values():
        assert_clean(p, "envbot.py")
    assert (out / "logs" / "envbot.py-1.err").exists()


def test_tournament_with_commands_and_the_command_line_words(env_bot: str, tmp_path: Path) -> None:
    """Two entrants are commands: one reads its environment, one is ``arena bot run`` told where by the
    words ``{address}``, ``{token}`` and ``{matches}``."""
    words = f"{sys.executable} -m arena.cli bot run random --server {{address}} --token {{token}} " \
            "--matches {matches} --log-level ERROR"  # fmt: skip
    out = tmp_path / "t"
    done = arena("tournament", f"cmd:{env_bot}", f"cmd:{words}", "greedy", "--games", "2", "--seed", "tt",
                 "--out", str(out), "--json", env=env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["players"] == ["envbot.py", "arena.cli", "greedy"] and doc["problems"] == []
    assert doc["bots"][:2] == [f"cmd:{env_bot}", f"cmd:{words}"]
    assert doc["games"] == 6 and {r["player"]: r["games"] for r in doc["standings"]} == dict.fromkeys(doc["players"], 4)
    for p in events(out).values():
        footer = p[-1]
        assert isinstance(footer, transcript.Footer) and footer.end_reason == "completed" and not footer.forfeited


def test_play_a_bot_started_by_hand(tmp_path: Path) -> None:
    """--external: the address and token are printed on stderr and the matches wait for the bot."""
    out = tmp_path / "t"
    argv = [sys.executable, "-m", "arena.cli", "play", "--external", "mine", "--vs", "random", "--game",
            "shangrila-3p", "--games", "3", "--seed", "ext", "--out", str(out), "--json"]  # fmt: skip
    player = subprocess.Popen(argv, env=env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    bot = None
    try:
        assert player.stderr is not None
        line = ""
        deadline = time.monotonic() + 60
        while "connect to the referee at" not in line and time.monotonic() < deadline:
            line = player.stderr.readline()
        assert line.startswith("start your bot mine now") and "it will play 3 matches" in line, line
        address = line.split("connect to the referee at ")[1].split()[0]
        token = line.split("with token ")[1].split()[0]
        assert f"ARENA_SERVER={address} ARENA_BOT_TOKEN={token} ARENA_MATCHES=3" in line
        time.sleep(1)  # the matches wait for the bot: none has started (nor been aborted) meanwhile
        assert not list(out.glob("*.jsonl"))
        bot = subprocess.Popen([sys.executable, "-m", "arena.cli", "bot", "run", "random", "--server", address,
                                "--token", token, "--matches", "3", "--log-level", "ERROR"], env=env(),
                               stdout=subprocess.DEVNULL)  # fmt: skip
        stdout, stderr = player.communicate(timeout=120)
        assert bot.wait(timeout=30) == 0  # it played its 3 matches and exited
    finally:
        for p in (player, bot):
            if p is not None and p.poll() is None:
                p.kill()
    assert player.returncode == 0, stderr
    doc = json.loads(stdout)
    assert doc["players"] == ["mine", "random#1", "random#2"] and doc["games"] == 3 and doc["problems"] == []
    parsed = events(out)
    assert sorted(seat_of(match, "mine") for match in parsed.values()) == [0, 1, 2]
    for match in parsed.values():
        assert_clean(match, "mine")


@pytest.mark.parametrize(("game", "games", "quits_after"), [("shanghaien", 6, 2), ("shangrila-3p", 3, 1)])
def test_a_launched_bot_that_dies_forfeits_its_seats_and_the_run_goes_on(
    env_bot: str, tmp_path: Path, game: str, games: int, quits_after: int
) -> None:
    out = tmp_path / "t"
    done = arena("play", "--cmd", f"{env_bot} {quits_after}", "--vs", "random", "--game", game, "--games",
                 str(games), "--concurrency", "1", "--seed", "dies", "--out", str(out), "--json",
                 env=env())  # fmt: skip
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["games"] == games and doc["aborted"] == 0  # every match was played
    err = out / "logs" / "envbot.py-1.err"
    lost = games - quits_after
    assert doc["problems"] == [
        f"envbot.py: its process exited with status 3 after {quits_after} of its {games} matches (its stderr: "
        f"{err}; last line: envbot: giving up after {quits_after} of {games} matches); it forfeited {lost} match(es)"
    ]
    assert doc["problems"][0] in done.stderr  # said on stderr too
    parsed = events(out)
    forfeited = []
    for match_id, p in parsed.items():
        footer = p[-1]
        assert isinstance(footer, transcript.Footer)
        seat = seat_of(p, "envbot.py")
        if seat in footer.forfeited:
            forfeited.append(match_id)
            assert [(e.seat, e.reason) for e in p if isinstance(e, transcript.Forfeit)] == [(seat, "disconnected")]
            assert footer.end_reason == ("forfeit" if game == "shanghaien" else "completed")
        else:
            assert footer.end_reason == "completed" and not footer.forfeited
        assert transcript.verify(out / f"{match_id}.jsonl") is None
    assert forfeited == sorted(parsed)[quits_after:]  # the matches after it quit, and those alone


def test_play_refuses_a_command_that_cannot_run(tmp_path: Path) -> None:
    done = arena("play", "--cmd", "no-such-bot-program --fast", "--games", "1", "--json", timeout=60, env=env())
    assert done.returncode == 2 and done.stdout == ""
    assert "command 'no-such-bot-program --fast': 'no-such-bot-program' is not found on PATH" in done.stderr
    done = arena("play", "random", "--external", "me", "--json", timeout=60, env=env())
    assert done.returncode == 2 and "give one of" in done.stderr
    done = arena("tournament", "random", "cmd:", "--json", timeout=60, env=env())
    assert done.returncode == 2 and "the bot's command is empty" in done.stderr


def test_a_bot_started_by_hand_that_never_comes_forfeits(tmp_path: Path) -> None:
    done = arena("play", "--external", "ghost", "--vs", "random", "--games", "2", "--wait-s", "1", "--out",
                 str(tmp_path / "t"), "--json", env=env())  # fmt: skip
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["games"] == 2 and doc["losses"] == 2 and doc["aborted"] == 0
    assert doc["problems"] == ["ghost: did not connect within 1 s; it forfeited 2 match(es)"]
    assert "start your bot ghost now" in done.stderr
