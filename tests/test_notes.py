"""A bot's own notes (``sdk.Noted``): bounded and checked like other bot text, recorded in the transcript
as the seat's private data, shown beside the move to the bot's owner (transcript, ``arena transcript html``,
the website's owners' view, ``arena play``'s replays) and to nobody else: not the other seat, not a watcher,
not the public transcript download, not the public replay. Real referee, gateway, worker, Redis, website
and Chromium; the owner's replay is screenshotted to docs/img/replay-notes.png."""

from __future__ import annotations

import asyncio
import http.client
import json
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path
from typing import Any

import grpc

from arena.local.arena import LocalArena
from arena.service.client import ArenaClient
from referee import transcript
from referee.host import Referee
from referee.match import Match
from referee.spec import MatchSpec, SeatSpec
from referee.wire import bot_pb2, bot_pb2_grpc
from referee.wire.values import NOTE_MAX_BYTES, NOTES_MAX_BYTES, fit_note
from sdk import Bot, Noted, Turn
from sdk.client import BotClient
from tests.helpers import FAST, call, finished, headless_chromium, raw_session, run_bots, run_referee, wait_for
from tests.test_referee import spec

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = ROOT / "tests" / "data" / "transcripts" / "scripted-shanghaien.jsonl"
SECRET = "NOTE-SECRET"  # in every note the tests' bots write: found in a copy's bytes, the copy has notes
LONG = "é" * 300  # 600 bytes: cut to 256 (128 characters)
BIDI = "evil\u202egnp.exe"  # a bidi override: the whole note is left out


# ------------------------------------------------------------------------------ the rule itself


