"""The view JSON schemas in docs/schemas/ (what a bot receives in ``Turn.view_json``) hold the real views.

Bots in other languages are written from these schemas, so they must be neither stale nor vacuous: every
seat's view at every position of many seeded random games validates (decision points, chance nodes and
the end), the views a real referee sends over gRPC validate, the schemas' fixed vocabularies are the
engines' own data, and mutated views are rejected.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import random
import secrets
from pathlib import Path
from typing import Any

import grpc
import pytest
from jsonschema import Draft202012Validator

from referee import games
from referee.games import TimeControl
from referee.games.shanghaien.deck import CARD_TYPES, NATIONS, TRICKS
from referee.games.shangrila.board import BRIDGES, COLOURS, DISCIPLINES
from referee.host import Referee
from referee.server import start_server
from referee.spec import MatchSpec, SeatSpec
from referee.wire import bot_pb2, bot_pb2_grpc, match_pb2

SCHEMAS = Path(__file__).resolve().parents[1] / "docs" / "schemas"
GAMES_PER_ID = {"shanghaien": 6, "shangrila-3p": 5, "shangrila-4p": 5}
"""Random games per game id: about 8,500 views in all (a Shanghaien game has some 370 positions, chance
included, of 2 seats; a Shangri-La game 100-130 of 3 or 4), some 25 s of validation."""


def schema_of(game_id: str) -> dict[str, Any]:
    """The view schema of a game id: one per rules family (``view-shangrila`` serves both player counts)."""
    schema: dict[str, Any] = json.loads((SCHEMAS / f"view-{games.get(game_id).family}.schema.json").read_text())
    return schema


def validator(game_id: str) -> Draft202012Validator:
    return Draft202012Validator(schema_of(game_id))


def wire_view(state: Any, seat: int) -> Any:
    """The view as the referee puts it on the wire (``referee.session.Session.turn``), decoded again."""
    return json.loads(json.dumps(state.view(seat).to_dict(), separators=(",", ":")))


def problems(v: Draft202012Validator, view: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:160]}" for e in v.iter_errors(view)]


# ----------------------------------------------------------------------------- the schema files


def test_every_game_has_a_schema_and_every_schema_is_a_valid_2020_12_schema() -> None:
    files = sorted(SCHEMAS.glob("*.schema.json"))
    assert {f.name for f in files} == {f"view-{games.get(g).family}.schema.json" for g in games.GAME_IDS}
    for f in files:
        schema = json.loads(f.read_text())
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", f.name
        Draft202012Validator.check_schema(schema)  # SchemaError if it is not a valid schema


def test_fixed_vocabularies_are_the_engines_own() -> None:
    """The enumerations in the schemas are the data files' (seeds/*.json), not a copy drifting from them."""
    sh = schema_of("shanghaien")["$defs"]
    assert sh["nation"]["enum"] == list(NATIONS)
    assert sh["trick_kind"]["enum"] == list(TRICKS)
    assert sh["sailor"]["enum"] == [c.text for c in CARD_TYPES if not c.is_trick]
    assert sh["trick_card"]["enum"] == [c.text for c in CARD_TYPES if c.is_trick]
    assert sh["card"]["enum"] == [c.text for c in CARD_TYPES]
    sl = schema_of("shangrila-4p")
    assert sl["properties"]["disciplines"]["const"] == list(DISCIPLINES)
    assert [p["const"] for p in sl["properties"]["colours"]["prefixItems"]] == list(COLOURS)
    assert sl["$defs"]["bridge"]["enum"] == [list(b) for b in BRIDGES]


# ----------------------------------------------------------------------------- random games


