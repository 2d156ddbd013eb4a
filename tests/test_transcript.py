"""Typed transcript events, the replay walk, and verify.

``tests/data/transcripts/`` holds transcripts written by the referee before events were typed: real
matches over gRPC (an aborted one, a strike-out, a disconnection forfeit, a four-player game) and
``scripted-*``, in-process matches with scripted bots (refusals, strikes, a forfeit with fallback
plies, a disconnection and reconnection, a resumption) on a fake clock, so that the same match
played now must write the very same bytes.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import referee.match
from arena.cli.main import main
from arena.results import StoredResult
from arena.service.matches import public_lines
from referee import games, transcript
from referee.games import TimeControl
from referee.match import Match, RefusalError
from referee.spec import MatchSpec, SeatSpec
from referee.transcript import (
    Footer,
    Forfeit,
    Header,
    Incident,
    Ply,
    Refusal,
    Resumed,
    Strike,
    TranscriptError,
    Visitor,
    parse_event,
)

DATA = Path(__file__).parent / "data" / "transcripts"
GOLDEN = sorted(DATA.glob("*.jsonl"))


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


# ------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_real_transcripts_round_trip_line_by_line_and_verify(path: Path) -> None:
    for line in lines_of(path):
        event = parse_event(line)
        assert event.to_line() == line
        assert parse_event(line.encode()).to_line() == line
        assert event.to_dict() == json.loads(line)  # same keys, same order, same values
        assert list(event.to_dict()) == list(json.loads(line))
    assert transcript.verify(path) is None


def test_the_public_form_of_a_refusal_round_trips() -> None:
    lines = lines_of(DATA / "scripted-shanghaien.jsonl")
    public = public_lines(lines, set())
    refusals = [parse_event(line) for line in public if '"refusal"' in line]
    assert refusals and all(isinstance(r, Refusal) and r.action is None and r.reason is None for r in refusals)
    assert refusals[0].to_line() == '{"type":"refusal","ply":12,"seat":0,"code":"syntax"}'
    assert all(parse_event(line).to_line() == line for line in public)
    assert transcript.verify_lines(public) is None
    assert public_lines(lines, {0}) == lines and public_lines(lines, None) == lines


# ------------------------------------------------------------- the referee writes the same bytes


class Scripted:
    """A seat played in process, deterministically: the legal action at a fixed index of the sorted
    texts; on chosen turns (1-based, this seat's) it first sends a syntax error and an illegal action,
    lets the deadline pass, or drops and restores its connection."""

    ILLEGAL = {"shanghaien": "deal german-1", "shangrila-3p": "journey 0>12"}

    def __init__(self, seat: int, now: list[float], **script: set[int]) -> None:
        self.seat, self.now = seat, now
        self.refuse, self.miss, self.reconnect = (script.get(k, set()) for k in ("refuse", "miss", "reconnect"))
        self.turns = 0
        self.last_turn = -1

    def match_started(self, match: Match, seat: int) -> None:
        pass

    def match_ended(self, match: Match, seat: int, result: Any, history_from: int) -> None:
        pass

    def turn(self, match: Match, seat: int, turn_id: int, history_from: int, move_ms: int, bank_ms: int) -> None:
        if turn_id == self.last_turn:  # sent again after the reconnection
            return
        self.last_turn = turn_id
        self.turns += 1
        if self.turns not in self.miss:
            asyncio.get_running_loop().call_soon(self._act, match, turn_id, self.turns)

    def _act(self, match: Match, turn_id: int, k: int) -> None:
        if k in self.reconnect:
            match.detach(self.seat, self)
            match.attach(self.seat, self)
        if k in self.refuse:
            for text in ("kein Zug \u2603", self.ILLEGAL[match.spec.game_id]):
                with pytest.raises(RefusalError):
                    match.submit(self.seat, turn_id, text)
        self.now[0] += 0.0123  # every move takes 12.3 ms on the match's clock
        actions = sorted(str(a) for a in match.state.legal_actions())
        match.submit(self.seat, turn_id, actions[(7 * k) % len(actions)])


SCRIPTS: dict[str, list[dict[str, set[int]]]] = {
    "shanghaien": [{"refuse": {3, 9}, "reconnect": {5}}, {"miss": {4, 11}}],
    "shangrila-3p": [{"refuse": {2}}, {"miss": {2, 3, 4}}, {"reconnect": {3}}],
}
CONTROL = TimeControl(first_move_ms=300, move_ms=300, bank_ms=0, grace_ms=50, disconnect_grace_ms=5000,
                      join_timeout_ms=5000)  # fmt: skip


def scripted_spec(game_id: str) -> MatchSpec:
    seats = tuple(SeatSpec(i, f"bot{i}", "0" * 64) for i in range(len(SCRIPTS[game_id])))
    return MatchSpec(f"scripted-{game_id}", game_id, seats, seed="scripted", time_control=CONTROL)


async def scripted_match(game_id: str) -> list[str]:
    now = [100.0]
    match = Match(scripted_spec(game_id), clock=lambda: now[0])
    for seat, script in enumerate(SCRIPTS[game_id]):
        match.attach(seat, Scripted(seat, now, **script), "1.0")
    await match.run()
    return match.lines


async def scripted_resume(game_id: str, lines: list[str]) -> list[str]:
    now = [200.0]
    match = Match.resume(scripted_spec(game_id), lines, clock=lambda: now[0])
    for seat in range(len(SCRIPTS[game_id])):
        match.attach(seat, Scripted(seat, now), "1.0")
    await match.run()
    return match.lines


@pytest.fixture
def fixed_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(referee.match, "_now", lambda: "2026-01-01T00:00:00.000+00:00")


@pytest.mark.parametrize("game_id", list(SCRIPTS))
def test_the_referee_writes_the_same_bytes_as_before(game_id: str, fixed_time: None) -> None:
    """The golden files were written by the dict-building referee for these very matches."""
    lines = asyncio.run(scripted_match(game_id))
    assert lines == lines_of(DATA / f"scripted-{game_id}.jsonl")
    assert [parse_event(line).to_line() for line in lines] == lines
    assert transcript.verify_lines(lines) is None


def test_a_resumed_match_writes_the_same_bytes_as_before(fixed_time: None) -> None:
    full = lines_of(DATA / "scripted-shanghaien.jsonl")
    lines = asyncio.run(scripted_resume("shanghaien", full[:60]))
    assert lines == lines_of(DATA / "scripted-shanghaien-resumed.jsonl")


def test_resume_restores_the_match_from_the_lines() -> None:
    lines = lines_of(DATA / "scripted-shangrila-3p.jsonl")[:-1]  # the footer not written yet
    match = Match.resume(scripted_spec("shangrila-3p"), lines)
    assert match.ply == 108 and match.state.is_terminal()
    assert [s.strikes for s in match.seats] == [0, 3, 0]
    assert [s.refusals for s in match.seats] == [2, 0, 0]
    assert [s.forfeited for s in match.seats] == [False, True, False]
    assert [s.bot_version for s in match.seats] == ["1.0"] * 3
    assert match.lines[:-1] == lines and parse_event(match.lines[-1]) == Resumed(ply=108)
    with pytest.raises(ValueError, match="already ended"):
        Match.resume(scripted_spec("shangrila-3p"), lines_of(DATA / "scripted-shangrila-3p.jsonl"))
    with pytest.raises(ValueError, match="starts with its header"):
        Match.resume(scripted_spec("shangrila-3p"), lines[1:])
    with pytest.raises(TranscriptError, match="line 3: not JSON"):
        Match.resume(scripted_spec("shangrila-3p"), [*lines[:2], "{", *lines[3:]])
    with pytest.raises(TranscriptError, match="the transcript is of shangrila-3p"):
        Match.resume(scripted_spec("shanghaien"), lines)


@pytest.mark.parametrize("action", ["roll", 'say "hi"\\', "\u2603 \u2028 \x85 \x00\n\t", "\ud800"])
@pytest.mark.parametrize("think_ms", [None, 0.0, 12.3, 1e-07, 1e22, 5, float("nan"), float("inf"), -float("inf")])
def test_a_ply_line_is_what_json_writes(action: str, think_ms: float | None) -> None:
    """Ply.to_line formats directly (the referee's hot path): the bytes json.dumps writes."""
    seat = Ply(ply=40, actor=2, action=action, think_ms=think_ms, bank_ms=9876, fallback=think_ms is None)
    for ply in (Ply(ply=3, actor=-1, action=action), seat):
        assert ply.to_line() == json.dumps(ply.to_dict(), separators=(",", ":"), ensure_ascii=False)
        assert parse_event(ply.to_line()).to_line() == ply.to_line()


# ---------------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"\xff\xfe{}", "not UTF-8"),
        ("{", "not JSON"),
        ("[" * 100_000, "not JSON"),
        ('{"type": "resumed", "ply": ' + "1" * 5000 + "}", "not JSON"),
        ("[1, 2]", "no 'type'"),
        ('{"ply": 1}', "no 'type'"),
        ('{"type": "move"}', "unknown event type 'move'"),
        ('{"type": 7}', "unknown event type 7"),
        ('{"type": "ply", "ply": 0, "actor": -1}', "ply line has no 'action'"),
        ('{"type": "ply", "ply": "0", "actor": -1, "action": "x"}', "'ply' must be an integer, not '0'"),
        ('{"type": "ply", "ply": true, "actor": -1, "action": "x"}', "'ply' must be an integer"),
        ('{"type": "ply", "ply": 1.0, "actor": -1, "action": "x"}', "'ply' must be an integer"),
        ('{"type": "ply", "ply": 0, "actor": -1, "action": null}', "'action' must be a string"),
        ('{"type": "ply", "ply": 0, "actor": -1, "action": "x", "think_ms": 1}', "unexpected field(s): 'think_ms'"),
        ('{"type": "ply", "ply": 0, "actor": 0, "action": "x"}', "ply line has no 'think_ms'"),
        ('{"type": "ply", "ply": 0, "actor": 0, "action": "x", "think_ms": "1", "bank_ms": 0, "fallback": false}',
         "'think_ms' must be a number or null"),
        ('{"type": "ply", "ply": 0, "actor": 0, "action": "x", "think_ms": 1, "bank_ms": 0, "fallback": 0}',
         "'fallback' must be true or false"),
        ('{"type": "refusal", "ply": 0, "seat": 0, "code": "syntax", "reason": null}', "'reason' must be a string"),
        ('{"type": "strike", "ply": 0, "seat": 0, "strikes": 1}', "strike line has no 'reason'"),
        ('{"type": "forfeit", "ply": 0, "seat": [0], "reason": "strikes"}', "'seat' must be an integer"),
        ('{"type": "header", "format": "other", "version": 1}', "unknown format 'other' version 1"),
        ('{"type": "header", "format": "arena-transcript", "version": 2}',
         "unknown format 'arena-transcript' version 2"),
        ('{"type": "footer", "end_reason": "completed"}', "the footer reveals no seed"),
        ('{"type": "footer", "end_reason": "won", "seed": "s"}', "'end_reason' must be 'completed' or 'forfeit' or"),
        ('{"type": "footer", "end_reason": "completed", "plies": 1, "scores": [1, "2"], "seed": "s"}',
         "'scores' must be a list of integers"),
    ],
)  # fmt: skip
def test_malformed_lines_are_one_clear_error(line: str | bytes, message: str) -> None:
    with pytest.raises(TranscriptError) as info:
        parse_event(line)
    assert message in info.value.message
    assert transcript.verify_lines([line]) == transcript.VerifyError(1, info.value.message)


