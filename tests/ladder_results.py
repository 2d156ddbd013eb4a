"""Stored results shaped like the workers', for the ladder's tests and those that need a ladder filled:
random but seeded, with forfeits, aborted and unrated ones among them."""

from __future__ import annotations

import json
import random
from typing import Any

import redis

from arena import keys

GAMES = {"shanghaien": 2, "shangrila-3p": 3, "shangrila-4p": 4}


def make_result(rng: random.Random, i: int, game_id: str | None = None) -> dict[str, Any]:
    """A stored result shaped like the workers' (ranks from scores; forfeits last; some aborted/unrated)."""
    game_id = game_id or rng.choice(list(GAMES))
    names = rng.sample([f"bot{k}" for k in range(8)], GAMES[game_id])
    seats: list[dict[str, Any]] = []
    for s, name in enumerate(names):
        version = "2" if name == "bot1" and i > 40 else "1"  # bot1 gets a new version halfway
        forfeited = rng.random() < 0.05
        seats.append({"seat": s, "bot_name": name, "bot_version": version, "score": rng.randrange(4),
                      "status": "forfeited" if forfeited else "active", "strikes": 3 if forfeited else 0,
                      "refusals": 0})  # fmt: skip
    key = [(seat["status"] == "forfeited", -int(seat["score"])) for seat in seats]
    for s, seat in enumerate(seats):
        seat["rank"] = 1 + sum(k < key[s] for k in key)
    return {"match_id": f"m{i:04d}", "game_id": game_id,
            "end_reason": "forfeit" if any(k[0] for k in key) else rng.choice(["completed"] * 12 + ["aborted"]),
            "rated": rng.random() > 0.05, "finished_at": 1_700_000_000.0 + i, "seats": seats, "plies": 50,
            "seed": str(i), "seed_sha256": "x", "detail": ""}  # fmt: skip


def store(r: redis.Redis, result: dict[str, Any]) -> None:
    """What a worker's MatchQueue.complete leaves: the result on the match hash, one results-stream entry."""
    r.hset(keys.match(result["match_id"]), mapping={"result": json.dumps(result), "status": "finished"})
    r.xadd(keys.results(), {"match_id": result["match_id"]})


def batch(n: int, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [make_result(rng, i) for i in range(n)]
