"""HTML replays (``arena.replay``, ``arena transcript html``, ``--html``) and the ladder page, opened in a
real browser: headless Chromium driven by selenium.

The pages are read through stable hooks (``#ply-shown[data-ply]``, ``#scores[data-scores]``, ``#result``,
``#moves li[data-kind]``, the board's ``[data-bridge][data-broken]`` and ``#journey-arrow``); every page
must load nothing but its own file and raise no script error. Without Chromium and chromedriver the browser
tests are skipped on a developer's machine and fail under CI (``CI`` set), which installs them
(``.ci/run``). ``ARENA_SCREENSHOTS=DIR`` also saves the screenshots there (docs/img/ holds the README's).
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterator
from itertools import combinations, pairwise
from pathlib import Path
from typing import Any

import pytest

from arena.cli.main import main
from arena.replay import replay_data, replay_html
from arena.replay.frames import LiveReplay, apply_patch, frames_of, patch
from arena.replay.games.shangrila.layout import VILLAGE_RADIUS, VILLAGE_XY
from arena.replay.page import asset
from referee import games
from referee import transcript as transcripts
from referee.games.shangrila.board import BRIDGES
from sdk.bots import make_bot
from tests import dicerace
from tests.helpers import headless_chromium

DATA = Path(__file__).parent / "data" / "transcripts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
SIZE = (1200, 800)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


# ------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium through chromedriver, in a fresh profile, its viewport 1200 x 800, logging what
    each page loads."""
    with headless_chromium(*SIZE, network_log=True) as driver:
        yield driver


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One real match per game, played by ``arena play ... --html``: its transcript (the replay beside it)."""
    out = tmp_path_factory.mktemp("played")
    found = {}
    for game_id in ("shangrila-4p", "shanghaien"):
        folder = out / game_id
        argv = ["play", "random", "--vs", "random", "--game", game_id, "--games", "1", "--seed", f"replay-{game_id}",
                "--out", str(folder), "--html", "--move-ms", "5000"]  # fmt: skip
        assert main(argv) == 0
        found[game_id] = next(folder.glob("*.jsonl"))
    return found


# ------------------------------------------------------------------------------------- helpers


def open_page(driver: Any, path: Path) -> None:
    """Load ``path`` and wait for the page's script to have drawn it; the logs start empty for it."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get_log("performance")
    driver.get_log("browser")
    driver.get("about:blank")
    driver.get(path.resolve().as_uri())
    WebDriverWait(driver, 15).until(lambda d: d.execute_script("return document.body.dataset.ready") == "true")


def shown(driver: Any) -> dict[str, Any]:
    """What the page shows now: the ply (plies played), the running scores, the footer's result."""
    out: dict[str, Any] = driver.execute_script("""
        const ply = document.getElementById("ply-shown"), result = document.getElementById("result");
        return {ply: Number(ply.dataset.ply), plies: Number(ply.dataset.plies),
                scores: JSON.parse(document.getElementById("scores").dataset.scores),
                slider: Number(document.getElementById("slider").value),
                footer_scores: result.dataset.scores ? JSON.parse(result.dataset.scores) : null,
                footer_ranks: result.dataset.ranks ? JSON.parse(result.dataset.ranks) : null,
                end_reason: result.dataset.endReason, footer_plies: Number(result.dataset.plies),
                verified: document.getElementById("verified").dataset.verified};""")
    return out


def keys(driver: Any, *sequence: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*sequence).perform()


def assert_clean(driver: Any, page: Path) -> None:
    """The page loaded nothing but its own file, logged no error and caught none in window.onerror."""
    uri = page.resolve().as_uri()
    requests = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requests.append(message["params"]["request"]["url"])
    assert requests and all(url.split("#")[0] == uri for url in requests), requests
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    assert driver.execute_script("return window.__replayErrors || []") == []


def footer_of(path: Path) -> transcripts.Footer:
    last = transcripts.read(path)[-1]
    assert isinstance(last, transcripts.Footer)
    return last


# ------------------------------------------------------------------------- the data (no browser)


@pytest.mark.parametrize("name", ["shangrila-4p.jsonl", "scripted-shangrila-3p.jsonl", "scripted-shanghaien.jsonl"])
def test_every_frame_is_the_engines_view_of_the_replayed_position(name: str) -> None:
    lines = transcripts.file_lines(DATA / name)
    page = replay_html(lines)
    embedded = page.split('<script type="application/json" id="replay-data">', 1)[1].split("</script>", 1)[0]
    data = json.loads(embedded)  # what the page's script reads
    assert data == json.loads(json.dumps(replay_data(lines)))
    frames = frames_of(data)

    class Positions(transcripts.Visitor):
        def __init__(self) -> None:
            self.states: list[games.State] = []

        def header(self, header: transcripts.Header, state: games.State) -> None:
            self.states.append(state)

        def ply(self, ply: transcripts.Ply, action: Any, before: games.State, after: games.State) -> None:
            self.states.append(after)

    positions = Positions()
    transcripts.walk_lines(lines, positions)
    assert len(frames) == len(positions.states) == len(data["moves"]) + 1
    for frame, state in zip(frames, positions.states, strict=True):
        view = state.view(0).to_dict()
        del view["seat"]
        assert frame == {"scores": state.scores(), "view": view}
    footer = footer_of(DATA / name)
    assert frames[-1]["scores"] == list(footer.scores)
    assert data["verified"] == {"ok": True, "line": None, "message": None}
    assert [m["action"] for m in data["moves"]] == [e.action for e in transcripts.read(DATA / name)
                                                     if isinstance(e, transcripts.Ply)]  # fmt: skip


