"""The bot SDK: write a ``Bot``, run it against a referee with ``BotClient`` (or ``arena bot run``),
and use the engines (``referee.games``) for local simulation and search."""

from referee import games
from sdk.bot import Bot, MatchInfo, MatchOutcome, Noted, Refusal, SeatOutcome, Turn

__all__ = ["Bot", "MatchInfo", "MatchOutcome", "Noted", "Refusal", "SeatOutcome", "Turn", "games"]