def test_malformed_header_fields() -> None:
    header = json.loads(lines_of(DATA / "shanghaien-aborted.jsonl")[0])
    for key, value, message in [
        ("seats", [{"seat": 0, "bot_name": "a"}], "header seat line has no 'bot_version'"),
        ("seats", [0, 1], "'seats' must be a list of seats"),
        ("seats", "ab", "'seats' must be a list of seats"),
        ("time_control", {"move_ms": "1"}, "'time_control' must be an object of milliseconds"),
        ("rated", 0, "'rated' must be true or false"),
        ("match_id", None, "'match_id' must be a string"),
    ]:
        with pytest.raises(TranscriptError, match=message.replace("(", r"\(")):
            parse_event(json.dumps({**header, key: value}))


# ----------------------------------------------------------------------------------- walk


class Recorder(Visitor):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def header(self, header: Header, state: games.State) -> None:
        self.calls.append("header")
        assert state.current_player() == games.CHANCE  # the initial state

    def ply(self, ply: Ply, action: Any, before: games.State, after: games.State) -> None:
        self.calls.append("ply")
        assert str(action) == ply.action and before.apply(action).render() == after.render()

    def incident(self, event: Incident, state: games.State) -> None:
        self.calls.append(event.TYPE)

    def footer(self, footer: Footer, state: games.State) -> None:
        self.calls.append("footer")
        assert state.is_terminal() and list(footer.scores) == state.scores()


