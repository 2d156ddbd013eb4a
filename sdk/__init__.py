"""The bot SDK: reference players now; the gRPC bot client arrives with the referee service."""

from sdk.players import PLAYERS, Player, greedy_player, random_player

__all__ = ["PLAYERS", "Player", "greedy_player", "random_player"]
