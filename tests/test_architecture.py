"""Dependencies point one way, checked on every import statement (including those inside functions):

    arena.cli -> arena.local -> arena.ladder, arena.service (side by side) -> arena's ground floor
    (``arena.results``, ``arena.errors``, ``arena.keys``, ...) -> referee (runner, server) and sdk
    referee runner/server -> referee.wire -> referee.games (the engines) <- sdk

- the engines import nothing of the project, nor gRPC, Redis, clocks or global randomness;
- the wire contract imports only the engines;
- the referee imports nothing of the arena or the SDK;
- the SDK imports nothing of the arena, and of the referee only the engines and the wire contract;
- the match service imports nothing of the ladder, the website, the local arena or the CLI;
- the website (``arena.web``) reads through the service's and the ladder's stores and imports nothing of
  the local arena or the CLI (the local arena starts it); neither the service nor the ladder imports it;
- events (``arena.events``) import the service and the ladder, nothing of the local arena, the website or
  the CLI, and neither the service nor the ladder imports them;
- the ladder imports nothing of the match service (a stored result's layout is ``arena.results``'s, and
  the process that wires the ladder to the queue is ``arena.local.ladder_runner``), the local arena or the
  CLI;
- the ground floor of ``arena`` (its modules outside the packages) imports
  nothing of the service, the ladder, the local arena or the CLI, so that both sides can share it;
- the metrics module is a leaf: of the arena it imports only the ground-floor modules beside it (the
  Redis client factory, keys), of the referee only the wire's values; the collectors that read Redis
  live beside what they read, in the service and the ladder runner;
- the replay finds games only through their registration (``referee.games.GameEntry.replay``): outside
  the drawings' folder (``arena/replay/games/``) it names no game, in Python or in the page's files;
- nothing imports the CLI but its entry point (``arena.cli.main``), and the command modules share
  only ``arena.cli.common``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import (use absolute imports)"
            assert node.module is not None
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)  # ``from arena import keys``
    return names


def files(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "_generated" not in p.parts)


def ids(p: Path) -> str:
    return str(p.relative_to(ROOT))


def top(name: str) -> str:
    return name.split(".", maxsplit=1)[0]


def within(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def project(path: Path) -> set[str]:
    """The project modules (and names) a file imports."""
    return {m for m in imported_modules(path) if top(m) in {"arena", "referee", "sdk"}}


ENGINE_FORBIDDEN = {"arena", "sdk", "grpc", "redis", "structlog", "random", "time", "datetime", "asyncio",
                    "threading", "socket", "secrets", "uuid"}  # fmt: skip


@pytest.mark.parametrize("path", files("referee/games"), ids=ids)
def test_engines_are_pure(path: Path) -> None:
    modules = imported_modules(path)
    bad = {m for m in modules if top(m) in ENGINE_FORBIDDEN}
    bad |= {m for m in modules if top(m) == "referee" and not within(m, "referee.games")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("referee/wire"), ids=ids)
def test_the_wire_contract_uses_only_the_engines(path: Path) -> None:
    bad = {m for m in project(path) if m != "referee" and not within(m, "referee.games", "referee.wire")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("referee"), ids=ids)
def test_referee_knows_nothing_of_the_arena_the_sdk_or_redis(path: Path) -> None:
    assert not {m for m in imported_modules(path) if top(m) in {"arena", "sdk", "redis"}}


@pytest.mark.parametrize("path", files("sdk"), ids=ids)
def test_sdk_uses_only_the_engines_and_the_wire_contract(path: Path) -> None:
    modules = imported_modules(path)
    bad = {m for m in modules if top(m) in {"arena", "redis"}}
    referee = {m for m in modules if top(m) == "referee" and m != "referee"}
    bad |= {m for m in referee if not within(m, "referee.games", "referee.wire")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("arena/service"), ids=ids)
def test_the_match_service_knows_nothing_of_the_ladder_or_the_cli(path: Path) -> None:
    bad = {m for m in project(path) if within(m, "arena.ladder", "arena.local", "arena.cli", "arena.web")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("arena/web"), ids=ids)
def test_the_website_reads_through_the_stores_and_knows_nothing_of_the_local_arena_or_the_cli(path: Path) -> None:
    """The site sits beside the local arena: it reads through the service's and the ladder's stores, and
    neither the service nor the ladder (nor the local arena that starts it) is imported by it."""
    bad = {m for m in project(path) if within(m, "arena.local", "arena.cli")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("arena/ladder"), ids=ids)
def test_the_ladder_knows_nothing_of_the_match_service(path: Path) -> None:
    bad = {m for m in project(path) if within(m, "arena.service", "arena.local", "arena.cli", "arena.web")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("arena/events"), ids=ids)
def test_events_sit_on_the_service_and_the_ladder_and_know_nothing_above(path: Path) -> None:
    """Events queue matches through the service and read the ladder; the ladder runner (local arena) asks
    their scheduler for its share, the gateway hosts their service through its ``extra`` hook."""
    bad = {m for m in project(path) if within(m, "arena.local", "arena.cli", "arena.web")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("arena/service") + files("arena/ladder"), ids=ids)
def test_neither_the_service_nor_the_ladder_imports_events(path: Path) -> None:
    assert not {m for m in project(path) if within(m, "arena.events")}, f"{path.name} imports arena.events"


GROUND_FLOOR = sorted((ROOT / "arena").glob("*.py"))


@pytest.mark.parametrize("path", GROUND_FLOOR, ids=ids)
def test_the_ground_floor_shared_by_the_service_and_the_ladder_imports_neither(path: Path) -> None:
    bad = {m for m in project(path) if within(m, "arena.service", "arena.ladder", "arena.local", "arena.cli")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


METRICS_MAY_IMPORT = ("arena.keys", "arena.redis_client", "referee.wire.values")


def test_metrics_is_a_leaf() -> None:
    path = ROOT / "arena" / "metrics.py"
    bad = {m for m in project(path) if m not in {"arena", "referee"} and not within(m, *METRICS_MAY_IMPORT)}
    assert not bad, f"{path.name} imports {sorted(bad)}"


NOT_CLI = [
    p
    for p in files("arena") + files("referee") + files("sdk") + files("benchmarks")
    if "cli" not in p.relative_to(ROOT).parts
]


@pytest.mark.parametrize("path", NOT_CLI, ids=ids)
def test_nothing_imports_the_cli(path: Path) -> None:
    assert not {m for m in project(path) if within(m, "arena.cli")}, f"{path.name} imports the CLI"


@pytest.mark.parametrize("path", files("arena/cli"), ids=ids)
def test_cli_command_modules_share_only_common(path: Path) -> None:
    if path.name in ("main.py", "__main__.py"):
        return  # the entry point imports every command module
    used = {m for m in project(path) if within(m, "arena.cli")}
    assert used <= {"arena.cli.common"} | {f"arena.cli.common.{n}" for n in dir_common()}, (
        f"{path.name} imports {sorted(used)}"
    )


def dir_common() -> set[str]:
    tree = ast.parse((ROOT / "arena" / "cli" / "common.py").read_text(encoding="utf-8"))
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    names |= {t.id for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign)
              for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}  # fmt: skip
    return names


REPLAY = ROOT / "arena" / "replay"
DRAWINGS = REPLAY / "games"
"""Each registered game's replay drawing, one folder per game; the rest of ``arena/replay`` is the replay's core."""
REPLAY_CORE = [p for p in files("arena/replay") if DRAWINGS not in p.parents]
ENGINE_PACKAGES = sorted(p.name for p in (ROOT / "referee" / "games").iterdir() if (p / "__init__.py").is_file())


def game_names() -> set[str]:
    """Every registered game id and family, and every engine package: lower case, without hyphens."""
    from referee import games

    return {n.lower().replace("-", "") for n in (*games.GAME_IDS, *games.FAMILIES, *ENGINE_PACKAGES)}


def names_a_game(text: str) -> set[str]:
    """The game names in ``text`` (any case; "Shangri-La" counts)."""
    flat = text.lower().replace("-", "")
    return {n for n in game_names() if n in flat}


@pytest.mark.parametrize("path", REPLAY_CORE, ids=ids)
def test_the_replay_finds_games_only_through_their_registration(path: Path) -> None:
    """No branch on a game: the replay's core imports no engine package and no drawing, and no name, string or
    docstring in it names a game (a drawing is found from the game's ``GameEntry``: ``drawing_for``)."""
    bad = {m for m in project(path)
           if within(m, "arena.replay.games", *(f"referee.games.{p}" for p in ENGINE_PACKAGES))}  # fmt: skip
    assert not bad, f"{path.name} imports {sorted(bad)}"
    words: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.append(node.value)
        elif isinstance(node, ast.Name):
            words.append(node.id)
        elif isinstance(node, ast.Attribute):
            words.append(node.attr)
        elif isinstance(node, ast.alias):
            words.append(node.name)
    named = {n for w in words for n in names_a_game(w)}
    assert not named, f"{path.name} names {sorted(named)}"


@pytest.mark.parametrize("path", sorted((REPLAY / "assets").iterdir()), ids=ids)
def test_the_replay_page_names_no_game(path: Path) -> None:
    """The page's own script, style and markup draw every game through its drawing's hooks."""
    assert not names_a_game(path.read_text(encoding="utf-8")), path.name


def test_every_drawing_is_named_by_a_registration() -> None:
    """A drawing's folder is named by its game's registration: no drawing is found any other way."""
    from referee import games

    named = {e.replay.partition(":")[0] for e in games.FAMILIES.values() if e.replay}
    folders = {f"arena.replay.games.{p.name}" for p in DRAWINGS.iterdir() if (p / "__init__.py").is_file()}
    assert folders and folders <= named


def test_the_checks_see_every_layer() -> None:
    """A moved folder must not make these tests pass vacuously."""
    for package in ("referee/games", "referee/wire", "sdk", "arena/service", "arena/ladder", "arena/cli"):
        assert files(package), package
    assert ROOT / "arena" / "results.py" in GROUND_FLOOR
    assert "arena.cli.common" in imported_modules(ROOT / "arena" / "cli" / "bots.py")
    assert "referee.wire.values" in imported_modules(ROOT / "arena" / "metrics.py")
    assert {"frames.py", "page.py", "drawing.py"} <= {p.name for p in REPLAY_CORE}
    assert ENGINE_PACKAGES and names_a_game("The Bridges of Shangri-La") and names_a_game("shangrila-3p")