def test_walk_calls_the_hooks_in_order_and_returns_the_final_state() -> None:
    lines = lines_of(DATA / "scripted-shanghaien.jsonl")
    recorder = Recorder()
    state = transcript.walk_lines(lines, recorder)
    assert state.is_terminal()
    assert recorder.calls == [parse_event(line).TYPE for line in lines]
    recorder = Recorder()
    events = [parse_event(line) for line in lines]
    assert transcript.walk(enumerate(events, 1), recorder).scores() == state.scores()
    # an unfinished transcript walks too (a live match, a match to resume)
    assert not transcript.walk_lines(lines[:40], Visitor()).is_terminal()


def test_read_gives_typed_events() -> None:
    events = transcript.read(DATA / "shanghaien-strikes-forfeit.jsonl")
    assert isinstance(events[0], Header) and isinstance(events[-1], Footer)
    assert [e.strikes for e in events if isinstance(e, Strike)] == [1, 2, 3]
    assert [e for e in events if isinstance(e, Forfeit)] == [Forfeit(ply=12, seat=0, reason="strikes")]
    assert transcript.is_footer(events[-1].to_line()) and not transcript.is_footer(events[0].to_line())


# ---------------------------------------------------------------------------------- verify


def edited(lines: list[str], index: int, **changes: Any) -> list[str]:
    index %= len(lines)
    event = {**json.loads(lines[index]), **changes}
    return [*lines[:index], json.dumps(event), *lines[index + 1 :]]


