"""gRPC's I/O engine option (referee/grpc_env.py): set before grpc is imported, in every entry point,
known to the pinned grpcio, and never overriding an operator's own GRPC_EXPERIMENTS."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from referee.grpc_env import LEGACY_IO_ENGINE

ROOT = Path(__file__).resolve().parent.parent

# Records GRPC_EXPERIMENTS at the moment something first imports grpc, then imports the module under test.
PROBE = """
import importlib.abc, os, sys
seen = []
class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "grpc" and not seen:
            seen.append(os.environ.get("GRPC_EXPERIMENTS"))
        return None
sys.meta_path.insert(0, Watch())
import importlib
importlib.import_module(sys.argv[1])
import grpc  # every entry point below uses gRPC sooner or later
print(repr(seen[0]))
"""


def probe(module: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
    return subprocess.run([sys.executable, "-c", PROBE, module], cwd=ROOT, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


@pytest.mark.parametrize(
    "module",
    ["arena.cli.main", "arena.service.worker", "arena.service.gateway", "referee.server", "sdk.client", "sdk"],
)
def test_every_entry_point_sets_the_option_before_grpc_is_imported(module: str) -> None:
    done = probe(module)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(LEGACY_IO_ENGINE)


def test_an_operators_own_setting_is_kept_even_an_empty_one() -> None:
    for value in ("", "-event_engine_client"):
        done = probe("arena.cli.main", {"GRPC_EXPERIMENTS": value})
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == repr(value)


def test_the_pinned_grpcio_knows_every_experiment_named() -> None:
    """An unknown name is logged ("Unknown experiment") by every process that starts gRPC: an upgrade
    that drops these experiments must fail here, not fill every log."""
    script = (
        "import asyncio, grpc\n"
        "from referee.host import Referee\n"
        "from referee.server import start_server\n"
        "async def main():\n"
        "    server, port = await start_server(Referee())\n"
        "    async with grpc.aio.insecure_channel(f'127.0.0.1:{port}') as ch:\n"
        "        await asyncio.wait_for(ch.channel_ready(), 10)\n"
        "    await server.stop(0)\n"
        "asyncio.run(main())\n"
    )
    base = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=base, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "experiment" not in done.stderr.lower(), done.stderr


def test_the_engines_import_no_grpc() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, referee.games; print('grpc' in sys.modules)"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


LAUNCH = """
import sys, time
from pathlib import Path
from arena.local.launch import command_launcher
out = Path(sys.argv[1])
launcher = command_launcher(sys.executable + " -c 'import json, os; print(json.dumps(dict(os.environ)))'", "env", out)
handle = launcher.start("127.0.0.1:1", "token", 1)
while handle.exit_code() is None:
    time.sleep(0.05)
print((out / "bot-1.out").read_text())
"""


@pytest.mark.parametrize("user", [None, "", "-event_engine_client", "my_experiment"])
def test_a_launched_command_gets_the_users_grpc_variables_not_the_projects(user: str | None, tmp_path: Path) -> None:
    """``arena play --cmd`` runs bots in any language: a C++ gRPC bot given this grpcio's experiment names
    logs "Unknown experiment" for each. It gets the environment the user started ``arena`` with."""
    import json

    base = {k: v for k, v in os.environ.items() if k not in ("GRPC_EXPERIMENTS", "GRPC_VERBOSITY")}
    env = base if user is None else {**base, "GRPC_EXPERIMENTS": user}
    done = subprocess.run([sys.executable, "-c", LAUNCH, str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    child = json.loads(done.stdout)
    assert child.get("GRPC_EXPERIMENTS") == user and "GRPC_VERBOSITY" not in child
    assert child["ARENA_SERVER"] == "127.0.0.1:1" and child["ARENA_BOT_TOKEN"] == "token"
