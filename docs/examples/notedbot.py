# notedbot.py: mybot.py's look-ahead, with a note on every move saying why (docs/bots.md, "Notes")
from __future__ import annotations

import random
from typing import Any

from sdk import Bot, Noted, Turn


class NotedBot(Bot):
    name, version = "notedbot", "1.0"

    def act(self, turn: Turn) -> Any:
        def lead(action: Any) -> tuple[int, float]:
            scores = turn.state.apply(action).scores()
            best_other = max(s for seat, s in enumerate(scores) if seat != turn.seat)
            return scores[turn.seat] - best_other, random.random()

        best = max(turn.legal_actions, key=lead)
        # The note goes into this bot's owner's copy of the transcript, beside the move, and nowhere else:
        # at most 256 bytes a move, 16 KiB a match, printable text (the SDK warns when it cuts one).
        return Noted(best, f"lead after it {lead(best)[0]:+d}; {len(turn.legal_actions)} legal moves")