def another_legal(lines: list[str], i: int) -> str:
    """A legal action at line ``i`` (a ply) other than the one recorded."""
    state = transcript.walk_lines(lines[:i], Visitor())
    return next(t for t in sorted(str(a) for a in state.legal_actions()) if t != json.loads(lines[i])["action"])


def test_verify_checks_the_header_against_the_game() -> None:
    lines = lines_of(DATA / "scripted-shanghaien.jsonl")
    seats = json.loads(lines[0])["seats"]
    five = [{"seat": i, "bot_name": f"b{i}", "bot_version": ""} for i in range(5)]
    error = transcript.verify_lines(edited(lines, 0, seats=five))
    assert error == transcript.VerifyError(1, "the header has 5 seats but shanghaien has 2")
    error = transcript.verify_lines(edited(lines, 0, seats=seats[::-1]))
    assert error is not None and error.line == 1 and "numbered 0 to 1" in error.message
    error = transcript.verify_lines(edited(lines, 0, game_id="chess"))
    assert error is not None and error.line == 1 and "unknown game id 'chess'" in error.message


def test_verify_keeps_its_checks_and_messages() -> None:
    lines = lines_of(DATA / "scripted-shangrila-3p.jsonl")
    n = len(lines)
    i = next(i for i, line in enumerate(lines) if '"fallback":true' in line)
    cases: list[tuple[list[str], int, str]] = [
        ([], 1, "the first line must be the header"),
        (lines[1:], 1, "the first line must be the header"),
        (lines[:-1], n - 1, "the last line must be the footer"),
        (edited(lines, -1, seed="x"), n, "the revealed seed does not match the header's seed_sha256"),
        (edited(lines, 1, ply=5), 2, "ply 5 out of order; expected 0"),
        (edited(lines, 1, actor=1), 2, "actor 1 but the engine has 0 to move"),
        (edited(lines, 1, action="pass"), 2, "'pass'"),
        (edited(lines, i, action=another_legal(lines, i)), i + 1, "is not the documented fallback"),
        (edited(lines, -1, plies=3), n, "footer says 3 plies, the transcript has 108"),
        (edited(lines, -1, forfeited=[]), n, "forfeited seats differ from the forfeit events"),
        (edited(lines, -1, scores=[1, 2, 3]), n, "scores [1, 2, 3] but the replay gives [27, 20, 26]"),
        (edited(lines, -1, game_ranks=[1, 2, 3]), n, "game ranks [1, 2, 3] but the replay gives [1, 3, 2]"),
        (edited(lines, -1, ranks=[1, 2, 3]), n, "ranks [1, 2, 3] do not follow from the game ranks and forfeits"),
        (edited(lines, -1, scores=[1, 2]), n, "the footer has 2 scores for 3 seats"),
        ([*lines[:-1], lines[1], lines[-1]], n, "ply 0 out of order; expected 108"),
        ([*lines, lines[-1]], n + 1, "a line after the footer"),
        ([lines[0], *lines], 2, "a second header"),
    ]
    j = next(i for i, line in enumerate(lines) if '"type":"strike"' in line)
    cases += [
        (edited(lines, j, ply=0), j + 1, "strike at ply 0, but 4 plies were played"),
        (edited(lines, j, seat=3), j + 1, "strike of seat 3, which shangrila-3p does not have"),
    ]
    for bad, line, message in cases:
        error = transcript.verify_lines(bad)
        assert error is not None and error.line == line and message in error.message, (message, error)


