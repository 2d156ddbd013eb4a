"""Finds and loads the arena's game data (seeds/) once, for the engines.

An installed wheel carries seeds/ as ``referee/_seeds``; a source checkout reads the repository's
``seeds/`` folder. ``ARENA_SEEDS_DIR`` overrides both.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any


def seeds_dir() -> Path:
    override = os.environ.get("ARENA_SEEDS_DIR")
    if override:
        return Path(override)
    here = Path(__file__).resolve()
    for candidate in (here.parents[1] / "_seeds", here.parents[2] / "seeds"):
        if (candidate / "board.json").is_file():
            return candidate
    raise FileNotFoundError("the arena's game data (seeds/board.json) was not found; set ARENA_SEEDS_DIR")


@cache
def load(name: str) -> Any:
    """The parsed JSON of ``seeds/<name>``."""
    with open(seeds_dir() / name, encoding="utf-8") as f:
        return json.load(f)
