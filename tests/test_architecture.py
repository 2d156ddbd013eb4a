"""Dependencies point one way: engines import nothing of the referee, SDK, arena, gRPC, Redis,
clocks or global randomness; the SDK never imports the arena; the referee never imports Redis."""

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
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def top(name: str) -> str:
    return name.split(".", maxsplit=1)[0]


ENGINE_FORBIDDEN = {"arena", "sdk", "grpc", "redis", "structlog", "random", "time", "datetime", "asyncio",
                    "threading", "socket", "secrets", "uuid"}  # fmt: skip


@pytest.mark.parametrize("path", files("referee/games"), ids=lambda p: str(p.relative_to(ROOT)))
def test_engines_are_pure(path: Path) -> None:
    modules = imported_modules(path)
    bad = {m for m in modules if top(m) in ENGINE_FORBIDDEN}
    bad |= {m for m in modules if m.startswith("referee.") and not m.startswith("referee.games")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("sdk"), ids=lambda p: str(p.relative_to(ROOT)))
def test_sdk_does_not_use_the_control_plane(path: Path) -> None:
    assert not {m for m in imported_modules(path) if top(m) in {"arena", "redis"}}


@pytest.mark.parametrize("path", files("referee"), ids=lambda p: str(p.relative_to(ROOT)))
def test_referee_knows_nothing_of_redis_or_the_arena(path: Path) -> None:
    assert not {m for m in imported_modules(path) if top(m) in {"arena", "redis"}}
