#!/usr/bin/env python3
"""Set-up and the two everyday commands, for a fresh clone with only Python 3.11 and pip.

    python3 dev.py demo   # the main job: a local arena (Redis, gateway, workers) where reference bots play
    python3 dev.py test   # lint, type checks and the test suite

It creates ``.venv`` on first use (and again whenever pyproject.toml changes), installs the project
there with its server, test and dev extras (the demo runs the services; the tests need them all), then
runs the command inside it. Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".installed-from"


def run(*cmd: str | Path) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=ROOT)


def ensure_venv() -> None:
    """Create .venv and install the project unless it is already installed from this pyproject.toml."""
    if sys.version_info < (3, 11):
        sys.exit(f"Python 3.11 or newer is needed, this is {sys.version.split()[0]}")
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.is_file() and STAMP.read_text() == digest:
        return
    if not (BIN / "python").exists():
        print(f"creating {VENV}", flush=True)
        venv.create(VENV, with_pip=True)
    pip: list[str | Path] = [BIN / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    if run(*pip, "-e", ".[server,test,dev]") != 0:
        sys.exit("installing the project into .venv failed (see pip's output above)")
    STAMP.write_text(digest)


def test(args: list[str]) -> int:
    py = BIN / "python"
    checks: list[list[str | Path]] = [
        [py, "-m", "ruff", "check", "."],
        [py, "-m", "ruff", "format", "--check", "."],
        [py, "-m", "mypy"],
        [py, "-m", "pytest", *args],
    ]
    for cmd in checks:
        code = run(*cmd)
        if code == 5:
            print("pytest collected no test: that is a failure here", file=sys.stderr)
            return 1
        if code != 0:
            return code
    return 0


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("demo", "test", "arena", "setup"):
        print(__doc__)
        print("also: python3 dev.py arena ARGS...  (the arena CLI inside .venv); python3 dev.py setup")
        return 2
    command, args = sys.argv[1], sys.argv[2:]
    ensure_venv()
    if command == "setup":
        return 0
    if command == "test":
        return test(args)
    if command == "demo":
        # A whole local arena: redis-server (data in arena-data/), the gateway, two referee worker
        # processes, the reference bots connected through their sessions, a batch of matches.
        # --html: a replay page of each game's last match, its path printed (arena transcript html).
        return run(BIN / "arena", "local", "--data", "arena-data", "--html", *args)
    return run(BIN / "arena", *args)


if __name__ == "__main__":
    sys.exit(main())
