"""``arena demo``: one engine-level match between reference players, printed (no referee, no network)."""

from __future__ import annotations

import argparse
import random
from typing import Any

from arena.cli.common import CliError, add_json, emit_json
from referee import chance, games


def cmd_demo(args: argparse.Namespace) -> int:
    from sdk.players import PLAYERS

    game = games.get(args.game)
    names = args.players.split(",") if args.players else ["greedy", "random", "random", "random"]
    names = (names * game.num_players)[: game.num_players]
    unknown = [n for n in names if n not in PLAYERS]
    if unknown:
        raise CliError(f"unknown player(s) {', '.join(unknown)}; known: {', '.join(PLAYERS)}", 2)
    seed = str(args.seed)
    rng = random.Random(f"players:{seed}")
    if not args.json:
        print(f"{game.game_id}: {' vs '.join(f'{n} (seat {i})' for i, n in enumerate(names))}")
        print(f"seed hash {chance.seed_hash(seed)}")
    state = game.new_state()
    actions: list[dict[str, Any]] = []
    ply = 0
    while not state.is_terminal():
        actor = state.current_player()
        action = chance.sample(state, seed, ply) if actor == games.CHANCE else PLAYERS[names[actor]](state, rng)
        actions.append({"ply": ply, "actor": actor, "action": str(action)})
        if args.verbose and not args.json:
            who = "chance" if actor == games.CHANCE else f"seat {actor}"
            print(f"{ply:>4} {who:<7} {action}")
        state = state.apply(action)
        ply += 1
    results = zip(names, state.scores(), state.ranks(), strict=True)
    seats = [{"seat": i, "player": name, "score": score, "rank": rank} for i, (name, score, rank) in enumerate(results)]
    if args.json:
        emit_json({"game": game.game_id, "seed": seed, "seed_sha256": chance.seed_hash(seed), "players": names,
                      "plies": ply, "actions": actions, "seats": seats, "board": state.render()})  # fmt: skip
        return 0
    print(state.render())
    print(f"\n{ply} plies; seed {seed}")
    for s in seats:
        print(f"  seat {s['seat']} {s['player']:<7} score {s['score']:>3}  place {s['rank']}")
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="play one engine-level match between reference players and print it")
    p.add_argument("--game", default="shanghaien", choices=games.GAME_IDS)
    p.add_argument("--seed", default="1", help="match seed: all chance derives from it (default 1)")
    p.add_argument("--players", help="comma-separated, one per seat: random, greedy, strong")
    p.add_argument("-v", "--verbose", action="store_true", help="print every action")
    add_json(p, "the match (every action, the result, the final board)")
    p.set_defaults(func=cmd_demo)
