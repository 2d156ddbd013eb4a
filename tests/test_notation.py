"""The canonical notation of RULINGS.md ("Notation and the engine surface"), table by table.

Every action of each game's tables parses back to the same interned object and prints the same text;
malformed text is an ActionSyntaxError (never an IllegalActionError); actions pickle and copy to
themselves.
"""

from __future__ import annotations

import copy
import pickle
import re

import pytest

from referee import games
from referee.games import Action, ActionSyntaxError, IllegalActionError
from referee.games.shanghaien import actions as HA
from referee.games.shangrila import actions as SA
from referee.games.shangrila.board import DISCIPLINES

SHANGRILA_ACTIONS: list[SA.ShangriLaAction] = [
    *SA.PLACE,
    *SA.RECRUIT_ONE,
    *(a for row in SA.RECRUIT_TWO for a in row if a is not None),
    *SA.JOURNEY.values(),
    SA.PASS,
]
SHANGHAIEN_ACTIONS: list[HA.ShanghaienAction] = list(HA.ALL.values())
ALL_ACTIONS: list[Action] = [*SHANGRILA_ACTIONS, *SHANGHAIEN_ACTIONS]

CANONICAL: dict[str, list[str]] = {
    "shangrila": ["place 3 priest", "recruit 0 rainmaker + 4 healer", "journey 4>7", "pass", "recruit 12 firekeeper"],
    "shanghaien": [
        "deal german-3",
        "deal trick-reroll",
        "dice 2 5",
        "dice 6 6",
        "place 4 fwd",
        "place 4",
        "wild both chinese",
        "adjust 3>4",
        "adjust 3>2",
        "both rev",
        "both",
        "reroll",
        "roll",
        "shanghai",
    ],
}

MALFORMED_BOTH = [
    "",
    " ",
    "\n",
    "Place 3 priest",
    "PLACE 3 PRIEST",
    " place 3 priest",
    "place 3 priest ",
    "place  3 priest",
    "place\t3 priest",
    "hello",
    "place 13 priest",
    "place -1 priest",
    "place 03 priest",
    "place 3 monk",
    "place 3 yeti whisperer",
    "place priest 3",
    "recruit 4 healer + 0 rainmaker",  # pair in the wrong order (by village)
    "recruit 0 healer + 0 rainmaker",  # pair in the wrong order (by discipline)
    "recruit 0 healer + 0 healer",
    "recruit 0 healer+0 priest",
    "recruit 0 healer + 4 healer + 5 healer",
    "recruit 13 healer",
    "journey 4>4",
    "journey 4>13",
    "journey 4 > 7",
    "journey 4-7",
    "journey 04>7",
    "journey 4>7>8",
    "passes",
    "pass pass",
    "dice 5 3",
    "dice 0 3",
    "dice 3 7",
    "dice 3",
    "dice 3  4",
    "dice 3 4 5",
    "adjust 3>5",
    "adjust 3>3",
    "adjust 1>0",
    "adjust 6>7",
    "adjust 3 > 4",
    "adjust 3",
    "place 0",
    "place 7",
    "place 3 up",
    "place 3 FWD",
    "place 3 fwd rev",
    "place three",
    "both sideways",
    "both fwd fwd",
    "wild adjust martian",
    "wild joker german",
    "wild adjust",
    "wild german adjust",
    "wild adjust German",
    "deal german-5",
    "deal german-0",
    "deal german",
    "deal german 3",
    "deal trick-steal",
    "deal trick",
    "Roll",
    "roll roll",
    "shanghai!",
    "reroll 3",
]
MALFORMED: dict[str, list[str]] = {
    # the other game's notation is bad syntax too
    "shangrila-3p": [*MALFORMED_BOTH, *CANONICAL["shanghaien"]],
    "shangrila-4p": [*MALFORMED_BOTH, *CANONICAL["shanghaien"]],
    "shanghaien": [*MALFORMED_BOTH, *CANONICAL["shangrila"]],
}


def family(game_id: str) -> str:
    return "shanghaien" if game_id == "shanghaien" else "shangrila"


# ------------------------------------------------------------------------------------------ tables


def test_shangrila_table_sizes_and_canonical_forms() -> None:
    n = 13 * 7
    assert len(SA.PLACE) == len(SA.RECRUIT_ONE) == n
    assert sum(a is not None for row in SA.RECRUIT_TWO for a in row) == n * (n - 1) // 2
    assert len(SA.JOURNEY) == 13 * 12
    texts = [a.text for a in SHANGRILA_ACTIONS]
    assert len(set(texts)) == len(texts) and len({a.code for a in SHANGRILA_ACTIONS}) == len(texts)
    village, discipline = r"(?:1[0-2]|\d)", "(?:" + "|".join(DISCIPLINES) + ")"
    space = rf"{village} {discipline}"
    grammar = re.compile(rf"place {space}|recruit {space}(?: \+ {space})?|journey {village}>{village}|pass")
    for text in texts:
        assert grammar.fullmatch(text), text
    for action in SHANGRILA_ACTIONS:
        if action.kind is SA.Kind.RECRUIT and len(action.spaces) == 2:
            assert action.spaces[0] < action.spaces[1]  # by village, then discipline order
        if action.kind is SA.Kind.JOURNEY:
            assert action.text == f"journey {action.source}>{action.dest}" and action.source != action.dest


