"""Bot-supplied text in a real browser (Debian's headless Chromium): names, versions and reasons made of
markup, ``</script>``, bidi overrides and control characters, shown by a real ``arena web`` on the home
page and the owner's page, execute nothing, inject no element and show as the text they are. The owner's
page is screenshotted to docs/img/web-owner.png."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import redis

from arena import keys
from arena.service.matches import MatchStore
from arena.service.owners import Owners
from arena.service.registry import Registry
from tests.helpers import headless_chromium, web_server

ROOT = Path(__file__).resolve().parents[1]
EVIL = {
    "img": "<img src=x onerror=alert(1)>",
    "script": "</script><script>alert(2)</script>",
    "bidi": "evil\u202egnp.exe\u202c bot",
    "control": "bell\x07esc\x1b[31mred\x00",
}
HOOK = """window.__alerts = [];
for (const f of ["alert", "confirm", "prompt"]) { window[f] = (m) => { window.__alerts.push(String(m)); }; }"""


def evil_world(r: redis.Redis) -> str:
    """An owner whose bots carry the texts above: names written straight into their records (the
    registry's name rule would refuse them; the pages must not rely on it), versions as a bot reports
    them (``Registry.seen``), a disable reason; a finished match between two of them. The owner's token."""
    _, token = Owners(r).create("mallory")
    registry = Registry(r)
    for i, text in enumerate(EVIL.values()):
        name = f"{text}{i}"
        r.hset(keys.bot(name), mapping={"name": name, "owner": "mallory", "games": json.dumps(["shanghaien"]),
                                        "enabled": "1", "token_sha256": f"{i:064d}", "created_at": "1"})  # fmt: skip
        r.sadd(keys.bots(), name)
        registry.seen(name, text, {})
    names = [f"{t}{i}" for i, t in enumerate(EVIL.values())]
    registry.set_enabled(names[0], False, EVIL["script"])
    MatchStore(r).request("shanghaien", [names[1], names[2]], match_id="evil-match")
    r.hset(keys.match("evil-match"), mapping={"status": "finished", "finished_at": f"{time.time():.6f}"})
    return token


def assert_inert(driver: Any, *shown: str) -> None:
    """No dialog was opened, no element was injected, the texts show as text."""
    from selenium.webdriver.common.by import By

    assert driver.execute_script("return window.__alerts") == []
    assert driver.find_elements(By.CSS_SELECTOR, "img") == []  # the page has no image of its own
    scripts = driver.execute_script("return [...document.scripts].map(s => s.textContent)")
    assert not any("alert" in s for s in scripts), scripts
    text = driver.execute_script("return document.body.textContent")
    for t in shown:
        assert t in text, (t, text[:2000])


def test_bot_texts_execute_nothing_and_show_as_text_on_the_home_and_owner_pages(redis_url: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    token = evil_world(redis.Redis.from_url(redis_url))
    with web_server(redis_url) as url, headless_chromium(1000, 900) as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOOK})
        driver.get(url + "/")
        assert_inert(driver, EVIL["script"], EVIL["bidi"])  # the latest result's two bots

        driver.get(url + "/signin")
        driver.find_element(By.ID, "token").send_keys(token)
        driver.find_element(By.CSS_SELECTOR, "form button").click()
        WebDriverWait(driver, 10).until(lambda d: d.current_url.endswith("/owner"))
        assert_inert(driver, EVIL["img"], EVIL["script"], EVIL["bidi"], "bell", "red")
        names = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".bot-name a")]
        assert names[0].startswith("<img src=x onerror=alert(1)>") or any(EVIL["img"] in n for n in names), names
        reason = driver.find_element(By.CSS_SELECTOR, ".state .reason").text
        assert reason == EVIL["script"]
        # the bidi override stays inside its own element: the text after it is not reversed
        versions = [e.get_attribute("textContent") for e in driver.find_elements(By.CSS_SELECTOR, ".bot-version")]
        assert EVIL["bidi"] in versions and all(e.tag_name == "bdi" for e in
                                                driver.find_elements(By.CSS_SELECTOR, ".bot-version"))  # fmt: skip
        assert driver.get_cookie("arena_owner")["httpOnly"] is True
        assert driver.execute_script("return document.cookie") == ""  # HttpOnly: no script reads it
        (ROOT / "docs" / "img").mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(ROOT / "docs" / "img" / "web-owner.png"))
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]]
        assert errors == []  # no script error, no CSP refusal
