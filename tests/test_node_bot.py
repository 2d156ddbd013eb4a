"""The Node.js starter bot (docs/examples/node-bot) against the real referee: ``arena play --cmd`` in both
games and ``arena bot check --cmd``. Its packages come from ``npm ci`` in a temporary copy of its
package files (the repository holds no node_modules; npm's own cache lives outside it) and reach the
bot through NODE_PATH; the bot itself runs from the repository, so it loads the repository's proto/. In
session mode it also plays on an arena through the Play proxy (nginx) and follows a match whose worker
died."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from arena import keys
from arena.local.arena import LocalArena
from arena.local.redisproc import free_port
from arena.service.client import ArenaClient
from referee import transcript
from referee.wire.tls import ClientTls, ServerTls
from sdk.arena_client import ArenaBotRunner
from tests.helpers import (
    FAST,
    QUICK_JOIN,
    SlowRandom,
    arena,
    call,
    checkout_env,
    finished,
    nginx_play_proxy,
    require_tool,
    tls_files,
    wait_for,
)

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


def test_node_bot_follows_its_match_through_the_play_proxy_when_its_worker_dies(
    node_env: dict[str, str], redis_url: str, tmp_path: Path
) -> None:
    """Session mode (ARENA_GATEWAY): the Node bot opens its session on the gateway and plays where its
    MatchAssigned says, here through nginx (TLS, the route in x-arena-route). Its worker is SIGKILLed
    mid-match: the next MatchAssigned names the new worker's route and the bot follows it there; the match
    ends completed, with no strike or forfeit."""
    pki = tls_files(tmp_path / "pki")
    port = free_port()

    async def main() -> None:
        async with LocalArena(
            tmp_path / "arena", workers=2, redis_url=redis_url, worker_args=FAST, play_proxy=f"127.0.0.1:{port}",
            tls=ServerTls(pki["cert"], pki["key"]), tls_ca=pki["ca"],
        ) as arena:  # fmt: skip
            trust = ClientTls(pki["ca"])
            admin = ArenaClient(arena.gateway, arena.admin_token, tls=trust)
            tokens = {}
            for name in ("node", "alpha"):
                _, tokens[name] = await call(admin.register_bot, name, "tests", ["shanghaien"], 5)
            err = (tmp_path / "node.err").open("wb")
            node = subprocess.Popen(
                COMMAND.split(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err,
                env={**node_env, "ARENA_GATEWAY": arena.gateway, "ARENA_TLS_CA": str(pki["ca"]),
                     "ARENA_BOT_TOKEN": tokens["node"], "ARENA_MATCHES": "1"},
            )  # fmt: skip
            runner = ArenaBotRunner(SlowRandom(0.05, 1), arena.gateway, tokens["alpha"], tls=trust)
            task = asyncio.create_task(runner.run())
            try:
                match_id, _ = await call(admin.request_match, "shanghaien", ["node", "alpha"], time_control=QUICK_JOIN)
                r = redis.Redis.from_url(redis_url)

                async def some_plies() -> bool:
                    return int(r.xlen(keys.events(match_id))) > 20

                await wait_for(some_plies, 90, "the match to get going")
                m = await call(admin.describe, match_id)
                assert m.state == 2, "the kill must come mid-match"
                victim = next(w for w in arena.workers if m.worker.startswith(f"local-{w.index}-"))
                await asyncio.to_thread(victim.kill)
                arena.start_worker()
                done = (await finished(admin, [match_id], 120))[match_id]
                assert done.worker != m.worker and done.result.end_reason == 1, done.result.detail
                text, _ = await call(admin.transcript, match_id)
                events = [json.loads(line) for line in text.splitlines()]
                assert sum(e["type"] == "resumed" for e in events) >= 1
                assert not [e for e in events if e["type"] in ("strike", "forfeit")], "the kill cost nobody a move"
                assert await asyncio.to_thread(node.wait, 30) == 0  # ARENA_MATCHES=1: it counted its match
                log = (tmp_path / "node.err").read_text()
                assert f"moved: playing it on 127.0.0.1:{port} (route w" in log, log[-3000:]
                r.close()
            finally:
                runner.stop()
                await asyncio.gather(task, return_exceptions=True)
                if node.poll() is None:
                    node.kill()
                err.close()
                admin.close()

    with nginx_play_proxy(redis_url, tmp_path / "proxy", port, tls=(pki["cert"], pki["key"]),
                          worker_tls=(pki["ca"], "localhost"), child=True):  # fmt: skip
        asyncio.run(main())
