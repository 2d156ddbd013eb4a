"""The website's event pages (``/events``, ``/events/{id}``) as a real ``arena web`` process serves them
over a real Redis written by the arena's own stores: standings, cross table, links to the matches'
replays, bot text escaped; and in a real Chromium, screenshotted to docs/img/web-event.png."""

from __future__ import annotations

import html
import re
from pathlib import Path

import redis

from arena.events.model import Entrant, Event, SlotState
from arena.events.store import EventStore
from arena.service.registry import Registry
from tests.helpers import headless_chromium, web_server
from tests.web_world import GAME, HOSTILE_VERSION, build, fetch

ROOT = Path(__file__).resolve().parents[1]


def world(redis_url: str) -> None:
    """The web world (alpha, whose version is hostile markup, v. beta: done-00 alpha won, done-01 beta won)
    and an event of alpha, beta and delta: alpha-beta played those two, delta absent from one slot."""
    build(redis_url)
    r = redis.Redis.from_url(redis_url)
    Registry(r).register("delta", "dan", [GAME])
    store = EventStore(r)
    entrants = (Entrant("alpha", HOSTILE_VERSION), Entrant("beta", "1.0"), Entrant("delta", "1.0"))
    store.create(Event("cup", GAME, "round-robin", entrants, 2))
    slots = store.slots("cup")
    ab = sorted((s for s in slots if set(s.bots) == {"alpha", "beta"}), key=lambda s: s.rot)
    done = [s.but(state=SlotState.DONE, match_id=f"done-{k:02d}", finished_at=1.7e9 + k) for k, s in enumerate(ab)]
    gone = next(s for s in slots if set(s.bots) == {"alpha", "delta"}).but(state=SlotState.FORFEITED, absent=("delta",))
    store.put_slots("cup", [*done, gone])
    r.close()


def section(body: str, table: str) -> list[str]:
    part = body.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr[ >].*?</tr>", part.split("<tbody>", 1)[1], re.S)


def test_the_event_pages_show_standings_cross_table_and_replays(redis_url: str) -> None:
    world(redis_url)
    with web_server(redis_url) as url:
        status, _, listing = fetch(f"{url}/events")
        assert status == 200 and 'href="/events/cup"' in listing
        status, _, body = fetch(f"{url}/events/cup")
        assert status == 200, body
        missing, _, _ = fetch(f"{url}/events/nope")
        assert missing == 404
        with headless_chromium(1100, 1000) as driver:
            driver.get(f"{url}/events/cup")
            assert driver.find_element("id", "event-state").text == "active"
            (ROOT / "docs" / "img").mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(ROOT / "docs" / "img" / "web-event.png"))
    standings = section(body, "standings")
    assert len(standings) == 3
    assert 'href="/bots/alpha"' in standings[0] and "2/3" in standings[0]  # 1 won, 1 lost, 1 by forfeit
    assert 'href="/bots/delta"' in standings[2] and "0/1" in standings[2]
    assert HOSTILE_VERSION not in body and html.escape(HOSTILE_VERSION) in body  # bot text is text
    cross = section(body, "cross-table")
    assert len(cross) == 3 and "1/2" in cross[0] and "1/1" in cross[0]  # alpha: 1 of 2 v. beta, 1 of 1 v. delta
    matches = section(body, "event-matches")
    assert len(matches) == 6
    assert sum('href="/matches/done-0' in m for m in matches) == 2  # the played ones link to their replays
    assert any("forfeited" in m and "absent: delta" in m for m in matches)