def random_game_views(game_id: str, seed: int) -> tuple[list[tuple[int, int, Any]], int]:
    """Every seat's wire view at every position of one random game, as (ply, seat, view), and the number
    of decision points. Chance outcomes are drawn from a seeded ``random.Random`` with the engine's
    probabilities (``chance_outcomes``), player actions uniformly from ``legal_actions``."""
    game = games.get(game_id)
    rng = random.Random(f"{game_id}:{seed}")
    state: games.State = game.new_state()
    views: list[tuple[int, int, Any]] = []
    decisions = 0
    ply = 0
    while True:
        views.extend((ply, seat, wire_view(state, seat)) for seat in range(game.num_players))
        player = state.current_player()
        if player == games.TERMINAL:
            return views, decisions
        if player == games.CHANCE:
            outcomes, weights = zip(*state.chance_outcomes(), strict=True)
            action = rng.choices(outcomes, weights)[0]
        else:
            decisions += 1
            action = rng.choice(state.legal_actions())
        state = state.apply(action)
        ply += 1


@pytest.mark.parametrize("game_id", games.GAME_IDS)
def test_every_seats_view_of_random_games_validates(game_id: str) -> None:
    v = validator(game_id)
    phases: set[str] = set()
    mover = others = decisions = 0  # views of the seat to move, and of the other seats, at decision points
    for seed in range(GAMES_PER_ID[game_id]):
        views, n = random_game_views(game_id, seed)
        decisions += n
        for ply, seat, view in views:
            bad = problems(v, view)
            assert not bad, f"{game_id} game {seed}, ply {ply}, seat {seat}: {bad[:5]}"
            phases.add(view["phase"])
            mover += view["to_move"] == seat
            others += view["to_move"] >= 0 and view["to_move"] != seat
            first = views[ply * games.get(game_id).num_players][2]  # seat 0's view of the same position
            assert {**view, "seat": 0} == first, "the seats' views differ in more than `seat` (nothing is hidden)"
    assert decisions > 50 * GAMES_PER_ID[game_id]
    assert mover == decisions and others == decisions * (games.get(game_id).num_players - 1)
    every = {"shanghaien": {"deal", "turn", "dice", "place", "over"}}.get(game_id, {"setup", "play", "over"})
    assert phases == every


# ----------------------------------------------------------------------------- over the wire

FAST = TimeControl(first_move_ms=5000, move_ms=2000, bank_ms=2000, grace_ms=200, disconnect_grace_ms=5000,
                   join_timeout_ms=10_000)  # fmt: skip


async def raw_seat(target: str, token: str, seed: int, v: Draft202012Validator) -> dict[str, Any]:
    """A bot as one written from the proto alone would be: Hello with the view JSON wanted, then each Turn's
    view validated and answered with a random legal action quoting its turn id, until MatchEnded."""
    rng = random.Random(seed)
    out: dict[str, Any] = {"turns": 0, "bad": [], "kinds": []}
    requests: asyncio.Queue[bot_pb2.PlayRequest | None] = asyncio.Queue()
    await requests.put(bot_pb2.PlayRequest(hello=bot_pb2.Hello(bot_name="name-ignored", bot_version="1")))

    async def feed() -> Any:
        while (item := await requests.get()) is not None:
            yield item

    async with grpc.aio.insecure_channel(target) as channel:
        stub = bot_pb2_grpc.BotServiceStub(channel)  # type: ignore[no-untyped-call]
        async for message in stub.Play(feed(), metadata=(("authorization", f"Bearer {token}"),)):
            kind = message.WhichOneof("message")
            out["kinds"].append(kind)
            if kind == "turn":
                t = message.turn
                view = json.loads(t.view_json)
                out["turns"] += 1
                out["bad"] += problems(v, view)
                if view["seat"] != t.seat or view["to_move"] != t.seat:
                    out["bad"].append(f"turn {t.turn_id}: view seat/to_move {view['seat']}/{view['to_move']}")
                action = rng.choice(list(t.legal_actions))
                submit = bot_pb2.SubmitAction(match_id=t.match_id, seat=t.seat, turn_id=t.turn_id, action=action)
                await requests.put(bot_pb2.PlayRequest(action=submit))
            elif kind == "refused":
                out["bad"].append(f"refused: {message.refused.reason}")
            elif kind == "match_ended":
                out["result"] = message.match_ended.result
                await requests.put(None)
                break
    return out


