"""Views: what a seat is shown survives the wire (JSON) unchanged, for every seat and phase."""

from __future__ import annotations

import json
import random

import pytest

from referee import chance, games


@pytest.mark.parametrize("game_id", games.GAME_IDS)
def test_view_json_round_trip_through_a_whole_game(game_id: str) -> None:
    game = games.get(game_id)
    rng = random.Random(game_id)
    state = game.new_state()
    ply = 0
    while True:
        for seat in range(game.num_players):
            view = state.view(seat)
            assert type(view).from_dict(json.loads(json.dumps(view.to_dict()))) == view
            assert view.seat == seat and view.to_move == state.current_player()
        if state.is_terminal():
            break
        if state.current_player() == games.CHANCE:
            action = chance.sample(state, "views", ply)
        else:
            action = rng.choice(state.legal_actions())
        state = state.apply(action)
        ply += 1
