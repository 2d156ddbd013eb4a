"""A small arena written by the real stores, for the website's tests (``test_web_pages``, ``test_web_api``):
bots registered through the ``Registry``, matches requested through the ``MatchStore``, claimed and completed
through the ``MatchQueue`` (result, transcript, results-stream entry), the ladder synced from the stream."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import redis

from arena.ladder.store import Ladder
from arena.results import StoredResult
from arena.service.matches import MatchStore
from arena.service.queue import MatchQueue
from arena.service.registry import Registry
from referee.transcript import Refusal

GAME = "shanghaien"
HOSTILE_VERSION = "<img src=x onerror=alert(1)>"
HOSTILE_OWNER = "</script><script>alert(2)</script>"
HOSTILE_NAME = '"><svg onload=alert(3)>'  # not a registrable name; a ladder row may still carry one
SECRET = "SECRET-REFUSED-TEXT"


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def result(match_id: str, names: tuple[str, str], versions: tuple[str, str], winner: int, at: float) -> dict[str, Any]:
    seats = [{"seat": s, "bot_name": n, "bot_version": v, "score": 10 if s == winner else 3,
              "rank": 1 if s == winner else 2, "status": "active", "strikes": 0, "refusals": 0}
             for s, (n, v) in enumerate(zip(names, versions, strict=True))]  # fmt: skip
    return {"match_id": match_id, "game_id": GAME, "end_reason": "completed", "rated": True, "finished_at": at,
            "seats": seats, "plies": 40, "seed": "s", "seed_sha256": "0" * 64, "detail": ""}  # fmt: skip


def build(redis_url: str, finished: int = 6, queued: int = 3) -> dict[str, Any]:
    """``finished`` matches alpha v. beta played to the end (alpha wins the even ones), one more claimed and
    running, ``queued`` waiting; a disabled bot ``gamma`` with a private reason; the ladder synced."""
    r = redis.Redis.from_url(redis_url)
    reg = Registry(r)
    reg.register("alpha", HOSTILE_OWNER, [GAME])
    reg.register("beta", "bob", [GAME])
    reg.register("gamma", "carol", [GAME])
    reg.seen("alpha", HOSTILE_VERSION, {})
    reg.seen("beta", "1.0", {})
    reg.set_enabled("gamma", False, "PRIVATE-DISABLE-REASON")
    store = MatchStore(r)
    queue = MatchQueue(r)
    ids = []
    for i in range(finished):
        match_id, _ = store.request(GAME, ["alpha", "beta"], rated=True, match_id=f"done-{i:02d}")
        claim = queue.claim("w1")
        assert claim is not None and claim.match_id == match_id
        res = result(match_id, ("alpha", "beta"), (HOSTILE_VERSION, "1.0"), 0 if i % 2 == 0 else 1, 1.7e9 + i)
        refusal = Refusal(ply=3, seat=1, action=SECRET, code="illegal", reason="SECRET-REASON").to_line()
        lines = [json.dumps({"type": "header", "match_id": match_id}), refusal,
                 json.dumps({"type": "footer", "n": i})]  # fmt: skip
        queue.complete(claim, StoredResult.from_dict(res), transcript="\n".join(lines) + "\n", bots=("alpha", "beta"))
        ids.append(match_id)
    store.request(GAME, ["beta", "alpha"], match_id="running-0")
    running = queue.claim("w1")
    assert running is not None
    for i in range(queued):
        store.request(GAME, ["alpha", "beta"], match_id=f"waiting-{i}")
    ladder = Ladder(r)
    ladder.sync()
    # a row whose name no registry would take (results of an older arena, a local ladder): shown as text
    ladder.apply(result("odd-1", (HOSTILE_NAME, "beta"), ("</script>", "1.0"), 0, 1.7e9 + 100))
    r.close()
    return {"finished": ids}