def test_a_note_is_cut_to_its_limits_at_a_character_and_left_out_when_not_printable() -> None:
    assert fit_note("plain why") == ("plain why", "")
    assert fit_note("  spaced  ") == ("spaced", "")
    assert fit_note("") == ("", "")
    kept, why = fit_note(LONG)
    assert kept == "é" * (NOTE_MAX_BYTES // 2) and why == "note cut to 256 bytes (it had 600; at most 256 a move)"
    kept, why = fit_note("a" + "€" * 100)  # 301 bytes; 256 falls inside a 3-byte character
    assert kept == "a" + "€" * 85 and len(kept.encode()) == 256 and "cut to 256 bytes" in why
    for bad, code in ((BIDI, "U+202E"), ("two\nlines", "U+000A"), ("bell\x07", "U+0007"), ("zw\u200bsp", "U+200B")):
        kept, why = fit_note(bad)
        assert kept == "", bad
        assert why == f"note left out: it contains the non-printable character {code} (printable text only)"
    # the match's budget: what is left is kept, then nothing
    kept, why = fit_note("x" * 200, NOTES_MAX_BYTES - 50)
    assert kept == "x" * 50 and why == "note cut to 50 bytes: this seat's notes reach 16,384 bytes in this match"
    kept, why = fit_note("more", NOTES_MAX_BYTES)
    assert kept == "" and why == "note left out: this seat's notes reached 16,384 bytes in this match"


def noted_lines() -> list[str]:
    """The scripted transcript with a note on every seat ply (seat 0's mention seat 0, and so on)."""
    out = []
    for line in SCRIPTED.read_text(encoding="utf-8").splitlines():
        event = transcript.parse_event(line)
        if isinstance(event, transcript.Ply) and event.actor >= 0:
            note = f"{SECRET} seat {event.actor} <b>ply</b> {event.ply} “ok”"
            line = transcript.ply_line(event.ply, event.actor, event.action, event.think_ms, event.bank_ms,
                                       event.fallback, note)  # fmt: skip
        out.append(line)
    return out


def test_notes_are_on_the_ply_line_and_each_reader_gets_only_its_own_seats_and_both_forms_verify() -> None:
    lines = noted_lines()
    plain = SCRIPTED.read_text(encoding="utf-8").splitlines()
    seat0 = next(line for line in lines if '"actor":0' in line)
    event = transcript.parse_event(seat0)
    assert isinstance(event, transcript.Ply) and event.note.startswith(f"{SECRET} seat 0")
    assert event.to_line() == seat0  # written back byte for byte
    assert json.loads(seat0)["note"] == event.note
    bad = seat0.replace(json.dumps(event.note, ensure_ascii=False), '""')
    try:
        transcript.parse_event(bad)
        raise AssertionError("an empty note field must be refused")
    except transcript.TranscriptError as e:
        assert "note" in str(e)
    public = [transcript.seat_view(line, set()) for line in lines]
    assert public == [transcript.seat_view(line, set()) for line in plain]  # the public form: as if no note
    own = [transcript.seat_view(line, {0}) for line in lines]
    assert [transcript.seat_view(line, {0, 1}) for line in lines] == lines
    assert any(f"{SECRET} seat 0" in line for line in own) and not any(f"{SECRET} seat 1" in line for line in own)
    assert [transcript.seat_view(line, None) for line in lines] == lines
    for form in (lines, public, own):
        assert transcript.verify_lines(form) is None


def test_a_match_taken_over_keeps_counting_its_seats_notes_against_the_match_budget() -> None:
    lines = noted_lines()[:-1]  # the footer not written yet
    seats = tuple(SeatSpec(i, f"bot{i}", "0" * 64) for i in range(2))
    match = Match.resume(MatchSpec("scripted-shanghaien", "shanghaien", seats, seed="s"), lines)
    plies = [e for e in map(transcript.parse_event, lines) if isinstance(e, transcript.Ply)]
    used = [sum(len(e.note.encode()) for e in plies if e.actor == seat) for seat in (0, 1)]
    assert all(used) and [s.note_bytes for s in match.seats] == used


# ------------------------------------------------------------------------------ the referee over gRPC


class Noter(Bot):
    """Random legal moves, each with a note: the first over-long, the second with a bidi override."""

    name, version = "noter", "1.0"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.moves = 0

    async def act(self, turn: Turn) -> Any:
        await asyncio.sleep(self.delay)
        self.moves += 1
        note = LONG if self.moves == 1 else BIDI if self.moves == 2 else f"{SECRET} <b>ply</b> {turn.ply}"
        return Noted(turn.legal_actions[turn.ply % len(turn.legal_actions)], note)


class Plain(Bot):
    name, version = "plain", "1.0"

    def act(self, turn: Turn) -> Any:
        return turn.legal_actions[0]


def test_the_referee_records_notes_cut_or_left_out_with_a_reason_and_no_strike_and_watchers_see_none() -> None:
    async def test(referee: Referee, target: str) -> None:
        match = referee.start_match(spec("shanghaien", ["tok-raw", "tok-sdk"]))
        other = asyncio.create_task(BotClient(Plain(), target, "tok-sdk", max_matches=1).run())
        notes = [LONG, BIDI, "x" * 10, f"{SECRET} fine"]
        reasons: list[str] = []
        async with grpc.aio.insecure_channel(target) as channel:
            stub = bot_pb2_grpc.BotServiceStub(channel)  # type: ignore[no-untyped-call]
            stream, requests = raw_session(stub, "tok-raw")
            await requests.put(bot_pb2.PlayRequest(hello=bot_pb2.Hello(bot_name="raw", want_acks=True)))
            async for message in stream:
                kind = message.WhichOneof("message")
                if kind == "turn":
                    t = message.turn
                    note = notes[len(reasons)] if len(reasons) < len(notes) else ""
                    action = bot_pb2.SubmitAction(match_id=t.match_id, seat=t.seat, turn_id=t.turn_id,
                                                  action=t.legal_actions[0], note=note)  # fmt: skip
                    await requests.put(bot_pb2.PlayRequest(action=action))
                elif kind == "accepted":
                    reasons.append(message.accepted.note_reason)
                elif kind == "refused":
                    raise AssertionError(f"refused: {message.refused}")
                elif kind == "match_ended":
                    break
            await requests.put(None)
        await other
        assert reasons[:4] == ["note cut to 256 bytes (it had 600; at most 256 a move)",
                               "note left out: it contains the non-printable character U+202E (printable text only)",
                               "", ""]  # fmt: skip
        assert set(reasons[4:]) <= {""}
        result = match.result
        assert result is not None and result.end_reason.value == "completed"
        assert [(s.strikes, s.refusals) for s in result.seats] == [(0, 0), (0, 0)]  # a note costs nothing
        noted = [json.loads(line) for line in match.lines if '"note"' in line]
        assert [(n["actor"], n["note"]) for n in noted] == [(0, "é" * 128), (0, "x" * 10), (0, f"{SECRET} fine")]
        assert transcript.verify_lines(match.lines) is None
        # a watcher of this referee (no admin token: everyone watches the public form) sees no note
        from referee.wire import referee_pb2, referee_pb2_grpc

        async with grpc.aio.insecure_channel(target) as channel:
            watch = referee_pb2_grpc.RefereeServiceStub(channel)  # type: ignore[no-untyped-call]
            seen = [r.transcript_line async for r in watch.WatchMatch(referee_pb2.WatchMatchRequest(
                match_id=match.match_id)) if r.transcript_line]  # fmt: skip
        assert len(seen) == len(match.lines) and not any('"note"' in line or SECRET in line for line in seen)
        assert transcript.verify_lines(seen) is None

    run_referee(test)


# ------------------------------------------------------------------------------ local play


NOTES_BOT = f'''from sdk import Bot, Noted


class Noting(Bot):
    name, version = "noting", "1.0"
    moves = 0

    def act(self, turn):
        self.moves += 1
        return Noted(turn.legal_actions[0], "{LONG}" if self.moves == 1 else "{SECRET} ply %d" % turn.ply)
'''


def test_arena_play_records_the_local_bots_notes_and_shows_them_in_its_replay(tmp_path: Path) -> None:
    bot = tmp_path / "noting.py"
    bot.write_text(NOTES_BOT, encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "play", f"{bot}:Noting", "--game", "shanghaien", "--vs", "random",
         "--games", "1", "--seed", "notes", "--out", str(out), "--html", "--json"],
        check=False, capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    (jsonl,) = out.glob("*.jsonl")
    events = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    notes = [e["note"] for e in events if e["type"] == "ply" and "note" in e]
    assert notes and all(e["actor"] == 0 for e in events if "note" in e)  # only the noting bot's seat
    assert notes[0] == "é" * 128  # the SDK cut it to the referee's limit before sending
    assert any(n.startswith(f"{SECRET} ply ") for n in notes)
    assert not [e for e in events if e["type"] in ("strike", "refusal")]
    verified = subprocess.run([sys.executable, "-m", "arena.cli", "transcript", "verify", str(jsonl)],
                              check=False, capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    page = Path(summary["replays"][0]).read_text(encoding="utf-8")
    assert f"{SECRET} ply " in page and "bot-note" in page


# ------------------------------------------------------------------------------ the arena and its website


def http_get(url: str, path: str, cookie: str = "") -> tuple[int, str]:
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "", u.port or 80, timeout=20)
    conn.request("GET", path, headers={"Cookie": cookie} if cookie else {})
    r = conn.getresponse()
    body = r.read().decode()
    conn.close()
    return r.status, body


def sign_in(url: str, token: str) -> str:
    """The owner's session cookie (``name=value``) from the sign-in form."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "", u.port or 80, timeout=20)
    conn.request("POST", "/signin", body=urllib.parse.urlencode({"token": token}),
                 headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": url})  # fmt: skip
    r = conn.getresponse()
    r.read()
    conn.close()
    assert r.status == 303, r.status
    return (r.headers.get("Set-Cookie") or "").split(";")[0]


def sse_lines(url: str, path: str, out: list[str]) -> None:
    """Every ``data:`` line of a Server-Sent Events stream, until its ``end`` event (a live viewer)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "", u.port or 80, timeout=60)
    conn.request("GET", path)
    r = conn.getresponse()
    while raw := r.readline():
        line = raw.decode()
        if line.startswith("event: end"):
            break
        if line.startswith("data: "):
            out.append(line)
    conn.close()