@pytest.mark.parametrize("game_id", games.GAME_IDS)
def test_the_view_json_a_referee_sends_validates(game_id: str) -> None:
    async def main() -> list[dict[str, Any]]:
        referee = Referee()
        server, port = await start_server(referee)
        try:
            n = games.get(game_id).num_players
            tokens = [f"arena_{secrets.token_urlsafe(32)}" for _ in range(n)]
            # a seat's token hash as docs/protocol.md gives it: the lowercase hex SHA-256 of the token text
            seats = tuple(SeatSpec(i, f"bot{i}", hashlib.sha256(t.encode()).hexdigest()) for i, t in enumerate(tokens))
            referee.start_match(MatchSpec(match_id=f"m-{game_id}", game_id=game_id, seats=seats, seed="schema",
                                          time_control=FAST))  # fmt: skip
            v = validator(game_id)
            runs = [raw_seat(f"127.0.0.1:{port}", t, i, v) for i, t in enumerate(tokens)]
            return await asyncio.wait_for(asyncio.gather(*runs), 120)
        finally:
            await referee.shutdown()
            await server.stop(None)

    for seat, out in enumerate(asyncio.run(main())):
        assert out["bad"] == [], f"seat {seat}: {out['bad'][:5]}"
        assert out["turns"] > 5
        assert out["kinds"][:2] == ["welcome", "match_started"]
        assert out["result"].end_reason == match_pb2.END_REASON_COMPLETED


# ----------------------------------------------------------------------------- not vacuous


def mid_game_view(game_id: str) -> Any:
    """A view from the middle of a game, where dice are rolled (Shanghaien) or students exist (Shangri-La)."""
    game = games.get(game_id)
    rng = random.Random(7)
    state: games.State = game.new_state()
    for _ in range(10_000):
        if state.is_terminal():
            break
        view = wire_view(state, 0)
        if game_id == "shanghaien" and view["phase"] == "place" and view["round"] >= 3 and view["orientation"]:
            return view
        if (
            game_id != "shanghaien"
            and view["phase"] == "play"
            and any(sp and sp[1] for row in view["villages"] for sp in row)
            and view["stones"] != []
            and view["stones"] != [2]
        ):
            return view
        if state.current_player() == games.CHANCE:
            outcomes, weights = zip(*state.chance_outcomes(), strict=True)
            state = state.apply(rng.choices(outcomes, weights)[0])
        else:
            state = state.apply(rng.choice(state.legal_actions()))
    raise AssertionError(f"no suitable position in a random {game_id} game")


