"""The first bot a newcomer copies (README.md, "Write a bot and play it locally"; docs/examples/mybot.py):
the README shows the file as it is, and that bot beats a random player."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "mybot.py"


def test_the_readme_shows_the_example_file_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (snippet,) = re.findall(r"```python\n# mybot\.py\n(.*?)```", readme, flags=re.S)
    assert "class MyBot(Bot):" in snippet
    assert snippet in EXAMPLE.read_text(encoding="utf-8")


def test_the_example_bot_beats_random_at_shanghaien(tmp_path: Path) -> None:
    """40 games take about 6 s. Measured: about 31 wins, 1 draw, 8 losses; random against random wins
    half; the threshold is 3 standard deviations below the measured rate, so a chance failure is rare
    (the bot's ties and the random bot are not seeded)."""
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "play", f"{EXAMPLE}:MyBot", "--game", "shanghaien", "--vs", "random",
         "--games", "40", "--seed", "example", "--out", str(tmp_path), "--json"],
        check=False, capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["games"] == 40 and summary["aborted"] == 0
    assert summary["wins"] >= 24, summary
