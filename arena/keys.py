"""Every Redis key the arena uses, in one place. Nobody builds key strings elsewhere."""

from __future__ import annotations

from typing import Final

PREFIX: Final = "arena:"
CONSUMER_GROUP: Final = "referees"


def match(match_id: str) -> str:
    """Hash: the match's spec (JSON), status, priority, timestamps, worker, result."""
    return f"{PREFIX}match:{match_id}"


def queue(priority: str) -> str:
    """Stream of queued match ids for one priority (consumer group ``referees``)."""
    return f"{PREFIX}queue:{priority}"


def results() -> str:
    """Stream of finished matches, one entry per match, appended exactly once."""
    return f"{PREFIX}results"