def test_an_owner_sees_its_bots_notes_and_nobody_else_does_through_the_gateway_and_the_website(
    redis_url: str, tmp_path: Path
) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST, web="127.0.0.1:0") as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            _, me = await call(admin.create_owner, "me")
            _, them = await call(admin.create_owner, "them")
            _, noter_token = await call(admin.register_bot, "noter", "me", ["shanghaien"], 2)
            _, plain_token = await call(admin.register_bot, "plain", "them", ["shanghaien"], 2)
            runners = run_bots({"noter": Noter(0.03), "plain": Plain()},
                               {"noter": noter_token, "plain": plain_token}, arena.gateway)  # fmt: skip
            await wait_for(lambda: call(lambda: all(b.online for b in admin.list_bots())), 20, "both bots online")
            match_id, _ = await call(admin.request_match, "shanghaien", ["noter", "plain"])
            # watchers from the start: a gateway FollowMatch without a token, and the website's live stream
            followed: list[str] = []
            live: list[str] = []
            follower = threading.Thread(target=lambda: followed.extend(ArenaClient(arena.gateway).follow(match_id)))
            viewer = threading.Thread(target=sse_lines, args=(arena.web_url, f"/matches/{match_id}/live", live))
            follower.start()
            viewer.start()
            done = await finished(admin, [match_id], 120)
            await asyncio.to_thread(follower.join, 60)
            await asyncio.to_thread(viewer.join, 60)
            result = done[match_id].result
            assert result.end_reason == 1 and all(s.strikes == 0 and s.refusals == 0 for s in result.seats)

            copies: dict[str, str] = {}
            for who, token in (("admin", arena.admin_token), ("me", me), ("noter", noter_token), ("them", them),
                               ("plain", plain_token), ("anyone", "")):  # fmt: skip
                copies[who], _ = await call(ArenaClient(arena.gateway, token).transcript, match_id)
            web = arena.web_url
            cookie = await asyncio.to_thread(sign_in, web, me)
            their_cookie = await asyncio.to_thread(sign_in, web, them)
            pages = {path: await asyncio.to_thread(http_get, web, path, c) for path, c in (
                (f"/matches/{match_id}.jsonl", ""), (f"/matches/{match_id}", ""),
                (f"/api/v1/matches/{match_id}/transcript", ""), (f"/matches/{match_id}/live", ""),
                (f"/owner/matches/{match_id}.jsonl", cookie), (f"/owner/matches/{match_id}/replay", cookie),
            )}  # fmt: skip
            theirs = await asyncio.to_thread(http_get, web, f"/owner/matches/{match_id}/replay", their_cookie)
            await browse(web, match_id, me)
            for r in runners:
                r.stop()
            admin.close()

            # the owner's copies (its bots' token, its owner token, the owners' website, the admin's) have the
            # notes; the cut one at 256 bytes, the bidi one left out
            for who in ("admin", "me", "noter"):
                events = [json.loads(line) for line in copies[who].splitlines()]
                notes = [e["note"] for e in events if "note" in e]
                moves = [e for e in events if e["type"] == "ply" and e["actor"] == 0]
                assert notes[0] == "é" * 128 and BIDI not in notes and len(notes) == len(moves) - 1, who
                assert all(e["actor"] == 0 for e in events if "note" in e)
                assert transcript.verify_lines(copies[who].splitlines()) is None
            assert copies["me"] == copies["noter"] == pages[f"/owner/matches/{match_id}.jsonl"][1]
            status, owner_page = pages[f"/owner/matches/{match_id}/replay"]
            assert status == 200 and SECRET in owner_page
            # nobody else's: the other seat's owner and bot, a stranger, the watchers, every public page
            for who in ("them", "plain", "anyone"):
                assert SECRET not in copies[who] and '"note"' not in copies[who], who
                assert transcript.verify_lines(copies[who].splitlines()) is None
            assert copies["them"] == copies["anyone"]
            # 'arena transcript verify' passes on both forms; 'arena transcript html' shows the notes of the owner's
            for who, shown in (("me", True), ("anyone", False)):
                saved = tmp_path / f"{who}.jsonl"
                saved.write_text(copies[who], encoding="utf-8")
                for command in (["verify", str(saved)], ["html", str(saved), "-o", str(saved.with_suffix(".html"))]):
                    ran = subprocess.run([sys.executable, "-m", "arena.cli", "transcript", *command], check=False,
                                         capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
                    assert ran.returncode == 0, (who, command, ran.stdout, ran.stderr)
                page = saved.with_suffix(".html").read_text(encoding="utf-8")
                found = [SECRET in page, "é" * 128 in page, "éé" in page]
                assert found == ([True] * 3 if shown else [False] * 3), (who, found)
            for path in (f"/matches/{match_id}.jsonl", f"/matches/{match_id}", f"/api/v1/matches/{match_id}/transcript",
                         f"/matches/{match_id}/live"):  # fmt: skip
                status, body = pages[path]
                assert status == 200 and SECRET not in body and "\\u00e9\\u00e9" not in body and "éé" not in body, path
            assert theirs[0] == 200 and SECRET not in theirs[1] and "éé" not in theirs[1]  # the other seat's owner
            assert followed and transcript.is_footer(followed[-1])
            assert not any(SECRET in x or '"note"' in x for x in followed)
            assert live and not any(SECRET in x or '\\"note\\"' in x for x in live)

    asyncio.run(main())


def ready(driver: Any) -> bool:
    from selenium.webdriver.common.by import By

    return bool(driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")


async def browse(web: str, match_id: str, token: str) -> None:
    await asyncio.to_thread(_browse, web, match_id, token)


def _browse(web: str, match_id: str, token: str) -> None:
    """The owner's replay in Chromium shows each note beside its move and in the event box, as text;
    the public replay of the same match shows none."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with headless_chromium(1200, 800) as driver:
        driver.get(web + "/signin")
        driver.find_element(By.ID, "token").send_keys(token)
        driver.find_element(By.CSS_SELECTOR, "form button").click()
        WebDriverWait(driver, 10).until(lambda d: d.current_url.endswith("/owner"))
        driver.get(f"{web}/owner/matches/{match_id}/replay#12")
        WebDriverWait(driver, 10).until(ready)
        notes = driver.find_elements(By.CSS_SELECTOR, "#moves li.ply .bot-note")
        assert notes and notes[0].get_attribute("textContent") == "é" * 128
        assert any(f"{SECRET} <b>ply</b>" in n.get_attribute("textContent") for n in notes)
        assert driver.find_elements(By.CSS_SELECTOR, "#moves b") == []  # a note's markup is text
        rows = driver.find_elements(By.CSS_SELECTOR, "#moves li.ply")
        noted = [row for row in rows if row.find_elements(By.CSS_SELECTOR, ".bot-note")]
        frame = next(int(row.get_attribute("data-frame")) for row in noted if SECRET in row.text)
        driver.find_element(By.CSS_SELECTOR, f'#moves li[data-frame="{frame}"]').click()
        shown = driver.find_element(By.ID, "event-note").text
        assert shown.startswith("noter's note: ") and SECRET in shown, shown
        assert driver.find_element(By.ID, "download").get_attribute("href").endswith(f"/owner/matches/{match_id}.jsonl")
        (ROOT / "docs" / "img").mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(ROOT / "docs" / "img" / "replay-notes.png"))
        assert driver.execute_script("return window.__replayErrors") == []
        driver.get(f"{web}/matches/{match_id}#{frame}")
        WebDriverWait(driver, 10).until(ready)
        assert driver.find_elements(By.CSS_SELECTOR, ".bot-note") == []
        assert SECRET not in driver.execute_script("return document.documentElement.outerHTML")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]]
        assert errors == []


def test_the_example_bot_writes_a_note_on_every_move(tmp_path: Path) -> None:
    """docs/examples/notedbot.py, which docs/bots.md points authors to."""
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "play", str(ROOT / "docs" / "examples" / "notedbot.py") + ":NotedBot",
         "--game", "shangrila-3p", "--vs", "random", "--games", "1", "--seed", "notes", "--out", str(tmp_path),
         "--json"],
        check=False, capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (jsonl,) = tmp_path.glob("*.jsonl")
    lines = jsonl.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    seat = next(s["seat"] for s in header["seats"] if s["bot_name"] == "NotedBot")
    moves = [json.loads(line) for line in lines if '"type":"ply"' in line and f'"actor":{seat},' in line]
    assert moves and all(m.get("note", "").startswith("lead after it ") for m in moves if not m["fallback"])
    assert transcript.verify_lines(lines) is None
