"""A bot author's install (``pip install shangri-arena``, no extras) brings what a bot needs and nothing of
the services': no Redis client, no Prometheus client, no matplotlib, no uvloop. Its commands work; a
service command says in one line that it needs the ``server`` extra (exit 2), not a traceback.

Two ways: the real thing (``test_the_wheel_installs_lean``, slow: builds the wheel, installs it into a fresh
venv from the package index, runs the commands there), and quick checks in this venv with the server
modules' imports blocked in every process (``test_lean_modules_import_no_server_module``,
``test_lean_commands_without_server_modules``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import venv
from functools import partial
from pathlib import Path

import pytest

from arena.cli.common import SERVER_MODULES, needs_server_extra
from tests.helpers import arena, in_ci

ROOT = Path(__file__).resolve().parents[1]

TINY_BOT = """
from sdk import Bot, Turn


class First(Bot):
    name, version = "first", "1.0"

    def act(self, turn: Turn):
        return turn.legal_actions[0]
"""

BLOCKER = f'''
"""Test-only: the server extra's modules are not there (tests/test_lean_install.py)."""
import sys

_BLOCKED = {sorted(SERVER_MODULES)!r}


class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)", name=name)
        return None


sys.meta_path.insert(0, _Missing())
'''

GATEWAY_LINE = "arena: error: " + needs_server_extra("arena gateway")

# pip's words when the package index cannot be reached: a developer's offline machine skips, CI fails.
NO_INDEX = re.compile(r"NewConnectionError|Temporary failure in name resolution|Network is unreachable|"
                      r"Could not fetch URL|No matching distribution found for (hatchling|grpcio)")  # fmt: skip


def _module_name(requirement: str) -> str:
    """A requirement's distribution as its top-level module (``prometheus-client>=0.20`` -> prometheus_client)."""
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("-", "_")


def test_server_modules_are_the_server_extra() -> None:
    """``SERVER_MODULES`` (what the CLI recognises as the missing extra) is the ``server`` extra of
    pyproject.toml, and none of them is a base dependency."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    server = {_module_name(r) for r in project["optional-dependencies"]["server"]}
    base = {_module_name(r) for r in project["dependencies"]}
    assert server == SERVER_MODULES
    assert not base & SERVER_MODULES, f"base dependencies a bot does not need: {sorted(base & SERVER_MODULES)}"


def test_the_server_extra_hint_is_a_command_that_works() -> None:
    """The package is not on PyPI: ``pip install 'shangri-arena[server]'`` fails; from a clone (the only
    way to get it) the extra is ``pip install '.[server]'``."""
    line = needs_server_extra("arena gateway")
    assert "pip install '.[server]'" in line and "shangri-arena" not in line


def _check_play(out: subprocess.CompletedProcess[str]) -> None:
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)  # stdout holds the JSON and nothing else
    assert summary["games"] == 2 and summary["aborted"] == 0, summary
    assert summary["wins"] + summary["draws"] + summary["losses"] == 2, summary
    assert summary["problems"] == [], summary


def _check_gateway(out: subprocess.CompletedProcess[str]) -> None:
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == GATEWAY_LINE, out.stderr
    assert out.stdout == ""


LEAN_MODULES = ("grpc", "google.protobuf", "grpc_health", "grpc_reflection", "structlog", "rich", "sdk", "arena",
                "referee")  # fmt: skip
PLAY = ["play", "tiny.py:First", "--vs", "random", "--game", "shanghaien", "--games", "2", "--json"]

CHECK = ["bot", "check", "tiny.py:First", "--game", "shanghaien", "--games", "1", "--exit-s", "10", "--json"]


def _check_bot_check(out: subprocess.CompletedProcess[str]) -> None:
    assert out.returncode == 0, out.stderr
    checks = json.loads(out.stdout)
    assert checks and all(c["passed"] for c in checks), checks


LEAN_IMPORTS = (
    "arena.cli.main", "arena.cli.common", "arena.ladder.client", "arena.ladder.report", "arena.service.client",
    "arena.local.play", "arena.local.tournament", "arena.replay.frames", "arena.replay.page", "referee.server", "sdk",
    "sdk.arena_client", "sdk.bots",
)  # fmt: skip
"""What the SDK and the lean commands (play, tournament, bot run, transcripts, the gateway's clients) import."""


def _blocking(tmp_path: Path) -> dict[str, str]:
    """An environment where importing a server module fails, in every Python process started with it."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT)])}
    env.pop("ARENA_ADMIN_TOKEN", None)
    blocked = _run([sys.executable, "-c", "import redis"], env=env)
    assert blocked.returncode != 0 and "blocked by the test" in blocked.stderr, blocked.stderr  # the blocker works
    return env


def test_lean_modules_import_no_server_module(tmp_path: Path) -> None:
    """No module a bot author's install runs imports a server module when it is imported (only inside the
    functions of the services)."""
    out = _run([sys.executable, "-c", "; ".join(f"import {m}" for m in LEAN_IMPORTS)], env=_blocking(tmp_path))
    assert out.returncode == 0, out.stderr


def test_lean_commands_without_server_modules(tmp_path: Path) -> None:
    """This venv's code with the server modules' imports failing, in the command and in every process it
    starts: ``arena play`` plays; ``arena gateway``, ``arena ladder rebuild`` and ``arena ladder history --plot``
    say they need the extra."""
    env = _blocking(tmp_path)
    (tmp_path / "tiny.py").write_text(TINY_BOT)

    lean = partial(arena, env=env, cwd=tmp_path, timeout=900)

    _check_play(lean(*PLAY))
    _check_gateway(lean("gateway"))
    rebuild = lean("ladder", "rebuild", "--game", "shanghaien")
    assert (rebuild.returncode, rebuild.stderr.strip()) == (
        2, "arena: error: " + needs_server_extra("arena ladder rebuild")
    ), rebuild.stderr  # fmt: skip
    plot = lean("ladder", "history", "mybot", "--plot", "chart.png")  # before it asks the gateway
    assert (plot.returncode, plot.stdout) == (2, ""), plot.stderr
    assert plot.stderr.startswith("arena: error: " + needs_server_extra("arena ladder history --plot")), plot.stderr
    assert len(plot.stderr.strip().splitlines()) == 1, plot.stderr
    _check_bot_check(lean(*CHECK))


def _run(
    cmd: list[str | Path], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], check=False, capture_output=True, text=True, timeout=900, env=env,
                          cwd=cwd)  # fmt: skip


def _pip_ok(out: subprocess.CompletedProcess[str], what: str) -> None:
    if out.returncode == 0:
        return
    message = f"{what} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    if NO_INDEX.search(out.stdout + out.stderr) and not in_ci():
        pytest.skip(f"{what}: the package index is not reachable")
    pytest.fail(message, pytrace=False)


@pytest.mark.slow
def test_the_wheel_installs_lean(tmp_path: Path) -> None:
    """Build the wheel, install it without extras into a fresh venv (dependencies from the package index),
    then in that venv: no server module is importable, ``arena play`` against random completes with
    valid JSON, ``arena gateway`` is the one line."""
    wheels = tmp_path / "wheels"
    _pip_ok(_run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
                  "--wheel-dir", wheels, ROOT]), "building the wheel")  # fmt: skip
    (wheel,) = wheels.glob("shangri_arena-*.whl")

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / ("Scripts" if os.name == "nt" else "bin") / "python"
    # Nothing of this checkout or of the test's venv may leak in: the venv sees only what it installed.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.pop("ARENA_ADMIN_TOKEN", None)
    _pip_ok(_run([py, "-m", "pip", "install", "--disable-pip-version-check", "-q", wheel], env=env),
            "installing the wheel")  # fmt: skip

    modules = [*sorted(SERVER_MODULES), *LEAN_MODULES]
    probe = f"import importlib.util as u, json; print(json.dumps([u.find_spec(m) is not None for m in {modules!r}]))"
    found = _run([py, "-c", probe], env=env, cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    present = dict(zip(modules, json.loads(found.stdout), strict=True))
    assert not [m for m in SERVER_MODULES if present[m]], f"the lean install has server modules: {present}"
    assert all(present[m] for m in LEAN_MODULES), present

    arena = py.parent / "arena"  # the console script the wheel installed
    (tmp_path / "tiny.py").write_text(TINY_BOT)
    _check_play(_run([arena, *PLAY], env=env, cwd=tmp_path))
    _check_gateway(_run([arena, "gateway"], env=env, cwd=tmp_path))
    _check_bot_check(_run([arena, *CHECK], env=env, cwd=tmp_path))
