"""Every time a person is shown is UTC and labelled so: the ladder's page and rating chart (arena ladder show
--html, arena ladder history --plot) and the replay page's header, as the CLI's tables
(tests/test_cli_tables.py). Local time differs from UTC in these tests (TZ=Europe/Paris)."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.ladder.elo import Row
from arena.ladder.report import board_html, rating_chart_svg, utc_time
from arena.ladder.values import HistoryPoint, Standing
from tests.helpers import require_tool

ROOT = Path(__file__).resolve().parents[1]
WHEN = 1_795_200_180.0  # 2026-11-20 18:43 UTC, 19:43 in Paris


@pytest.fixture(autouse=True)
def _paris(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Europe/Paris")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_the_ladder_page_and_its_chart_are_in_utc() -> None:
    assert utc_time(WHEN) == "2026-11-20 18:43"
    key = ("mybot", "1.0")
    history = {key: [HistoryPoint(WHEN, 1510.0, "m1"), HistoryPoint(WHEN + 3600, 1520.0, "m2")]}
    svg = rating_chart_svg(history, {key: "#000"}, {})
    assert "match end time (UTC)" in svg and ">18:43<" in svg and ">19:43<" in svg and "20:43" not in svg
    page = board_html("shanghaien", [Standing(1, Row("mybot", "1.0", 1520.0, 2, 2, 0, 0, WHEN + 3600))], history,
                      [], generated=WHEN)  # fmt: skip
    assert "made 2026-11-20 18:43 UTC" in page and "last played (UTC)" in page and "finished (UTC)" in page
    assert "2026-11-20 19:43" in page and "20:43" not in page  # the last match, 19:43 UTC, not Paris's 20:43


def test_the_replay_header_shows_the_start_in_utc_whatever_offset_it_was_written_with() -> None:
    node = require_tool("node", "apt-get install nodejs")
    script = (ROOT / "arena" / "replay" / "assets" / "replay.js").read_text(encoding="utf-8")
    (when,) = re.findall(r"^  function when\(iso\) \{.*?^  \}$", script, flags=re.M | re.S)
    cases = ["2026-11-20T18:43:07.120+00:00", "2026-11-20T19:43:07+01:00", "2026-11-20T18:43:07Z", "", "soon"]
    code = when + f"\nconsole.log(JSON.stringify({cases!r}.map(when)));"
    done = subprocess.run([node, "-e", code], check=True, capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == '["2026-11-20 18:43 UTC","2026-11-20 18:43 UTC","2026-11-20 18:43 UTC","","soon"]'