def test_verify_reports_an_aborted_match_as_consistent_and_a_tampered_chance_outcome() -> None:
    assert transcript.verify(DATA / "shanghaien-aborted.jsonl") is None
    lines = lines_of(DATA / "shanghaien-strikes-forfeit.jsonl")
    j = next(i for i, line in enumerate(lines) if '"actor":-1' in line and "deal" in line)
    other = "deal german-1" if json.loads(lines[j])["action"] != "deal german-1" else "deal german-2"
    error = transcript.verify_lines(edited(lines, j, action=other))
    assert error is not None and error.line == j + 1 and "does not derive from the seed" in error.message


def test_verify_reads_files_as_bytes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = lines_of(DATA / "shanghaien-aborted.jsonl")
    path.write_bytes(lines[0].encode() + b"\n\xc3\x28\n" + lines[1].encode() + b"\n")
    assert transcript.verify(path) == transcript.VerifyError(2, "not UTF-8 text (byte 0)")
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")  # blank lines are skipped
    assert transcript.verify(path) is None


# ---------------------------------------------------------------------- other readers


def test_a_stored_result_from_lines_counts_strikes_refusals_and_forfeits() -> None:
    result = StoredResult.from_lines(lines_of(DATA / "scripted-shangrila-3p.jsonl"), rated=True).to_dict()
    assert result["match_id"] == "scripted-shangrila-3p" and result["end_reason"] == "completed"
    assert [s["strikes"] for s in result["seats"]] == [0, 3, 0]
    assert [s["refusals"] for s in result["seats"]] == [2, 0, 0]
    assert [s["status"] for s in result["seats"]] == ["active", "forfeited", "active"]
    assert [s["score"] for s in result["seats"]] == [27, 20, 26] and result["plies"] == 108 and result["rated"]
    with pytest.raises(TranscriptError, match="footer"):
        StoredResult.from_lines(lines_of(DATA / "scripted-shangrila-3p.jsonl")[:-1], rated=False)


def test_cli_reports_malformed_transcripts_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = DATA / "shanghaien-strikes-forfeit.jsonl"
    assert main(["transcript", "show", str(good)]) == 0
    out = capsys.readouterr().out
    assert "end: forfeit" in out and "strike seat=0, strikes=1, reason=timeout" in out
    lines = lines_of(good)
    for name, content, message in [
        ("json.jsonl", "\n".join([lines[0], "{oops", *lines[1:]]).encode(), "line 2: not JSON"),
        ("utf8.jsonl", b"\xff\n", "line 1: not UTF-8"),
        ("seats.jsonl", "\n".join(edited(lines, 0, seats=[])).encode(), "line 1: the header has 0 seats"),
        ("type.jsonl", "\n".join(edited(lines, 3, ply="3")).encode(), "line 4: ply field 'ply' must be"),
        ("open.jsonl", "\n".join(lines[:-1]).encode(), "the last line must be the footer"),
    ]:
        path = tmp_path / name
        path.write_bytes(content)
        assert main(["transcript", "show", str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"{path}: ") and err.count("\n") == 1 and message in err
        assert main(["transcript", "verify", str(path)]) == 1
        assert message in capsys.readouterr().err
    assert main(["transcript", "show", str(tmp_path / "missing.jsonl")]) == 2


def test_stored_transcripts_split_on_newlines_only() -> None:
    """A refused action may carry U+2028 or U+0085 unescaped (``ensure_ascii=False``): still one line."""
    from arena.service.gateway import jsonl_lines

    text = '{"type":"refusal","action":"a\u2028b\x85c"}\n{"type":"footer"}\n'
    assert jsonl_lines(text) == ['{"type":"refusal","action":"a\u2028b\x85c"}', '{"type":"footer"}']
    assert jsonl_lines("") == []
