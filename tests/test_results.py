"""The stored result (``arena.results``): the bytes it writes must not change (every rebuild reads back every
result ever stored), results of any age must still decode, and one rule says which results move a ladder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arena.results import StoredResult, counting_record, counts, game_prefix, record, record_json
from referee.wire.values import EndReason, MatchResult, SeatResult, SeatStatus

DATA = Path(__file__).parent / "data" / "transcripts"


def three_seats(end: EndReason = EndReason.COMPLETED) -> MatchResult:
    seats = (
        SeatResult(0, "ünï", "1.0", 27, 1, SeatStatus.ACTIVE, 0, 2),
        SeatResult(1, "b", "2", 20, 3, SeatStatus.FORFEITED, 3, 0),
        SeatResult(2, "c", "3", 26, 2, SeatStatus.ACTIVE, 0, 0),
    )
    return MatchResult("m1", "shangrila-3p", end, seats, "seed", "ab" * 32, 108, "")


def test_a_result_is_stored_byte_for_byte_as_before_and_reads_back() -> None:
    stored = StoredResult.of(three_seats(), rated=True, finished_at=1_700_000_000.25)
    text = stored.to_json()
    assert (
        text
        == (  # json.dumps of MatchResult.to_dict() with rated and finished_at, as the worker wrote it
            '{"match_id": "m1", "game_id": "shangrila-3p", "end_reason": "completed", "seats": ['
            '{"seat": 0, "bot_name": "\\u00fcn\\u00ef", "bot_version": "1.0", "score": 27, "rank": 1, '
            '"status": "active", "strikes": 0, "refusals": 2}, '
            '{"seat": 1, "bot_name": "b", "bot_version": "2", "score": 20, "rank": 3, '
            '"status": "forfeited", "strikes": 3, "refusals": 0}, '
            '{"seat": 2, "bot_name": "c", "bot_version": "3", "score": 26, "rank": 2, '
            '"status": "active", "strikes": 0, "refusals": 0}], '
            '"seed": "seed", "seed_sha256": "' + "ab" * 32 + '", "plies": 108, "detail": "", '
            '"rated": true, "finished_at": 1700000000.25}'
        )
    )
    assert text == json.dumps(three_seats().to_dict() | {"rated": True, "finished_at": 1_700_000_000.25})
    assert StoredResult.from_json(text) == stored
    assert stored.record() == ["shangrila-3p", "m1", 1_700_000_000.25, True, "completed",
                               "ünï", "1.0", 1, 0, "b", "2", 3, 1, "c", "3", 2, 0]  # fmt: skip
    assert stored.record_json() == (
        '["shangrila-3p","m1",1700000000.25,true,"completed","ünï","1.0",1,0,"b","2",3,1,"c","3",2,0]'
    )
    assert json.loads(stored.record_json()) == stored.record() == record(json.loads(text))
    assert stored.record_json().startswith(game_prefix("shangrila-3p"))
    assert record_json(json.loads(text)) == stored.record_json()


def test_a_result_from_a_transcript_is_stored_in_the_same_form() -> None:
    lines = (DATA / "scripted-shangrila-3p.jsonl").read_text(encoding="utf-8").splitlines()
    stored = StoredResult.from_lines(lines, rated=False)
    d = json.loads(stored.to_json())
    assert list(d) == ["match_id", "game_id", "end_reason", "seats", "seed", "seed_sha256", "plies", "detail",
                       "rated", "finished_at"]  # fmt: skip
    assert list(d["seats"][0]) == ["seat", "bot_name", "bot_version", "score", "rank", "status", "strikes",
                                   "refusals"]  # fmt: skip
    assert StoredResult.from_dict(d) == stored and not stored.counts


def test_results_stored_long_ago_still_give_their_record() -> None:
    """Results stored before ``rated``, ``finished_at`` or a seat's ``status`` were written read as unrated,
    finished at 0.0 and active; one without the values has no record, and the ladder skips it."""
    seats = [{"bot_name": "a", "bot_version": "1", "rank": 1}, {"bot_name": "b", "bot_version": "1", "rank": 2}]
    old: dict[str, Any] = {"match_id": "m0", "game_id": "shanghaien", "end_reason": "completed", "seats": seats}
    assert record(old) == ["shanghaien", "m0", 0.0, False, "completed", "a", "1", 1, 0, "b", "1", 2, 0]
    assert counting_record(old) is None  # unrated
    assert counting_record(old | {"rated": True}) == ["shanghaien", "m0", 0.0, True, "completed",
                                                      "a", "1", 1, 0, "b", "1", 2, 0]  # fmt: skip
    with pytest.raises(KeyError):
        record({"ranks": [1, 2]})
    assert counting_record({"ranks": [1, 2], "rated": True}) is None


@pytest.mark.parametrize(
    ("rated", "end", "seats", "want"),
    [
        (True, EndReason.COMPLETED, 3, True),
        (True, EndReason.FORFEIT, 3, True),
        (False, EndReason.COMPLETED, 3, False),
        (True, EndReason.ABORTED, 3, False),
        (True, EndReason.COMPLETED, 1, False),
    ],
)
def test_one_rule_says_whether_a_result_counts(rated: bool, end: EndReason, seats: int, want: bool) -> None:
    result = three_seats(end)
    stored = StoredResult.of(MatchResult(result.match_id, result.game_id, end, result.seats[:seats], result.seed,
                                         result.seed_sha256, result.plies), rated, 1.0)  # fmt: skip
    assert stored.counts is want
    assert counts(json.loads(stored.record_json())) is want  # on the record as the ladder decodes it
    assert (counting_record(stored.to_dict()) is not None) is want  # on a whole result of an older entry
