"""The Node.js starter bot (docs/examples/node-bot) against the real referee: ``arena play --cmd`` in both
games and ``arena bot check --cmd``. Its packages come from ``npm ci`` in a temporary copy of its
package files (the repository holds no node_modules; npm's own cache lives outside it) and reach the
bot through NODE_PATH; the bot itself runs from the repository, so it loads the repository's proto/."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee import transcript
from tests.helpers import arena, checkout_env, require_tool

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "node-bot"
COMMAND = "node docs/examples/node-bot/bot.js"
LABEL = "bot.js"


@pytest.fixture(scope="module")
def node_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment the arena commands run in: node finds the example's packages on NODE_PATH."""
    require_tool("node", "apt-get install nodejs npm")
    npm = require_tool("npm", "apt-get install nodejs npm")
    where = tmp_path_factory.mktemp("node-bot")
    for name in ("package.json", "package-lock.json"):
        shutil.copy(EXAMPLE / name, where / name)
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=where, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    yield checkout_env(NODE_PATH=str(where / "node_modules"), COLUMNS="400")


@pytest.mark.parametrize(("game", "games"), [("shanghaien", 4), ("shangrila-3p", 3)])
def test_node_bot_plays_every_match_clean(node_env: dict[str, str], tmp_path: Path, game: str, games: int) -> None:
    out = tmp_path / "t"
    done = arena("play", "--cmd", COMMAND, "--vs", "random", "--game", game, "--games", str(games),
                 "--seed", "node", "--out", str(out), "--json", env=node_env, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["players"][0] == LABEL and doc["games"] == games and doc["aborted"] == 0 and doc["problems"] == []
    files = sorted(out.glob("*.jsonl"))
    assert len(files) == games
    seats = []
    players = len(doc["players"])
    for path in files:
        parsed = [transcript.parse_event(line) for line in path.read_text(encoding="utf-8").splitlines()]
        header, footer = parsed[0], parsed[-1]
        assert isinstance(header, transcript.Header) and isinstance(footer, transcript.Footer)
        assert footer.end_reason == "completed" and not footer.forfeited
        seat = next(s.seat for s in header.seats if s.bot_name == LABEL)
        seats.append(seat)
        assert any(isinstance(e, transcript.Ply) and e.actor == seat and not e.fallback for e in parsed)
        assert not [e for e in parsed if isinstance(e, transcript.Refusal | transcript.Strike | transcript.Forfeit)]
        assert transcript.verify(path) is None
    assert sorted(seats) == sorted(k % players for k in range(games))  # every seat in turn
    log = (out / "logs" / f"{LABEL}-1.err").read_text(encoding="utf-8")
    assert "played its matches: exiting" in log  # it counted ARENA_MATCHES and left by itself


def test_node_bot_passes_bot_check(node_env: dict[str, str], tmp_path: Path) -> None:
    done = arena("bot", "check", "--cmd", COMMAND, "--game", "shanghaien", "--games", "2", "--move-ms",
                 "1000", "--first-move-ms", "1500", "--disconnect-grace-ms", "2000", "--exit-s", "2", "--out",
                 str(tmp_path / "t"), "--json", env=node_env, timeout=300)  # fmt: skip
    doc = json.loads(done.stdout)
    assert done.returncode == 0, doc
    assert {c["name"]: c["passed"] for c in doc} == dict.fromkeys(
        ["move-time", "legal-actions", "concurrency", "long-match", "reconnect", "shutdown"], True
    )
