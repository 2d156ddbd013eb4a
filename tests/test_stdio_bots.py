"""Bots that speak the line protocol (sdk/stdio.py, docs/bots.md): the C and Go starters, compiled here
with gcc and go build, play complete matches of both games through ``arena play --stdio``, pass
``arena bot check --stdio`` and play as a registered bot of a local arena (``arena bot run --stdio``);
scripted commands show what a malformed line, a late line and a bad hello get."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from arena import keys
from arena.local.arena import LocalArena, arena_command
from arena.service.client import ArenaClient
from referee import transcript
from tests.helpers import (
    FAST,
    SlowRandom,
    arena,
    call,
    checkout_env,
    finished,
    register,
    require_tool,
    run_bots,
    wait_for,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
CHECKS = ["move-time", "legal-actions", "concurrency", "long-match", "reconnect", "shutdown"]


@pytest.fixture(scope="module")
def starters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The two starters compiled into a temporary folder: ``{"c": path, "go": path}``."""
    gcc = require_tool("gcc", "apt-get install gcc")
    go = require_tool("go", "apt-get install golang-go")
    where = tmp_path_factory.mktemp("starters")
    done = subprocess.run([gcc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(where / "cbot"),
                           str(EXAMPLES / "c-bot" / "bot.c")], capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    env = {**os.environ, "GOCACHE": str(where / "gocache"), "GOPATH": str(where / "gopath"), "GO111MODULE": "off"}
    done = subprocess.run([go, "build", "-o", str(where / "gobot"), str(EXAMPLES / "go-bot" / "main.go")],
                          capture_output=True, text=True, timeout=300, check=False, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    yield {"c": where / "cbot", "go": where / "gobot"}


def events(path: Path) -> list[object]:
    return [transcript.parse_event(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(("starter", "game", "count"),
                         [("c", "shanghaien", 4), ("c", "shangrila-3p", 3), ("go", "shanghaien", 2),
                          ("go", "shangrila-4p", 4)])  # fmt: skip
def test_starter_plays_complete_matches(
    starters: dict[str, Path], tmp_path: Path, starter: str, game: str, count: int
) -> None:
    out = tmp_path / "t"
    done = arena("play", "--stdio", str(starters[starter]), "--vs", "random", "--game", game, "--games", str(count),
                 "--seed", "stdio", "--out", str(out), "--json", timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    label = starters[starter].name
    assert doc["players"][0] == label and doc["games"] == count and doc["aborted"] == 0 and doc["problems"] == []
    files = sorted(out.glob("*.jsonl"))
    assert len(files) == count
    seats = []
    for path in files:
        parsed = events(path)
        header, footer = parsed[0], parsed[-1]
        assert isinstance(header, transcript.Header) and isinstance(footer, transcript.Footer)
        assert footer.end_reason == "completed" and not footer.forfeited
        seat = next(s.seat for s in header.seats if s.bot_name == label)
        seats.append(seat)
        mine = [e for e in parsed if isinstance(e, transcript.Ply) and e.actor == seat]
        assert mine and not [e for e in mine if e.fallback]  # every move its own
        assert all(e.note and e.note.startswith("random ") for e in mine), mine[:3]  # each reply's note, recorded
        assert not [e for e in parsed if isinstance(e, transcript.Refusal | transcript.Strike | transcript.Forfeit)]
        assert transcript.verify(path) is None
    players = len(doc["players"])
    assert sorted(seats) == sorted(k % players for k in range(count))  # every seat in turn
    assert f"{starter}-bot:" in done.stderr  # the command's stderr is the run's own


@pytest.mark.parametrize(("starter", "game_ids"), [("c", ["shanghaien", "shangrila-4p"]),
                                                   ("go", ["shangrila-3p", "shanghaien"])])  # fmt: skip
def test_starter_passes_bot_check(starters: dict[str, Path], tmp_path: Path, starter: str, game_ids: list[str]) -> None:
    games = [word for g in game_ids for word in ("--game", g)]
    done = arena("bot", "check", "--stdio", str(starters[starter]), *games, "--games", "2", "--move-ms", "1000",
                 "--first-move-ms", "1500", "--disconnect-grace-ms", "2000", "--exit-s", "2", "--out",
                 str(tmp_path / "t"), "--json", timeout=600)  # fmt: skip
    doc = json.loads(done.stdout)
    assert done.returncode == 0, doc
    for game in game_ids:
        assert {c["name"]: c["passed"] for c in doc if c["game_id"] in (game, None)} == dict.fromkeys(CHECKS, True)
    log = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "t" / "logs").glob("*.err"))
    assert f"{starter}-bot:" in log  # stderr reaches the author's log file


def test_c_starter_plays_as_a_registered_bot_of_a_local_arena(
    starters: dict[str, Path], redis_url: str, tmp_path: Path
) -> None:
    """``arena bot run --stdio`` keeps a session with the arena's gateway; the matches requested for it are
    refereed by the arena's workers and completed; after ``--matches`` it exits 0."""

    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST) as local:
            admin = ArenaClient(local.gateway, local.admin_token)
            tokens = await register(admin, "cbot", "ace")
            runners = run_bots({"ace": SlowRandom(0, 1)}, tokens, local.gateway)
            log = (tmp_path / "cbot.log").open("wb")
            process = subprocess.Popen(
                arena_command("bot", "run", "--stdio", str(starters["c"]), "--arena", local.gateway, "--no-ladder",
                              "--matches", "2", "--log-format", "json"),
                stdout=log, stderr=subprocess.STDOUT, env=checkout_env(ARENA_BOT_TOKEN=tokens["cbot"]),
            )  # fmt: skip
            try:

                async def online() -> bool:
                    return {b.name for b in await call(admin.list_bots) if b.online} >= {"cbot", "ace"}

                await wait_for(online, 60, "cbot online")
                ids = [(await call(admin.request_match, "shanghaien", order))[0] for order in
                       (["cbot", "ace"], ["ace", "cbot"])]  # fmt: skip
                await finished(admin, ids, 120)
                client = redis.Redis.from_url(redis_url)
                for match_id in ids:
                    result = json.loads(client.hget(keys.match(match_id), "result") or b"{}")
                    assert result["end_reason"] == "completed", result
                    assert not [s for s in result["seats"] if s["strikes"] or s["refusals"]], result
                client.close()
                code = await asyncio.to_thread(process.wait, 30)
                assert code == 0, (tmp_path / "cbot.log").read_text()
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
                log.close()
                for r in runners:
                    r.stop()
            admin.close()

    asyncio.run(main())


SCRIPTED = """
import json, sys, time
mode, record = sys.argv[1], open(sys.argv[2], "a")
print(json.dumps({"type": "hello", "protocol": 1, "matches": "one"}), flush=True)
late_done = False
for line in sys.stdin:
    record.write(line)
    record.flush()
    m = json.loads(line)
    if m["type"] != "turn":
        continue
    if mode == "garbage":
        print("this is not json", flush=True)
    elif mode == "mend" and not m["refusals"]:
        print("not json at all", flush=True)
    elif mode == "mend" and len(m["refusals"]) == 1:
        print(json.dumps({"match": m["match"], "seat": m["seat"], "ply": m["ply"], "action": 5}), flush=True)
    elif mode == "late" and not late_done:
        late_done = True
        time.sleep(1.5)  # past the 1 s limit and the 1 ms bank, before the next turn's deadline
        print(json.dumps({"match": m["match"], "seat": m["seat"], "ply": m["ply"], "action": m["legal"][0]}),
              flush=True)
    else:
        print(json.dumps({"match": m["match"], "seat": m["seat"], "ply": m["ply"], "action": m["legal"][0],
                          "note": "first legal"}), flush=True)
"""


def scripted(
    tmp_path: Path, mode: str, *flags: str
) -> tuple[subprocess.CompletedProcess[str], list[object], list[dict[str, Any]]]:
    """One Shanghaien match of the scripted command (seat 0) against random: the run, the transcript's
    events and every line the command was given."""
    script = tmp_path / "scripted.py"
    script.write_text(SCRIPTED, encoding="utf-8")
    record = tmp_path / "received.jsonl"
    out = tmp_path / "t"
    done = arena("play", "--stdio", f"{sys.executable} {script} {mode} {record}", "--vs", "random", "--games", "1",
                 "--no-rotate", "--seed", "scripted", "--out", str(out), "--json", *flags, timeout=300)  # fmt: skip
    [path] = out.glob("*.jsonl")
    received = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    return done, events(path), received


def test_malformed_lines_are_refused_as_bad_actions_and_the_turn_comes_again(tmp_path: Path) -> None:
    done, parsed, received = scripted(tmp_path, "mend")
    assert done.returncode == 0, done.stderr[-3000:]
    refusals = [e for e in parsed if isinstance(e, transcript.Refusal)]
    assert refusals and all(r.seat == 0 and r.code == "syntax" for r in refusals)
    assert not [e for e in parsed if isinstance(e, transcript.Strike | transcript.Forfeit)]
    footer = parsed[-1]
    assert isinstance(footer, transcript.Footer) and footer.end_reason == "completed"
    turns = [m for m in received if m["type"] == "turn"]
    assert len(refusals) == 2 * sum(1 for m in turns if not m["refusals"])  # two per turn, each recorded
    once = [m for m in turns if len(m["refusals"]) == 1]
    twice = [m for m in turns if len(m["refusals"]) == 2]
    assert once and len(once) == len(twice)
    first = once[0]["refusals"][0]
    assert first["action"] == "not json at all" and first["code"] == "syntax"
    assert first["reason"].startswith("malformed line: not JSON")
    second = twice[0]["refusals"][1]
    assert second["code"] == "syntax" and 'no "action" text' in second["reason"]
    assert twice[0]["ply"] == once[0]["ply"] == turns[turns.index(once[0]) - 1]["ply"]  # the same turn again
    assert received[0]["type"] == "start" and received[-1]["type"] == "end"


def test_a_command_that_only_writes_garbage_is_struck_and_forfeits_as_on_the_wire(tmp_path: Path) -> None:
    done, parsed, received = scripted(tmp_path, "garbage")
    strikes = [e for e in parsed if isinstance(e, transcript.Strike)]
    assert [s.reason for s in strikes] == ["refusals"] * 3 and all(s.seat == 0 for s in strikes)
    forfeits = [e for e in parsed if isinstance(e, transcript.Forfeit)]
    assert [(f.seat, f.reason) for f in forfeits] == [(0, "strikes")]
    assert len([e for e in parsed if isinstance(e, transcript.Refusal)]) == 15  # 5 a turn, then the strike
    assert received[-1]["type"] == "end" and received[-1]["forfeited"] == [True, False]
    assert done.returncode == 0, done.stderr[-3000:]  # the bot lost, but the run went as asked


def test_a_late_line_is_refused_stale_and_the_seat_times_out(tmp_path: Path) -> None:
    done, parsed, received = scripted(tmp_path, "late", "--first-move-ms", "1000", "--move-ms", "1000", "--bank-ms",
                                      "1", "--grace-ms", "50")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    first = next(m for m in received if m["type"] == "turn")
    strikes = [e for e in parsed if isinstance(e, transcript.Strike)]
    assert strikes and (strikes[0].seat, strikes[0].ply, strikes[0].reason) == (0, first["ply"], "timeout")
    stale = [m for m in received if m["type"] == "refused"]
    assert stale and stale[0]["code"] == "stale_turn" and stale[0]["ply"] == first["ply"], stale
    assert stale[0]["action"].startswith("{") and "no turn of that match, seat and ply" in stale[0]["reason"]
    footer = parsed[-1]
    assert isinstance(footer, transcript.Footer) and footer.end_reason == "completed" and not footer.forfeited


def test_a_command_without_a_hello_line_is_reported(tmp_path: Path) -> None:
    script = tmp_path / "nohello.py"
    script.write_text("print('ready')\nimport sys\nsys.stdin.read()\n", encoding="utf-8")
    done = arena("play", "--stdio", f"{sys.executable} {script}", "--vs", "random", "--games", "1", "--out",
                 str(tmp_path / "t"), "--json", timeout=300)  # fmt: skip
    assert done.returncode == 1
    doc = json.loads(done.stdout)
    assert any("its first line is not a JSON hello: 'ready'" in p for p in doc["problems"]), doc["problems"]


def test_a_command_that_is_not_there_is_refused_before_anything_starts(tmp_path: Path) -> None:
    for argv in (["play", "--stdio", str(tmp_path / "nothing")], ["bot", "check", "--stdio", "no-such-program-x"]):
        done = arena(*argv, "--out", str(tmp_path / "t"), timeout=120)
        assert done.returncode == 2, done.stderr
        assert "arena: error:" in done.stderr and ("is not an executable file" in done.stderr
                                                   or "is not found on PATH" in done.stderr)  # fmt: skip


def test_a_command_that_dies_mid_match_stops_the_run_with_its_exit_status(tmp_path: Path) -> None:
    script = tmp_path / "dies.py"
    script.write_text(
        "import json, sys\n"
        "print(json.dumps({'type': 'hello', 'protocol': 1}), flush=True)\n"
        "for n, line in enumerate(sys.stdin):\n"
        "    m = json.loads(line)\n"
        "    if m['type'] == 'turn':\n"
        "        if n > 3:\n"
        "            sys.exit(3)\n"
        "        print(json.dumps({'match': m['match'], 'seat': m['seat'], 'action': m['legal'][0]}), flush=True)\n",
        encoding="utf-8",
    )
    done = arena("play", "--stdio", f"{sys.executable} {script}", "--vs", "random", "--games", "4", "--out",
                 str(tmp_path / "t"), "--json", timeout=300)  # fmt: skip
    assert done.returncode == 1
    problems = json.loads(done.stdout)["problems"]
    assert any("dies.py: its bot process died" in p and "exited with status 3" in p for p in problems), problems


def test_tournament_takes_stdio_entrants_both_ways(starters: dict[str, Path], tmp_path: Path) -> None:
    done = arena("tournament", "random", f"stdio:{starters['c']}", "--stdio", str(starters["go"]), "--game",
                 "shanghaien", "--games", "2", "--out", str(tmp_path / "t"), "--json", timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert doc["players"] == ["random", "cbot", "gobot"] and doc["games"] == 6
    for path in (tmp_path / "t").glob("*.jsonl"):
        footer = events(path)[-1]
        assert isinstance(footer, transcript.Footer) and footer.end_reason == "completed" and not footer.forfeited
