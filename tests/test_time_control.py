"""A match's time control has one shape per boundary: the CLI's flags (``add_time_control``), the wire's
overrides (``contract.control_overrides``) and the game's default applied in one function
(``referee.games.time_control``). No Redis: ``test_match_limits.py`` has the arena's bounds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arena.cli.common import TIME_CONTROL_FLAGS, time_control_overrides
from arena.cli.main import build_parser
from referee import games
from referee.games import TimeControl
from referee.wire import match_pb2
from referee.wire.contract import control_from_proto, control_overrides

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = (
    ["match", "request", "a", "b", "--game", "shanghaien"],
    ["play", "strong"],
    ["tournament", "strong", "greedy"],
    ["bot", "check", "strong"],
    ["event", "create", "cup", "--game", "shanghaien", "--bot", "a"],
)
EVERY_FIELD = {"first_move_ms": 4000, "move_ms": 900, "bank_ms": 7000, "grace_ms": 300,
               "disconnect_grace_ms": 20_000, "join_timeout_ms": 40_000}  # fmt: skip


def _flags(values: dict[str, int]) -> list[str]:
    return [x for name, v in values.items() for x in ("--" + name.replace("_", "-"), str(v))]


def test_the_flags_are_the_time_controls_fields() -> None:
    assert set(TIME_CONTROL_FLAGS) == TimeControl.field_names() == set(EVERY_FIELD)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_every_time_control_command_takes_every_field(command: list[str]) -> None:
    parser = build_parser()
    args = parser.parse_args([*command, *_flags(EVERY_FIELD)])
    assert time_control_overrides(args) == EVERY_FIELD
    assert time_control_overrides(parser.parse_args(command)) == {}  # none given: the game's default
    control = games.time_control("shanghaien", time_control_overrides(args))
    assert control.to_dict() == EVERY_FIELD


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_value_the_control_would_refuse_is_a_usage_error(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    top = TimeControl.FIELD_MAX_MS["join_timeout_ms"]
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([*command, "--join-timeout-ms", str(top + 1)])
    assert e.value.code == 2 and "--join-timeout-ms" in capsys.readouterr().err
    args = build_parser().parse_args([*command, "--join-timeout-ms", str(top)])
    assert games.time_control("shanghaien", time_control_overrides(args)).join_timeout_ms == top


def test_only_common_declares_the_time_control_flags() -> None:
    flags = "|".join(name.replace("_", "-") for name in TIME_CONTROL_FLAGS)
    declaring = [p.name for p in (ROOT / "arena" / "cli").glob("*.py") if re.search(f'"--({flags})"', p.read_text())]
    assert declaring == [], "time control flags come from arena.cli.common.add_time_control"


def test_the_games_default_is_applied_in_one_function() -> None:
    """``game.time_control`` with overrides, or as the fallback of a match without one, is written once:
    ``referee.games.time_control``. (Reading a game's default to show it is not applying it.)"""
    applying = re.compile(
        r"\.time_control\.with_overrides\(|\.time_control\s+if\b|(or|else)\s+games\.get\([^)]*\)\.time_control"
    )
    places = [
        f"{p.relative_to(ROOT)}:{n}"
        for folder in ("arena", "referee", "sdk")
        for p in (ROOT / folder).rglob("*.py")
        if "_generated" not in p.parts
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if applying.search(line)
    ]
    assert [p.split(":")[0] for p in places] == ["referee/games/__init__.py"], places


def test_the_wire_converts_once_into_overrides() -> None:
    """The gateway (a request's overrides) and the referee (a spec's whole control) read a TimeControl
    message through one conversion; a zero field keeps the game's default."""
    default = games.get("shanghaien").time_control
    msg = match_pb2.TimeControl(move_ms=700, bank_ms=0, join_timeout_ms=9000)
    assert control_overrides(msg) == {"move_ms": 700, "join_timeout_ms": 9000}
    assert control_overrides(match_pb2.TimeControl()) == {}
    control = control_from_proto(msg, "shanghaien")
    assert control == default.with_overrides(move_ms=700, join_timeout_ms=9000)
    assert control_from_proto(match_pb2.TimeControl(**EVERY_FIELD), "shanghaien").to_dict() == EVERY_FIELD
    with pytest.raises(ValueError, match="grace_ms"):
        control_from_proto(match_pb2.TimeControl(grace_ms=TimeControl.FIELD_MAX_MS["grace_ms"] + 1), "shanghaien")
