"""How big a replay page is and how fast it opens: build the HTML replay of each transcript given, open it
in headless Chromium (Debian's ``chromium`` and ``chromedriver``, through selenium) and time it.

    .venv/bin/python benchmarks/replay_bench.py TRANSCRIPT.jsonl [...] [--loads 5]

Per transcript: plies, the page's size (and its embedded data's), the time to build it in Python, and the
median over ``--loads`` fresh loads of the time from navigation start to the page's ready state (its script
has decoded every frame and drawn the first one: ``body[data-ready=true]``, ``window.__replayReadyMs``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from arena.replay.frames import replay_data
from arena.replay.page import page_html, script_json
from referee import transcript as transcripts

FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
         "--window-size=1200,800")  # fmt: skip


def browser(profile: str) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("transcripts", nargs="+", type=Path)
    parser.add_argument("--loads", type=int, default=5, help="page loads per transcript (default 5)")
    args = parser.parse_args()
    from selenium.webdriver.support.ui import WebDriverWait

    profile = tempfile.mkdtemp(prefix="arena-bench-chromium-")
    out = Path(tempfile.mkdtemp(prefix="arena-bench-replays-"))
    driver = browser(profile)
    rows = []
    try:
        for source in args.transcripts:
            lines = transcripts.file_lines(source)
            started = time.perf_counter()
            data = replay_data(lines)
            page = page_html(data)
            build_ms = (time.perf_counter() - started) * 1000
            path = out / f"{source.stem}.html"
            path.write_text(page, encoding="utf-8")
            ready, loaded = [], []
            for _ in range(args.loads):
                driver.get("about:blank")
                driver.get(path.resolve().as_uri())
                WebDriverWait(driver, 30).until(
                    lambda d: d.execute_script("return document.body.dataset.ready") == "true"
                )
                timing = driver.execute_script(
                    "return [window.__replayReadyMs, performance.getEntriesByType('navigation')[0].loadEventEnd]"
                )
                ready.append(float(timing[0]))
                loaded.append(float(timing[1]))
            rows.append({
                "transcript": str(source), "plies": len(data["moves"]), "page_bytes": len(page.encode()),
                "data_bytes": len(script_json(data).encode()), "build_ms": round(build_ms, 1),
                "ready_ms_median": round(statistics.median(ready), 1),
                "load_event_ms_median": round(statistics.median(loaded), 1),
            })  # fmt: skip
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