def test_patches_undo_each_other() -> None:
    a = {"x": [1, 2, {"y": True}], "z": {"k": 1, "gone": 2}, "s": "t"}
    b = {"x": [1, 3, {"y": 1}], "z": {"k": 1, "new": [4]}, "s": None}
    assert apply_patch(a, patch(a, b)) == b
    assert apply_patch(a, patch(a, b))["x"][2]["y"] is not True  # True and 1 differ in JSON
    assert apply_patch(a, patch(a, a)) == a and patch(a, a) == []
    assert apply_patch([1], patch([1], [1, 2])) == [1, 2]


def test_a_bad_line_ends_the_replay_there_and_the_page_says_why() -> None:
    lines = transcripts.file_lines(DATA / "shangrila-4p.jsonl")
    bad = json.loads(lines[40])
    bad["action"] = "pass"
    data = replay_data([*lines[:40], json.dumps(bad).encode(), *lines[41:]])
    assert len(data["moves"]) == 39 and "line 41" in data["replay_error"]
    assert data["verified"]["ok"] is False and data["verified"]["line"] == 41
    with pytest.raises(transcripts.TranscriptError):
        replay_data(lines[1:])  # no header: no page


def test_a_live_replay_outlives_callers_that_stop_waiting() -> None:
    """A live replay (the website's, one per followed match) whose caller gives up on a batch (the follower
    cancelled while it waited, as at the website's shutdown) goes on: the next batches are answered, up to
    the footer's update, verified. Before, the replay thread died answering the cancelled batch
    (InvalidStateError) and no later batch was ever answered."""
    lines = [line.decode() for line in transcripts.file_lines(DATA / "scripted-shanghaien.jsonl")]
    half = len(lines) // 2
    died: list[BaseException | None] = []
    old_hook, threading.excepthook = threading.excepthook, lambda a: died.append(a.exc_value)
    live = LiveReplay()
    try:
        assert len(live.feed(lines[:half]).result(timeout=30)) == half
        live.feed(lines[half : half + 3]).cancel()  # before the thread answers it (it is woken by the feed)
        rest = live.feed(lines[half + 3 :]).result(timeout=10)
        live.close()
        live._thread.join(timeout=30)
    finally:
        threading.excepthook = old_hook
    assert died == [] and not live._thread.is_alive()
    assert len(rest) == len(lines) - half - 3 and "footer" in rest[-1]
    assert rest[-1]["verified"] == {"ok": True, "line": None, "message": None}


def test_the_page_is_self_contained_and_escapes_what_bots_send() -> None:
    lines = transcripts.file_lines(DATA / "scripted-shangrila-3p.jsonl")
    header = json.loads(lines[0])
    header["seats"][0]["bot_name"] = "</script><script>window.__pwned=1</script>{{SCRIPT}}&amp;"
    page = replay_html([json.dumps(header).encode(), *lines[1:]])
    assert page.count("</script>") == 3  # the error collector, the data, the script: the name is escaped
    assert "window.__pwned=1</script>" not in page
    assert page.count("{{SCRIPT}}") == 2 and page.count(asset("replay.js")) == 1  # the name: in title and data
    for remote in ("https://", "src=", "@import", "url(http", '<link rel="stylesheet'):
        assert remote not in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # the SVG namespace is a name, not a fetch


