"""The fallback policy (RULINGS A3): what the referee plays for a seat that missed its deadline or
forfeited.

It is the legal action chosen uniformly by ``SHA-256("<seed>:fallback:<ply>")`` over the legal
actions sorted by canonical text: neutral (no strength to gain by timing out), independent of the
bot, and checkable by anyone holding the revealed seed.
"""

from __future__ import annotations

import hashlib
from typing import Any


def fallback_action(state: Any, seed: str, ply: int) -> Any:
    actions = sorted(state.legal_actions(), key=str)
    digest = hashlib.sha256(f"{seed}:fallback:{ply}".encode()).digest()
    return actions[int.from_bytes(digest[:8], "big") % len(actions)]
