"""A finished match's result in brief, stored beside its match id in the results stream (field
``keys.RESULT_RECORD``, written by ``MatchQueue.complete`` with the result): the values a reader of every
result needs, as a flat JSON list in a fixed order. The ladder's rebuild reads a million results; decoding
this list costs a fraction of decoding the whole result (seats with scores, strikes, the seed, ...), which
stays on the match hash.

Layout: ``[game_id, match_id, finished_at, rated, end_reason]`` then, per seat in seat order, ``bot_name,
bot_version, rank, forfeited`` (``forfeited`` 1 or 0): the values converted as the ladder converts them.
``finished_at`` is a float written as ``repr`` writes it, which decodes to the same float. A change of
layout takes a new field name: entries stored with the old one (or none) are then read from the result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from referee.wire.values import SeatStatus

HEAD: Final = 5  # values before the seats
SEAT: Final = 4  # values per seat

_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_FORFEITED: Final = SeatStatus.FORFEITED


def record(result: Mapping[str, Any]) -> list[Any]:
    """The record of a stored result. KeyError, TypeError, ValueError or AttributeError for a result without
    the values (its entry then goes without a record)."""
    out: list[Any] = [str(result["game_id"]), str(result["match_id"]), float(result.get("finished_at", 0.0)),
                      bool(result.get("rated")), str(result.get("end_reason") or "")]  # fmt: skip
    for s in result["seats"]:
        out += (str(s["bot_name"]), str(s["bot_version"]), int(s["rank"]), 1 if s.get("status") == _FORFEITED else 0)
    return out


def record_json(result: Mapping[str, Any]) -> str:
    """``record`` as compact JSON: what is stored."""
    return _JSON.encode(record(result))


def game_prefix(game_id: str) -> str:
    """How ``record_json`` of every result of ``game_id`` begins (a reader picks one game's records by it)."""
    return _JSON.encode([str(game_id)])[:-1] + ","