def test_shanghaien_table_sizes_and_canonical_forms() -> None:
    texts = list(HA.ALL)
    # 35 deals (8 nations x 4 values + 3 tricks), 21 dice, roll, shanghai, 18 place, 24 wild, 10 adjust, 3 both, reroll
    assert len(texts) == 35 + 21 + 2 + 18 + 24 + 10 + 3 + 1
    assert len({a.code for a in SHANGHAIEN_ACTIONS}) == len(texts)
    for text, action in HA.ALL.items():
        assert action.text == text
        words = text.split(" ")
        if words[0] == "dice":
            assert 1 <= int(words[1]) <= int(words[2]) <= 6
        if words[0] == "adjust":
            a, b = (int(x) for x in words[1].split(">"))
            assert abs(a - b) == 1 and min(a, b) >= 1 and max(a, b) <= 6


def test_every_shangrila_action_parses_to_itself() -> None:
    games3, games4 = games.get("shangrila-3p"), games.get("shangrila-4p")
    for action in SHANGRILA_ACTIONS:
        text = str(action)
        assert text == action.text
        assert SA.parse(text) is action, text
        assert games3.action_from_text(text) is action and games4.action_from_text(text) is action, text


def test_every_shanghaien_action_parses_to_itself() -> None:
    game = games.get("shanghaien")
    for action in SHANGHAIEN_ACTIONS:
        text = str(action)
        assert text == action.text
        assert HA.parse(text) is action and game.action_from_text(text) is action, text


# ------------------------------------------------------------------------------------------ examples


@pytest.mark.parametrize(
    ("game_id", "text"),
    [(g, t) for g in ("shangrila-3p", "shangrila-4p") for t in CANONICAL["shangrila"]]
    + [("shanghaien", t) for t in CANONICAL["shanghaien"]],
)
def test_rulings_examples_parse_and_print_identically(game_id: str, text: str) -> None:
    action = games.get(game_id).action_from_text(text)
    assert str(action) == text
    assert repr(action).endswith(f"({text!r})")


def test_examples_are_legal_or_illegal_but_never_bad_syntax_in_a_state() -> None:
    s = games.get("shangrila-4p").new_state()
    assert str(s.parse_action("place 3 priest")) == "place 3 priest"
    for text in ("recruit 0 rainmaker + 4 healer", "journey 4>7", "pass"):
        with pytest.raises(IllegalActionError):
            s.parse_action(text)
    h = games.get("shanghaien").new_state()
    assert str(h.parse_action("deal german-3")) == "deal german-3"
    for text in ("dice 2 5", "place 4 fwd", "wild both chinese", "adjust 3>4", "both rev", "reroll", "roll"):
        with pytest.raises(IllegalActionError):
            h.parse_action(text)


# ------------------------------------------------------------------------------------------ bad syntax


@pytest.mark.parametrize("game_id", ["shangrila-3p", "shangrila-4p", "shanghaien"])
def test_malformed_text_is_a_syntax_error(game_id: str) -> None:
    game = games.get(game_id)
    state = game.new_state()
    for text in MALFORMED[game_id]:
        with pytest.raises(ActionSyntaxError) as info:
            game.action_from_text(text)
        assert str(info.value), f"{text!r}: an empty reason"
        with pytest.raises(ActionSyntaxError):
            state.parse_action(text)


def test_syntax_and_illegal_errors_are_distinct_value_errors() -> None:
    assert issubclass(ActionSyntaxError, ValueError) and issubclass(IllegalActionError, ValueError)
    assert not issubclass(ActionSyntaxError, IllegalActionError)
    assert not issubclass(IllegalActionError, ActionSyntaxError)


def test_wrong_order_pair_error_names_the_canonical_form() -> None:
    with pytest.raises(ActionSyntaxError, match=re.escape("recruit 0 rainmaker + 4 healer")):
        SA.parse("recruit 4 healer + 0 rainmaker")


# ------------------------------------------------------------------------------------------ pickling


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_actions_pickle_and_copy_to_themselves(protocol: int) -> None:
    restored = pickle.loads(pickle.dumps(ALL_ACTIONS, protocol=protocol))
    assert len(restored) == len(ALL_ACTIONS)
    assert all(r is a for r, a in zip(restored, ALL_ACTIONS, strict=True))
    for action in ALL_ACTIONS[:: max(1, len(ALL_ACTIONS) // 200)]:
        assert pickle.loads(pickle.dumps(action, protocol=protocol)) is action
        assert copy.copy(action) is action and copy.deepcopy(action) is action