def _set(view: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(view)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def _drop(view: Any, path: tuple[Any, ...]) -> Any:
    out = copy.deepcopy(view)
    target = out
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return out


def _first_master(view: Any) -> tuple[int, int]:
    return next((v, d) for v, row in enumerate(view["villages"]) for d, sp in enumerate(row) if sp)


SHANGHAIEN_MUTATIONS: dict[str, Any] = {
    "seat as text": lambda v: _set(v, ("seat",), "0"),
    "seat 2": lambda v: _set(v, ("seat",), 2),
    "unknown phase": lambda v: _set(v, ("phase",), "setup"),
    "round 9": lambda v: _set(v, ("round",), 9),
    "orientation left": lambda v: _set(v, ("orientation",), "left"),
    "an extra key": lambda v: {**v, "hand": []},
    "a card not in the deck": lambda v: _set(v, ("tavern", 0, "card"), "german-5"),
    "tavern positions out of order": lambda v: _set(v, ("tavern", 0, "position"), 2),
    "a die value that disagrees with the orientation": lambda v: _set(v, ("tavern", 0, "die_value"), 3),
    "one die rolled while placing": lambda v: _set(v, ("rolled",), v["rolled"][:1]),
    "a die showing 7": lambda v: _set(v, ("rolled",), [1, 7]),
    "a chance seat to move while placing": lambda v: _set(v, ("to_move",), -1),
    "three crews": lambda v: _set(v, ("crews",), [*v["crews"], v["crews"][0]]),
    "a trick kind missing": lambda v: _drop(v, ("crews", 0, "tricks", "both")),
    "a trick count as text": lambda v: _set(v, ("crews", 1, "tricks", "adjust"), "1"),
    "a wild sailor of no nation": lambda v: _set(v, ("crews", 0, "wild"), [["adjust", "english"]]),
    "a strength of zero": lambda v: _set(v, ("crews", 0, "strength"), {"german": 0}),
    "a trick among the sailors": lambda v: _set(v, ("crews", 0, "sailors"), ["trick-both"]),
    "dice used as a boolean": lambda v: _set(v, ("crews", 0, "trick_used_this_round"), 0),
    "three copies of a 4 left": lambda v: _set(v, ("deck_left",), {"german-4": 3}),
    "points of one seat": lambda v: _set(v, ("points",), [3]),
}

SHANGRILA_MUTATIONS: dict[str, Any] = {
    "seat as text": lambda v: _set(v, ("seat",), "1"),
    "a seat of another game": lambda v: _set(v, ("seat",), 4),
    "chance to move": lambda v: _set(v, ("to_move",), -1),
    "over with a seat to move": lambda v: _set(v, ("phase",), "over"),
    "an extra key": lambda v: {**v, "hidden": 0},
    "disciplines reordered": lambda v: _set(v, ("disciplines",), sorted(v["disciplines"])),
    "twelve villages": lambda v: _set(v, ("villages",), v["villages"][:12]),
    "a space as an object": lambda v: _set(v, ("villages", *_first_master(v)), {"colour": 0, "student": False}),
    "a student flag as a number": lambda v: _set(v, ("villages", *_first_master(v), 1), 1),
    "a colour of no seat": lambda v: _set(v, ("villages", *_first_master(v), 0), 4),
    "seven tiles in supply": lambda v: _set(v, ("supply", 0, 0), 7),
    "a bridge that does not exist": lambda v: _set(v, ("standing_bridges", 0), [0, 12]),
    "a bridge written backwards": lambda v: _set(v, ("standing_bridges", 0), v["standing_bridges"][0][::-1]),
    "no bridge standing": lambda v: _set(v, ("standing_bridges",), []),
    "a village 13": lambda v: _set(v, ("stones",), [13]),
    "a Stone twice": lambda v: _set(v, ("stones",), [v["stones"][0], v["stones"][0]]),
    "masters as text": lambda v: _set(v, ("masters",), [str(x) for x in v["masters"]]),
}


@pytest.mark.parametrize(
    ("game_id", "mutation"),
    [("shanghaien", m) for m in SHANGHAIEN_MUTATIONS]
    + [(g, m) for g in ("shangrila-3p", "shangrila-4p") for m in SHANGRILA_MUTATIONS],
)
def test_a_mutated_view_is_rejected(game_id: str, mutation: str) -> None:
    v = validator(game_id)
    view = mid_game_view(game_id)
    assert problems(v, view) == []
    mutate = (SHANGHAIEN_MUTATIONS if game_id == "shanghaien" else SHANGRILA_MUTATIONS)[mutation]
    assert not v.is_valid(mutate(view)), f"the {game_id} schema accepts a view with {mutation}"


@pytest.mark.parametrize("game_id", games.GAME_IDS)
def test_every_missing_key_is_rejected(game_id: str) -> None:
    v = validator(game_id)
    view = mid_game_view(game_id)
    nested = [("crews", 0), ("tavern", 0)] if game_id == "shanghaien" else []
    for path in [(), *nested]:
        node = view
        for key in path:
            node = node[key]
        for key in node:
            assert not v.is_valid(_drop(view, (*path, key))), f"{game_id}: a view without {(*path, key)} passes"


def test_three_player_facts_are_enforced() -> None:
    """Village 2 is closed with three players: no tile on it, no bridge to it, always a Stone."""
    v = validator("shangrila-3p")
    view = mid_game_view("shangrila-3p")
    assert not v.is_valid(_set(view, ("villages", 2, 0), [0, False]))
    assert not v.is_valid(_set(view, ("standing_bridges",), [*view["standing_bridges"], [1, 2]]))
    assert not v.is_valid(_set(view, ("stones",), [s for s in view["stones"] if s != 2]))
    assert not v.is_valid(_set(view, ("colours",), list(COLOURS)))
    assert not v.is_valid(_set(view, ("game_id",), "shangrila-4p"))  # three supplies for four players
