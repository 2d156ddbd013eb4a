"""The website as a person uses it, in Debian's headless Chromium, over a real arena: ``LocalArena``
(Redis, the gateway, a referee worker, the site in-process as ``arena local`` runs it), bots playing
through their sessions, the ladder applying the results. Home -> a game's leaderboard -> a bot's page ->
one of its matches, replayed to its end -> a running match that moves while the test watches; then the
same pages at phone width, none wider than the screen. Screenshots of each in docs/img/web-*.png."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.local.arena import LocalArena
from arena.local.ladder_runner import LadderRunner
from arena.service.client import ArenaClient
from referee.wire.contract import from_proto_enum
from referee.wire.values import MatchStatus
from sdk.arena_client import ArenaBotRunner
from tests.helpers import SlowRandom, finished, headless_chromium, register

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "docs" / "img"


class World:
    """A running arena, in a thread of its own, with two finished rated matches and one slow one running."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.url = ""
        self.finished: list[str] = []
        self.live = ""
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as e:
            self.error = e
            self.ready.set()

    async def _main(self) -> None:
        async with LocalArena(self.folder, workers=1, web="127.0.0.1:0") as arena:
            self.url = arena.web_url
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta", "slowpoke", "dawdler")
            fast = {"alpha": SlowRandom(0.0, 1), "beta": SlowRandom(0.0, 2)}
            slow = {"slowpoke": SlowRandom(0.4, 3), "dawdler": SlowRandom(0.4, 4)}
            runners = [ArenaBotRunner(bot, arena.gateway, tokens[n]) for n, bot in (fast | slow).items()]
            tasks = [asyncio.create_task(r.run()) for r in runners]
            ladder = LadderRunner(arena.redis_url, schedule=False)
            threads = ladder.start()
            try:
                for i in range(2):
                    seats = ["alpha", "beta"] if i % 2 == 0 else ["beta", "alpha"]
                    mid, _ = await asyncio.to_thread(admin.request_match, "shanghaien", seats, rated=True)
                    self.finished.append(mid)
                await finished(admin, self.finished, 120)
                while sum(s.row.games for s in ladder.ladder.leaderboard("shanghaien")) < 4:
                    await asyncio.sleep(0.1)
                self.live, _ = await asyncio.to_thread(admin.request_match, "shanghaien", ["slowpoke", "dawdler"])
                while from_proto_enum(MatchStatus, (await asyncio.to_thread(admin.describe, self.live)).state) is not (
                    MatchStatus.RUNNING
                ):
                    await asyncio.sleep(0.1)
                self.ready.set()
                while not self.stop.is_set():
                    await asyncio.sleep(0.1)
            finally:
                ladder.stop(threads)
                for r in runners:
                    r.stop()
                await asyncio.gather(*tasks, return_exceptions=True)
                admin.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("journey"))
    thread = threading.Thread(target=w.run, daemon=True)
    thread.start()
    assert w.ready.wait(180), "the arena did not get its matches going"
    if w.error is not None:
        raise w.error
    yield w
    w.stop.set()
    thread.join(60)


def wait(driver: Any, condition: Any, timeout: float = 15) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def shot(driver: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / name))


def ply(driver: Any) -> tuple[int, int]:
    shown: Any = driver.execute_script(
        "const p = document.getElementById('ply-shown');"
        "return p ? [Number(p.dataset.ply), Number(p.dataset.plies)] : null;"
    )
    return (int(shown[0]), int(shown[1])) if shown else (-1, -1)


def errors_in(driver: Any) -> list[Any]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]]


def test_a_visitor_goes_from_home_to_a_replay_and_watches_a_live_match(world: World) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with headless_chromium(1200, 900) as driver:
        driver.get(world.url + "/")
        assert "bots online" in driver.page_source
        shot(driver, "web-home.png")
        driver.find_element(By.CSS_SELECTOR, "header nav a[href='/ladder/shanghaien']").click()
        wait(driver, lambda d: "/ladder/shanghaien" in d.current_url)
        table = driver.find_element(By.TAG_NAME, "table").text
        assert "alpha" in table and "beta" in table, table
        shot(driver, "web-leaderboard.png")
        driver.find_element(By.LINK_TEXT, "alpha").click()
        wait(driver, lambda d: d.current_url.endswith("/bots/alpha"))
        assert world.finished[0] in driver.page_source or world.finished[1] in driver.page_source
        shot(driver, "web-bot.png")
        link = driver.find_element(By.CSS_SELECTOR, f"a[href='/matches/{world.finished[0]}']")
        link.click()
        wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "true")
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.END)
        wait(driver, lambda d: ply(d)[0] == ply(d)[1] > 0)
        assert driver.find_element(By.ID, "result").get_attribute("data-end-reason") == "completed"
        shot(driver, "web-replay.png")
        driver.get(f"{world.url}/matches/{world.live}")
        wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "true")
        first = ply(driver)[1]
        deadline = time.monotonic() + 20
        while ply(driver)[1] < first + 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ply(driver)[1] >= first + 3, (first, ply(driver))  # the moves arrive while we watch
        shot(driver, "web-live.png")
        assert errors_in(driver) == []


def test_every_page_fits_a_phone(world: World) -> None:
    with headless_chromium(390, 844) as driver:
        for path, name in (("/", "home"), ("/ladder/shanghaien", "leaderboard"), ("/bots/alpha", "bot"),
                           (f"/matches/{world.finished[0]}", "replay"), ("/matches", "matches")):  # fmt: skip
            driver.get(world.url + path)
            wide = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
            assert wide <= 1, (path, wide)  # no sideways scrolling of the page (tables scroll in their box)
            shot(driver, f"web-phone-{name}.png")
