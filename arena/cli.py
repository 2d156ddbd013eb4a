"""The ``arena`` command. Subcommands grow with the service; for now a local demo match."""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence

from referee import chance, games
from sdk.players import PLAYERS


def demo(args: argparse.Namespace) -> int:
    game = games.get(args.game)
    names = args.players.split(",") if args.players else ["greedy", "random", "random", "random"]
    names = (names * game.num_players)[: game.num_players]
    unknown = [n for n in names if n not in PLAYERS]
    if unknown:
        print(f"unknown player(s) {', '.join(unknown)}; known: {', '.join(PLAYERS)}", file=sys.stderr)
        return 2
    seed = str(args.seed)
    rng = random.Random(f"players:{seed}")
    print(f"{game.game_id}: {' vs '.join(f'{n} (seat {i})' for i, n in enumerate(names))}")
    print(f"seed hash {chance.seed_hash(seed)}")
    state = game.new_state()
    ply = 0
    while not state.is_terminal():
        actor = state.current_player()
        if actor == games.CHANCE:
            action = chance.sample(state, seed, ply)
        else:
            action = PLAYERS[names[actor]](state, rng)
        if args.verbose:
            who = "chance" if actor == games.CHANCE else f"seat {actor}"
            print(f"{ply:>4} {who:<7} {action}")
        state = state.apply(action)
        ply += 1
    print(state.render())
    print(f"\n{ply} plies; seed {seed}")
    for seat, (name, score, rank) in enumerate(zip(names, state.scores(), state.ranks(), strict=True)):
        print(f"  seat {seat} {name:<7} score {score:>3}  place {rank}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arena", description="The bot arena for Shangri-La and Shanghaien.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="play one local match between reference players")
    p.add_argument("--game", default="shanghaien", choices=games.GAME_IDS)
    p.add_argument("--seed", default="1", help="match seed: all chance derives from it (default 1)")
    p.add_argument("--players", help=f"comma-separated, one per seat: {', '.join(PLAYERS)}")
    p.add_argument("-v", "--verbose", action="store_true", help="print every action")
    p.set_defaults(func=demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