def test_the_board_layout_crosses_no_bridge_and_covers_no_village() -> None:
    def distance_to_segment(p: tuple[int, int], a: tuple[int, int], b: tuple[int, int]) -> float:
        (px, py), (ax, ay), (bx, by) = p, a, b
        t = max(0.0, min(1.0, ((px - ax) * (bx - ax) + (py - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2)))
        return math.hypot(ax + t * (bx - ax) - px, ay + t * (by - ay) - py)

    def crosses(e: tuple[int, int], f: tuple[int, int]) -> bool:
        def side(a: tuple[int, int], b: tuple[int, int], c: tuple[int, int]) -> int:
            return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

        p1, p2, p3, p4 = (VILLAGE_XY[v] for v in (*e, *f))
        return side(p1, p2, p3) * side(p1, p2, p4) < 0 and side(p3, p4, p1) * side(p3, p4, p2) < 0

    assert len(VILLAGE_XY) == 13
    for v, w in combinations(range(13), 2):
        assert math.dist(VILLAGE_XY[v], VILLAGE_XY[w]) > 3 * VILLAGE_RADIUS, (v, w)
    for a, b in BRIDGES:
        for v in set(range(13)) - {a, b}:
            assert distance_to_segment(VILLAGE_XY[v], VILLAGE_XY[a], VILLAGE_XY[b]) > 1.5 * VILLAGE_RADIUS, (a, b, v)
    assert not [(e, f) for e, f in combinations(BRIDGES, 2) if not set(e) & set(f) and crosses(e, f)]


# ------------------------------------------------------------------------------ in the browser


@pytest.mark.parametrize("game_id", ["shangrila-4p", "shanghaien"])
def test_a_played_match_replays_to_its_footer_by_keyboard_slider_and_clicks(
    game_id: str, played: dict[str, Path], browser: Any
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait

    source = played[game_id]
    page = source.with_suffix(".html")  # written by arena play --html
    assert page.exists()
    footer = footer_of(source)
    open_page(browser, page)
    at = shown(browser)
    assert (at["ply"], at["plies"], at["slider"]) == (0, footer.plies, 0)
    assert at["footer_scores"] == list(footer.scores) and at["footer_ranks"] == list(footer.ranks)
    assert at["end_reason"] == "completed" and at["footer_plies"] == footer.plies and at["verified"] == "true"
    moves = browser.find_elements(By.CSS_SELECTOR, "#moves li[data-kind='ply'], #moves li[data-kind='chance']")
    assert len(moves) == footer.plies

    keys(browser, *[Keys.ARROW_RIGHT] * footer.plies)  # every ply, one key press each
    at = shown(browser)
    assert (at["ply"], at["slider"], at["scores"]) == (footer.plies, footer.plies, list(footer.scores))
    keys(browser, Keys.ARROW_RIGHT)  # the end stays the end
    assert shown(browser)["ply"] == footer.plies
    keys(browser, Keys.HOME)
    assert shown(browser)["ply"] == 0
    keys(browser, Keys.END)
    assert shown(browser)["scores"] == list(footer.scores)
    keys(browser, Keys.ARROW_LEFT, Keys.ARROW_LEFT)
    assert shown(browser)["ply"] == footer.plies - 2

    browser.find_element(By.ID, "btn-first").click()
    assert shown(browser)["ply"] == 0
    slider = browser.find_element(By.ID, "slider")
    ActionChains(browser).click_and_hold(slider).move_by_offset(slider.size["width"], 0).release().perform()
    at = shown(browser)
    assert (at["ply"], at["scores"]) == (footer.plies, list(footer.scores))
    ActionChains(browser).move_to_element(slider).click().perform()  # the middle of the slider
    assert 0 < shown(browser)["ply"] < footer.plies

    row = browser.find_element(By.CSS_SELECTOR, "#moves li[data-ply='3']")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    row.click()
    assert shown(browser)["ply"] == 4 and "current" in (row.get_attribute("class") or "")
    browser.find_element(By.ID, "btn-next").click()
    browser.find_element(By.ID, "btn-prev").click()
    browser.find_element(By.ID, "btn-prev").click()
    assert shown(browser)["ply"] == 3

    Select(browser.find_element(By.ID, "speed")).select_by_value("32")
    browser.find_element(By.ID, "btn-play").click()
    WebDriverWait(browser, 10).until(lambda d: shown(d)["ply"] > 5)
    browser.find_element(By.ID, "btn-play").click()  # pause
    paused = shown(browser)["ply"]
    assert browser.find_element(By.ID, "btn-play").get_attribute("data-playing") == "false"
    browser.find_element(By.ID, "btn-last").click()
    assert shown(browser)["ply"] == footer.plies and paused <= footer.plies
    assert_clean(browser, page)


def test_a_game_registered_outside_the_arena_is_drawn_by_its_own_script(tmp_path: Path, browser: Any) -> None:
    """The toy game (``tests/dicerace.py``) names its drawing in its registration: the page runs that script's
    hooks (title, unit, board) and the page's own script draws the rest, with no error."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with dicerace.registered():
        lines = dicerace.transcript([make_bot("greedy", seed=1), make_bot("random", seed=2)], "race:browser")
        source = tmp_path / "race.jsonl"
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        page = tmp_path / "race.html"
        assert main(["transcript", "html", str(source), "-o", str(page)]) == 0
    footer = footer_of(source)
    open_page(browser, page)
    assert browser.find_element(By.ID, "game-title").text == "Dice race"
    keys(browser, Keys.END)
    at = shown(browser)
    assert (at["ply"], at["scores"], at["verified"]) == (footer.plies, list(footer.scores), "true")
    lanes = browser.find_elements(By.CSS_SELECTOR, "#race .lane")
    assert [int(x.get_attribute("data-total") or -1) for x in lanes] == list(footer.scores)
    assert "pips" in browser.find_element(By.ID, "standings").text
    assert_clean(browser, page)


def test_a_journey_shows_the_arrow_the_moved_tiles_and_the_broken_bridge(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    source = DATA / "shangrila-4p.jsonl"
    page = tmp_path / "journey.html"
    assert main(["transcript", "html", str(source), "-o", str(page)]) == 0
    data = replay_data(transcripts.file_lines(source))
    # a journey followed by another kind of move; one that sent someone home if there is one
    moves = data["moves"]
    journeys = [m for m, then in pairwise(moves) if "journey" in m and "journey" not in then]
    move = next((m for m in journeys if m["journey"]["home"]), journeys[0])
    journey = move["journey"]
    open_page(browser, page)
    row = browser.find_element(By.CSS_SELECTOR, f"#moves li[data-ply='{move['ply']}']")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    row.click()
    assert shown(browser)["ply"] == move["ply"] + 1
    arrow = browser.find_element(By.ID, "journey-arrow")
    assert arrow.get_attribute("data-from") == str(journey["from"])
    assert arrow.get_attribute("data-to") == str(journey["to"])
    ((a, b),) = journey["broken"]
    bridge = browser.find_element(By.CSS_SELECTOR, f"#board-svg [data-bridge='{a}-{b}']")
    assert (bridge.get_attribute("data-broken"), bridge.get_attribute("data-just-broken")) == ("true", "true")
    moved = browser.find_elements(By.CSS_SELECTOR, "#board-svg .space[data-moved='true']")
    arrived = [m for m in journey["moved"] if m["result"] != "back"]
    assert sorted(e.get_attribute("data-space") for e in moved) == sorted(f"{journey['to']}-{m['d']}" for m in arrived)
    colours = data["frames"][0]["view"]["colours"]
    for m in arrived:  # the student became (or joined) a master of its colour at the destination
        space = browser.find_element(By.CSS_SELECTOR, f"#board-svg .space[data-space='{journey['to']}-{m['d']}']")
        assert space.get_attribute("data-colour") == colours[m["colour"]]
    info = browser.find_element(By.ID, "journey-info")
    assert info.get_attribute("data-sent-home") == str(len(journey["home"]))
    sent = browser.find_elements(By.CSS_SELECTOR, "#journey-info [data-sent-home]")
    assert [e.get_attribute("data-sent-home") for e in sent if e.tag_name == "li"] == [
        colours[h["colour"]] for h in journey["home"]
    ]
    assert browser.find_element(By.ID, "journey-label").get_attribute("data-sent-home") == str(len(journey["home"]))
    # one ply later the arrow is gone and the bridge is still broken
    browser.find_element(By.ID, "btn-next").click()
    assert not browser.find_elements(By.ID, "journey-arrow")
    bridge = browser.find_element(By.CSS_SELECTOR, f"#board-svg [data-bridge='{a}-{b}']")
    assert (bridge.get_attribute("data-broken"), bridge.get_attribute("data-just-broken")) == ("true", "false")
    assert_clean(browser, page)


@pytest.mark.parametrize("name", ["scripted-shangrila-3p.jsonl", "scripted-shanghaien-resumed.jsonl",
                                  "shanghaien-strikes-forfeit.jsonl", "shanghaien-disconnect-forfeit.jsonl",
                                  "shanghaien-aborted.jsonl"])  # fmt: skip
def test_refusals_strikes_disconnects_and_forfeits_are_marked_where_they_happened(
    name: str, tmp_path: Path, browser: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from selenium.webdriver.common.by import By

    source = DATA / name
    page = tmp_path / "incidents.html"
    assert main(["transcript", "html", str(source), "-o", str(page), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"html": str(page), "plies": footer_of(source).plies,
                                                    "verified": True, "problem": None}  # fmt: skip
    events = transcripts.read(source)
    incidents = [e for e in events if not isinstance(e, transcripts.Header | transcripts.Ply | transcripts.Footer)]
    footer = footer_of(source)
    open_page(browser, page)
    rows = browser.find_elements(By.CSS_SELECTOR, "#moves li.incident")
    assert [(r.get_attribute("data-kind"), r.get_attribute("data-frame")) for r in rows] == [
        (e.TYPE, str(e.ply)) for e in incidents
    ]
    refusals = [e for e in incidents if isinstance(e, transcripts.Refusal)]
    for row, event in zip(browser.find_elements(By.CSS_SELECTOR, "#moves li[data-kind='refusal']"), refusals,
                          strict=True):  # fmt: skip
        assert event.action is not None and event.action in row.text
    if incidents:
        first = rows[0]
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", first)
        first.click()  # jumps to the position it happened in, and the event box says what happened
        assert shown(browser)["ply"] == incidents[0].ply
        assert browser.find_elements(By.CSS_SELECTOR, f"#event-box li[data-kind='{incidents[0].TYPE}']")
    at = shown(browser)
    assert (at["end_reason"], at["footer_ranks"], at["verified"]) == (footer.end_reason, list(footer.ranks), "true")
    for seat in footer.forfeited:
        assert "forfeited" in (browser.find_element(By.CSS_SELECTOR, f"#seats li[data-seat='{seat}']")
                               .get_attribute("class") or "")  # fmt: skip
    assert_clean(browser, page)


def test_transcript_html_and_get_fetch_by_match_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (DATA / "shanghaien-strikes-forfeit.jsonl").read_text()

    class Gateway:
        def __enter__(self) -> Gateway:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def transcript(self, match_id: str) -> tuple[str, bool]:
            assert match_id == "m-b483b91e"
            return text, False

    monkeypatch.setattr("arena.cli.transcripts.client", lambda settings: Gateway())
    monkeypatch.chdir(tmp_path)
    assert main(["transcript", "html", "m-b483b91e", "--gateway", "127.0.0.1:1"]) == 0
    assert "m-b483b91e.html" in capsys.readouterr().out
    assert "m-b483b91e" in (tmp_path / "m-b483b91e.html").read_text()
    (tmp_path / "got").mkdir()
    assert main(["transcript", "get", "m-b483b91e", "-o", str(tmp_path / "got" / "m.jsonl"), "--html"]) == 0
    assert (tmp_path / "got" / "m.html").exists() and (tmp_path / "got" / "m.jsonl").read_text() == text
    assert main(["transcript", "html", "nothing-here.jsonl"]) == 2
    assert "no such file" in capsys.readouterr().err


def _on_a_gateway(redis_url: str, argv: list[str]) -> int:
    """``arena ARGV --gateway ADDR`` against a gateway serving the ladder of ``redis_url`` (what a bot
    author's ``arena ladder ...`` talks to)."""
    import asyncio

    from arena.ladder.service import host_ladder
    from arena.service.gateway import start_gateway

    async def run() -> int:
        server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0", host_ladder)
        try:
            return await asyncio.to_thread(main, [*argv, "--gateway", f"127.0.0.1:{port}"])
        finally:
            await server.stop(None)
            await servicer.close()

    return asyncio.run(run())


def test_the_ladder_page_shows_the_board_the_chart_and_links_replays(
    redis_url: str, tmp_path: Path, browser: Any
) -> None:
    import redis
    from selenium.webdriver.common.by import By

    from arena.ladder.store import Ladder

    ladder = Ladder(redis.Redis.from_url(redis_url))
    bots = ["strong", "greedy", "random"]
    for i in range(12):
        a, b = bots[i % 3], bots[(i + 1) % 3]
        seats = [{"seat": s, "bot_name": n, "bot_version": "1.0", "score": 10 - 3 * s, "rank": s + 1,
                  "status": "active", "strikes": 0, "refusals": 0} for s, n in enumerate((a, b))]  # fmt: skip
        ladder.apply({"match_id": f"m{i:04d}", "game_id": "shanghaien", "end_reason": "completed", "rated": True,
                      "finished_at": 1_700_000_000.0 + 60 * i, "seats": seats, "plies": 180, "seed": str(i),
                      "seed_sha256": "x", "detail": ""})  # fmt: skip
    replays = tmp_path / "replays"
    replays.mkdir()
    for match_id in ("m0003", "m0011"):
        (replays / f"{match_id}.html").write_text("<!DOCTYPE html><title>replay</title>")
    board = tmp_path / "site" / "board.html"
    html = ["--html", str(board), "--replays", str(replays)]
    assert _on_a_gateway(redis_url, ["ladder", "show", "--game", "shanghaien", *html]) == 0
    browser.get_log("performance")
    browser.get_log("browser")
    browser.get(board.resolve().as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr")
    assert sorted(r.get_attribute("data-bot") for r in rows) == sorted(bots)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#rating-chart polyline.series")) == 3
    assert len(browser.find_elements(By.CSS_SELECTOR, "#h2h tbody tr")) == 3
    assert len(browser.find_elements(By.CSS_SELECTOR, "#matches tbody tr[data-match]")) == 12
    linked = {m: (replays / f"{m}.html").resolve().as_uri() for m in ("m0003", "m0011")}
    links = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "#matches a")]
    assert sorted(links) == sorted(linked.values())  # resolved from the page's own folder
    first = browser.find_element(By.CSS_SELECTOR, "#matches tr[data-match='m0003'] a")
    assert first.get_attribute("href") == linked["m0003"]
    chart_links = [a.get_dom_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "#rating-chart a")]
    assert sorted(chart_links) == sorted(f"../replays/{m}.html" for m in linked for _ in range(2))  # both seats
    requests = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    urls = [m["params"]["request"]["url"] for m in requests if m["method"] == "Network.requestWillBeSent"]
    assert urls == [board.resolve().as_uri()]
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_screenshots_of_a_shangrila_and_a_shanghaien_replay(
    played: dict[str, Path], tmp_path: Path, browser: Any
) -> None:
    """The first, middle and last ply of a Shangri-La 4p replay and a Shanghaien one, as a person sees them
    (``ARENA_SCREENSHOTS=docs/img`` keeps them: the README shows two)."""
    keep = os.environ.get("ARENA_SCREENSHOTS")
    sources = {"shangrila-4p": DATA / "shangrila-4p.jsonl", "shanghaien": played["shanghaien"]}
    for game_id, source in sources.items():
        page = tmp_path / f"{game_id}.html"
        page.write_text(replay_html(transcripts.file_lines(source)), encoding="utf-8")
        open_page(browser, page)
        plies = shown(browser)["plies"]
        moves = replay_data(transcripts.file_lines(source))["moves"]  # Shanghaien: a full tavern, before a Shanghai
        middle = next((k for k, m in enumerate(moves) if k >= plies // 2 and m["action"] == "shanghai"), plies // 2)
        for where, ply in (("first", 0), ("middle", middle), ("last", plies)):
            browser.execute_script("window.__replay.go(arguments[0])", ply)
            assert shown(browser)["ply"] == ply
            shot = tmp_path / f"replay-{game_id}-{where}.png"
            assert browser.save_screenshot(str(shot))
            png = shot.read_bytes()
            assert png[:8] == b"\x89PNG\r\n\x1a\n"
            assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == SIZE
            if keep:  # as a 256-colour PNG: a third of the size, the same to the eye
                from PIL import Image

                Path(keep).mkdir(parents=True, exist_ok=True)
                with Image.open(shot) as image:
                    rgb = image.convert("RGB")
                    small = rgb.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
                    small.save(Path(keep) / shot.name, optimize=True)
        assert_clean(browser, page)


# ------------------------------------------------------------------- what a person reads on the pages


def page_of(source: Path, out: Path, **seats: tuple[str, str]) -> Path:
    """The replay page of ``source`` at ``out``, its header's seats renamed (``seat0=(name, version)``)."""
    lines = transcripts.file_lines(source)
    header = json.loads(lines[0])
    for key, (name, version) in seats.items():
        header["seats"][int(key.removeprefix("seat"))].update(bot_name=name, bot_version=version)
    out.write_text(replay_html([json.dumps(header).encode(), *lines[1:]]), encoding="utf-8")
    return out


def computed(driver: Any, selector: str, prop: str) -> list[str]:
    """The computed style ``prop`` of every element ``selector`` finds, in document order."""
    found: list[str] = driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => getComputedStyle(e)[arguments[1]])",
        selector, prop)  # fmt: skip
    return found


def test_a_bot_has_one_colour_on_the_ladder_page_and_in_its_replays(tmp_path: Path, browser: Any) -> None:
    from arena.colours import own_colour
    from arena.ladder.elo import Row
    from arena.ladder.report import board_html
    from arena.ladder.values import HistoryPoint, Standing

    bots = [("strong", "1.0"), ("greedy", "1.0"), ("random", "1.0")]
    assert len({own_colour(*b) for b in bots}) == 3  # bots whose own colours differ keep them on every page
    standings = [Standing(i + 1, Row(name, version, rating=1600 - 50 * i, games=20)) for i, (name, version)
                 in enumerate(bots)]  # fmt: skip
    histories = {key: [HistoryPoint(1_700_000_000.0 + 60 * j, 1500 + j, f"m{j}") for j in range(3)] for key in bots}
    board = tmp_path / "board.html"
    board.write_text(board_html("shanghaien", standings, histories, []), encoding="utf-8")
    browser.get(board.resolve().as_uri())
    on_ladder = dict(zip([b[0] for b in bots], computed(browser, "#leaderboard tbody .swatch", "backgroundColor"),
                         strict=True))  # fmt: skip
    strokes = browser.execute_script(
        "return [...document.querySelectorAll('#rating-chart polyline.series')].map(e => [e.dataset.bot,"
        " getComputedStyle(e).stroke])"
    )
    assert dict(strokes) == on_ladder  # the chart's lines: the leaderboard's swatches
    assert len(set(on_ladder.values())) == 3
    for seat0, seat1 in ((bots[0], bots[2]), (bots[2], bots[1]), (bots[1], bots[0])):
        page = page_of(DATA / "scripted-shanghaien.jsonl", tmp_path / "replay.html", seat0=seat0, seat1=seat1)
        open_page(browser, page)
        chips = computed(browser, "#seats li .chip", "backgroundColor")
        assert chips == [on_ladder[seat0[0]], on_ladder[seat1[0]]], (seat0, seat1)
        crews = computed(browser, "#players tbody tr .chip", "backgroundColor")
        assert crews == chips  # every chip of a seat on the page
        assert_clean(browser, page)
    page = page_of(DATA / "scripted-shanghaien.jsonl", tmp_path / "replay.html", seat0=bots[0], seat1=bots[0])
    open_page(browser, page)
    chips = computed(browser, "#seats li .chip", "backgroundColor")
    assert chips[0] == on_ladder["strong"] and chips[1] != chips[0]  # one bot in two seats: two colours


def test_the_end_of_a_shanghaien_match_shows_the_engines_scoring_nation_by_nation(
    played: dict[str, Path], tmp_path: Path, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    from referee.games.shanghaien.state import ShanghaienState

    source = played["shanghaien"]
    states: list[games.State] = []

    class Last(transcripts.Visitor):
        def ply(self, ply: transcripts.Ply, action: Any, before: games.State, after: games.State) -> None:
            states.append(after)

    transcripts.walk_lines(transcripts.file_lines(source), Last())
    final = states[-1]
    assert isinstance(final, ShanghaienState) and final.is_terminal()
    sheet = final.score_sheet()
    footer = footer_of(source)
    page = page_of(source, tmp_path / "end.html")
    open_page(browser, page)
    browser.execute_script("window.__replay.go(arguments[0])", footer.plies - 1)
    assert not browser.find_elements(By.ID, "final-scoring")  # before the end: the crews
    browser.execute_script("window.__replay.go(arguments[0])", footer.plies)
    box = browser.find_element(By.ID, "final-scoring")
    assert box.is_displayed() and "Final scoring" in box.text
    held = [x for x in sheet.nations if x.totals != (0, 0)]
    rows = box.find_elements(By.CSS_SELECTOR, "tbody tr[data-nation]")
    assert [r.get_attribute("data-nation") for r in rows] == [x.nation for x in held] + ["tricks"]
    for row, x in zip(rows, held, strict=False):
        totals = [e.text for e in row.find_elements(By.CSS_SELECTOR, "td.crew-col .total")]
        points = [e.text for e in row.find_elements(By.CSS_SELECTOR, "td.pts")]
        assert totals == [str(t) for t in x.totals], x
        assert points == [f"+{x.points}" if x.seat == seat else "0" for seat in (0, 1)], x
        assert x.nation in row.text.lower()
    per_seat = [sum(x.points for x in held if x.seat == seat) + sheet.tricks[seat] for seat in (0, 1)]
    assert per_seat == list(sheet.points) == list(footer.scores)  # the lines add up to the result
    heads = [e.text for e in box.find_elements(By.CSS_SELECTOR, "thead th.crew-col")]
    assert [h.count("seat") for h in heads] == [1, 1] and all(f"seat {s}" in h for s, h in enumerate(heads)), heads
    total = box.find_elements(By.CSS_SELECTOR, "tr.sum td.pts")
    assert [e.text for e in total] == [str(p) for p in footer.scores]
    box_rect, board_rect = (browser.execute_script("return arguments[0].getBoundingClientRect().toJSON()", e)
                            for e in (box, browser.find_element(By.ID, "board")))  # fmt: skip
    assert board_rect["top"] <= box_rect["top"] and box_rect["bottom"] <= board_rect["bottom"]  # seen whole
    assert_clean(browser, page)


@pytest.mark.parametrize(("name", "label"), [("shangrila-4p.jsonl", "masters"),
                                             ("scripted-shanghaien.jsonl", "points")])  # fmt: skip
def test_the_players_table_names_its_score_column(name: str, label: str, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    page = page_of(DATA / name, tmp_path / "players.html")
    open_page(browser, page)
    plies = shown(browser)["plies"]
    browser.execute_script("window.__replay.go(arguments[0])", plies)
    heads = browser.find_elements(By.CSS_SELECTOR, "#players thead th")
    assert heads[-1].text == label and heads[-1].is_displayed()  # not "∑": it is no sum of the row
    for seat, score in enumerate(shown(browser)["scores"]):
        cells = browser.find_elements(By.CSS_SELECTOR, f"#players tbody tr[data-seat='{seat}'] td")
        assert cells[-1].text == str(score)
    assert_clean(browser, page)


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two computed CSS colours (``rgb(r, g, b)``)."""

    def luminance(css: str) -> float:
        channels = [int(x) / 255 for x in css[css.index("(") + 1 : css.index(")")].split(",")[:3]]
        r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_every_stone_is_drawn_and_every_village_number_reads_clearly(tmp_path: Path, browser: Any) -> None:
    """Village 2 out of play with 3 players carries a Stone (S2) like every cut-off village: each is drawn,
    its number in full opacity on it at 4.5:1 or better."""
    page = page_of(DATA / "scripted-shangrila-3p.jsonl", tmp_path / "stones.html")
    open_page(browser, page)
    plies = shown(browser)["plies"]
    for ply in (0, plies):
        browser.execute_script("window.__replay.go(arguments[0])", ply)
        villages: list[dict[str, Any]] = browser.execute_script("""
            const opacity = e => {
              let o = 1;
              for (; e && e.nodeType === 1; e = e.parentNode) o *= Number(getComputedStyle(e).opacity);
              return o;
            };
            return [...document.querySelectorAll('#board-svg .village')].map(g => {
              const number = g.querySelector('.number'), stone = g.querySelector('.stone');
              const n = number.getBoundingClientRect(), s = stone && stone.getBoundingClientRect();
              return {village: Number(g.dataset.village), stone: g.dataset.stone === 'true',
                      closed: g.classList.contains('closed'),
                      number: number.textContent, fill: getComputedStyle(number).fill, opacity: opacity(number),
                      stoneFill: stone && getComputedStyle(stone).fill, stoneOpacity: stone && opacity(stone),
                      under: s && s.left <= n.left && n.right <= s.right && s.top <= n.top && n.bottom <= s.bottom,
                      ground: getComputedStyle(g.querySelector('.ground')).fill};
            });""")  # fmt: skip
        closed = [v for v in villages if v["closed"]]
        assert [v["village"] for v in closed] == [2] and closed[0]["stone"]
        stones = [v for v in villages if v["stone"]]
        assert len(stones) >= (1 if ply == 0 else 2)
        for v in villages:
            assert v["number"] == str(v["village"]) and v["opacity"] == 1, v
            if v["stone"]:  # the number sits on the Stone, which is drawn in full
                assert v["stoneFill"] and v["stoneOpacity"] == 1 and v["under"], v
                assert contrast(v["fill"], v["stoneFill"]) >= 4.5, v
    assert_clean(browser, page)


@pytest.mark.parametrize("name", ["scripted-shanghaien.jsonl", "scripted-shangrila-3p.jsonl"])
def test_seats_of_one_bot_are_told_apart_by_their_seat_numbers(name: str, tmp_path: Path, browser: Any) -> None:
    """One bot in every seat: every list of seats on the page names each seat's number, whatever the colours."""
    seats = {f"seat{k}": ("a-bot-with-a-rather-long-name", "1.0") for k in range(3 if "3p" in name else 2)}
    page = page_of(DATA / name, tmp_path / "twins.html", **seats)
    open_page(browser, page)
    lists = ["#seats li", "#scores .score", "#players tbody tr", "#standings li"]
    lists += [".crew h3"] if "shanghaien" in name else []
    for ply in (0, shown(browser)["plies"]):
        browser.execute_script("window.__replay.go(arguments[0])", ply)
        found: dict[str, list[dict[str, Any]]] = browser.execute_script("""
            const inside = (e, box) => { const r = e.getBoundingClientRect();
              return r.width > 0 && box.left <= r.left + 0.5 && r.right <= box.right + 0.5; };
            return Object.fromEntries(arguments[0].map(sel => [sel, [...document.querySelectorAll(sel)].map(e => {
              const tag = e.querySelector('.seat-no');
              return {seat: e.closest('[data-seat]').dataset.seat, text: e.innerText,
                      tag: tag && tag.innerText, whole: !!tag && inside(tag, e.getBoundingClientRect())};
            })]));""", lists)  # fmt: skip
        for selector, entries in found.items():
            if selector == ".crew h3" and ply:
                assert not entries  # at the end the score sheet stands in for the crews
                continue
            assert len(entries) == len(seats), selector
            for entry in entries:
                assert entry["tag"] and entry["tag"].endswith(f"seat {entry['seat']}"), (selector, entry)
                assert entry["whole"], (selector, entry)  # the number is not cut off
            assert len({e["text"] for e in entries}) == len(entries), selector  # no two read alike
    assert_clean(browser, page)


def test_every_action_in_the_move_list_and_the_status_is_shown_whole(tmp_path: Path, browser: Any) -> None:
    """The longest canonical actions (a two-student recruit, a fallback's badge before it) are read in full:
    nothing of them overflows its box, and the row's title repeats the action."""
    from selenium.webdriver.common.by import By

    source = DATA / "scripted-shangrila-3p.jsonl"
    actions = [e.action for e in transcripts.read(source) if isinstance(e, transcripts.Ply)]
    longest = max(range(len(actions)), key=lambda k: len(actions[k]))
    assert len(actions[longest]) >= 35  # e.g. "recruit 0 rainmaker + 3 dragonbreeder"
    page = page_of(source, tmp_path / "actions.html")
    open_page(browser, page)
    rows: list[dict[str, Any]] = browser.execute_script("""
        return [...document.querySelectorAll('#moves li[data-kind="ply"] .act')].map(e => ({
          text: e.innerText, title: e.title,
          cut: e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1,
          inside: e.getBoundingClientRect().right <= e.closest('li').getBoundingClientRect().right + 0.5}));
        """)  # fmt: skip
    assert [r["title"] for r in rows] == actions
    for row, action in zip(rows, actions, strict=True):
        assert not row["cut"] and row["inside"], (action, row)
        assert " ".join(row["text"].split()).endswith(action), (action, row)  # wrapped lines read as the action
    browser.execute_script("window.__replay.go(arguments[0])", longest + 1)
    code = browser.find_element(By.CSS_SELECTOR, "#last-move code")
    assert code.text == actions[longest]
    fits = browser.execute_script("""
        const c = arguments[0].getBoundingClientRect(), s = document.getElementById('status').getBoundingClientRect();
        return s.left <= c.left && c.right <= s.right && arguments[0].scrollWidth <= arguments[0].clientWidth + 1;""",
        code)  # fmt: skip
    assert fits
    assert_clean(browser, page)


def test_an_aborted_match_ranks_nobody_on_the_page(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    source = DATA / "shanghaien-aborted.jsonl"
    assert footer_of(source).ranks == (0, 0)
    page = page_of(source, tmp_path / "aborted.html")
    open_page(browser, page)
    result = browser.find_element(By.ID, "result")
    assert result.text.startswith("Aborted")
    assert [e.text for e in result.find_elements(By.CSS_SELECTOR, "#standings .rank")] == ["no rank", "no rank"]
    assert "#0" not in browser.find_element(By.TAG_NAME, "body").text
    page = page_of(DATA / "scripted-shanghaien.jsonl", tmp_path / "completed.html")  # a finished match: its places
    open_page(browser, page)
    ranks = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#standings .rank")]
    assert ranks == [f"#{r}" for r in sorted(footer_of(DATA / "scripted-shanghaien.jsonl").ranks)]
    assert_clean(browser, page)


@pytest.mark.parametrize("name", ["shangrila-4p.jsonl", "scripted-shangrila-3p.jsonl"])
def test_no_label_on_the_board_covers_a_marker(name: str, tmp_path: Path, browser: Any) -> None:
    """At every journey (and the positions between), the journey's pill and the village numbers cover no
    space, student, Stone, broken bridge's cross or the arrow, and the pill's text stays inside it."""
    page = page_of(DATA / name, tmp_path / "labels.html")
    open_page(browser, page)
    moves = replay_data(transcripts.file_lines(DATA / name))["moves"]
    journeys = [k + 1 for k, m in enumerate(moves) if "journey" in m]
    assert len(journeys) > 10
    found: list[Any] = browser.execute_script("""
        const box = e => e.getBoundingClientRect();
        const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        const name = e => (e.closest('[data-space]') || e.closest('[data-bridge]') || e.closest('[data-village]') || e)
          .outerHTML.slice(0, 60);
        const out = [];
        for (const k of arguments[0].flatMap(k => [k - 1, k])) {
          window.__replay.go(k);
          const svg = document.getElementById('board-svg'), pill = document.getElementById('journey-label');
          const markers = [...svg.querySelectorAll('.space circle, .village .stone, .bridge .cross, .bridge .halo')];
          for (const number of svg.querySelectorAll('.village .number'))
            for (const m of markers)
              if (!(m.matches('.stone') && m.parentNode === number.parentNode) && meets(box(number), box(m)))
                out.push([k, 'village ' + number.textContent, name(m)]);
          if (!pill) continue;
          const p = box(pill.querySelector('rect')), t = box(pill.querySelector('text'));
          if (!(p.left <= t.left && t.right <= p.right)) out.push([k, 'pill text', 'out of its pill']);
          for (const m of [...markers, ...svg.querySelectorAll('.village .number')])
            if (meets(p, box(m))) out.push([k, 'pill', name(m)]);
          const arrow = document.getElementById('journey-arrow'), ctm = arrow.getScreenCTM();
          for (let at = 0; at <= arrow.getTotalLength(); at += 4) {
            const q = arrow.getPointAtLength(at), x = ctm.a * q.x + ctm.e, y = ctm.d * q.y + ctm.f;
            if (p.left < x && x < p.right && p.top < y && y < p.bottom) { out.push([k, 'pill', 'the arrow']); break; }
          }
        }
        return out;""", journeys)  # fmt: skip
    assert found == []
    assert_clean(browser, page)
