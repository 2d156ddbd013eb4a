"""Match pages and live matches: a finished match's replay (and its public JSONL), a running match drawn
as it is played, over Server-Sent Events.

One ``Follower`` per running match per process reads the match's event log (``keys.events``: one
blocking XREAD at a time) and fans each new line out to every viewer through in-memory mailboxes, so a
viewer costs no Redis command. Each line is made public first (``public_lines``: no seat's refused text),
then replayed through the engine (``arena.replay.frames.LiveReplay``, the code that makes a finished
replay's frames), and the update it makes to the page's data is encoded once, as one SSE message, for all
viewers. A viewer joining late gets the messages so far first (the page carries the data up to then, the
stream the rest). A viewer that falls ``MAX_BEHIND`` lines behind is closed (its browser reconnects and
resumes from its ``Last-Event-ID``), so a slow one never holds the others back. The follower stops at the
footer, when the match is found finished, or ``LINGER_S`` after its last viewer left (a page load and
its stream's connection, or a reconnection, find it still there).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections import OrderedDict
from typing import Any, Final
from urllib.parse import quote

import structlog
from aiohttp import web

from arena import keys
from arena.redis_client import TROUBLE, connect_async, trouble
from arena.replay.frames import LiveReplay, apply_update, replay_data
from arena.replay.page import body_markup, error_script, script_json, site_script, site_style, title_of
from arena.service.archive import ArchiveError
from arena.service.matches import MatchRecord, entry_lines, public_lines
from arena.web.app import CONFIG, DATA, render
from arena.web.data import WebData
from referee import games, transcript
from referee.wire.values import MatchStatus

log = structlog.get_logger("arena.web.live")

BLOCK_MS: Final = 5_000  # one follower's blocking read; when idle it looks this often whether the match ended
BATCH: Final = 500  # lines read at most per XREAD
LINGER_S: Final = 10.0  # a follower without viewers stops after this
MAX_BEHIND: Final = 300  # lines a viewer may have waiting before it is closed (it reconnects and resumes)
HEARTBEAT_S: Final = 15.0  # an SSE comment this often on an idle stream, so proxies keep it open
MAX_FOLLOWERS: Final = 64  # Redis connections for followers (more running matches watched at once wait)
WAITING_REFRESH_S: Final = 5  # a queued match's page reloads itself this often
FINISHED_CACHE: Final = 32  # finished matches' page data kept (a finished transcript never changes)


class Gauges:
    """What this process serves live now, for the metrics (``live_viewers()``, ``live_followers()``)."""

    viewers = 0  # SSE viewers of running matches connected now
    followers = 0  # running matches followed now (one Redis reader each)


GAUGES = Gauges()


def live_viewers() -> int:
    """Viewers of live matches connected to this process now (a gauge for the metrics)."""
    return GAUGES.viewers


def live_followers() -> int:
    """Running matches this process follows now (one Redis reader each)."""
    return GAUGES.followers


def public_transcript(text: str) -> list[str]:
    """A stored transcript's lines in their public form: no seat's refused text or the referee's reason.
    Split on newlines only (a refused action may carry U+2028, which ``str.splitlines`` would split on)."""
    lines = text.removesuffix("\n").split("\n") if text else []
    return public_lines(lines, set())


# ---------------------------------------------------------------------------------- viewers


class Viewer:
    """One SSE client's mailbox: the encoded messages not yet written, and whether it ends."""

    __slots__ = ("behind", "dropped", "ended", "pending", "wake")

    def __init__(self) -> None:
        self.pending: list[bytes] = []
        self.behind = 0
        self.wake = asyncio.Event()
        self.ended = False  # the match ended: after the pending messages, the stream says so and closes
        self.dropped = False  # fell too far behind: closed without the end, so that the browser reconnects

    def push(self, chunk: bytes, lines: int) -> None:
        if self.dropped:
            return
        self.behind += lines
        if self.behind > MAX_BEHIND:
            self.dropped = True
            self.pending.clear()
        else:
            self.pending.append(chunk)
        self.wake.set()

    def end(self) -> None:
        self.ended = True
        self.wake.set()

    async def next(self) -> bytes | None:
        """What to write next (all that waits, as one write); None when the stream is over."""
        while True:
            if self.dropped:
                return None
            if self.pending:
                chunk = b"".join(self.pending) if len(self.pending) > 1 else self.pending[0]
                self.pending.clear()
                self.behind = 0
                return chunk
            if self.ended:
                return None
            self.wake.clear()
            await self.wake.wait()


# -------------------------------------------------------------------------------- followers


class Follower:
    """The one reader of a running match's event log in this process, and what it has read so far."""

    def __init__(self, hub: Hub, match_id: str) -> None:
        self.hub = hub
        self.match_id = match_id
        self.messages: list[bytes] = []  # one SSE message per transcript line; line n has id n (1-based)
        self.data: dict[str, Any] | None = None  # the page data of those lines (None: no header yet)
        self.viewers: set[Viewer] = set()
        self.ended = False
        self.ready = asyncio.Event()  # the event log was read once: a page can be made from what it had
        self.left_at = time.monotonic()
        self._page: tuple[int, str] | None = None
        self._replay = LiveReplay()
        GAUGES.followers += 1
        self.task = asyncio.create_task(self._run(), name=f"follow {match_id}")

    # ---- viewers

    def join(self, after: int) -> Viewer:
        """A new viewer, given every message after the ``after`` first at once."""
        viewer = Viewer()
        if after < len(self.messages):
            viewer.pending.append(b"".join(self.messages[after:]))
        if self.ended:
            viewer.end()
        else:
            self.viewers.add(viewer)
            GAUGES.viewers += 1
        return viewer

    def leave(self, viewer: Viewer) -> None:
        if viewer in self.viewers:
            self.viewers.discard(viewer)
            GAUGES.viewers -= 1
            if not self.viewers:
                self.left_at = time.monotonic()

    def page_data(self) -> tuple[int, str] | None:
        """(lines, the page data of those lines as JSON for a page) or None before the header."""
        if self.data is None:
            return None
        n = len(self.messages)
        if self._page is None or self._page[0] != n:
            self._page = (n, script_json(self.data))
        return self._page

    # ---- reading

    async def _run(self) -> None:
        r = self.hub.redis
        stream = keys.events(self.match_id)
        last: Any = b"0-0"
        first = True
        quiet_since = time.monotonic()
        try:
            while not self.ended:
                try:
                    reply: Any = await r.xread({stream: last}, count=BATCH, block=None if first else BLOCK_MS)
                except TROUBLE as e:
                    log.warning("live follower: redis trouble", match_id=self.match_id, error=trouble(e))
                    await asyncio.sleep(1.0)
                    continue
                lines: list[str] = []
                for _, entries in reply or []:
                    for entry_id, fields in entries:
                        last = entry_id
                        lines += entry_lines(fields)
                if lines:
                    await self._add(lines)
                    quiet_since = time.monotonic()
                elif not first:
                    if not self.viewers and time.monotonic() - self.left_at >= LINGER_S:
                        return
                    await self._finished_check()
                    if time.monotonic() - quiet_since >= HEARTBEAT_S:
                        self._fan_out(b": still running\n\n", 0)
                        quiet_since = time.monotonic()
                if first:
                    first = False
                    self.ready.set()
        finally:
            self.ended = True
            self.ready.set()
            self._replay.close()
            for viewer in self.viewers:
                viewer.end()
            if self.hub.followers.get(self.match_id) is self:
                del self.hub.followers[self.match_id]
            GAUGES.followers -= 1

    async def _finished_check(self) -> None:
        """An idle log: has the match ended without a footer in its log (aborted, or the log went with the result)?
        Then the stored transcript's lines not yet sent are sent, and the stream ends."""
        data = self.hub.data
        try:
            status = await self.hub.redis.hget(keys.match(self.match_id), "status")
        except TROUBLE:
            return
        if status is None or keys.text(status) != MatchStatus.FINISHED:
            return
        try:
            text = await data.call(data.matches.transcript, self.match_id)
        except Exception as e:
            log.warning("live follower: no stored transcript", match_id=self.match_id, error=str(e))
            text = None
        rest = (text or "").removesuffix("\n").split("\n")[len(self.messages) :] if text else []
        if rest:
            await self._add(rest)
        self.ended = True

    async def _add(self, lines: list[str]) -> None:
        public = public_lines(lines, set())
        updates = await asyncio.wrap_future(self._replay.feed(public))
        start = len(self.messages)
        for line, update in zip(public, updates, strict=True):
            self.data = apply_update(self.data, update)
            n = len(self.messages) + 1
            body = json.dumps({"n": n, "line": line, "update": update}, separators=(",", ":"))
            self.messages.append(f"id: {n}\ndata: {body}\n\n".encode())
            if transcript.is_footer(line):
                self.ended = True
                break
        self._fan_out(b"".join(self.messages[start:]), len(self.messages) - start)

    def _fan_out(self, chunk: bytes, lines: int) -> None:
        for viewer in self.viewers:
            viewer.push(chunk, lines)
            if self.ended:
                viewer.end()


class Hub:
    """A process's followers, by match id, and the Redis client they read with."""

    def __init__(self, redis_url: str, data: WebData) -> None:
        self.redis = connect_async(redis_url, block_ms=BLOCK_MS, max_connections=MAX_FOLLOWERS)
        self.data = data
        self.followers: dict[str, Follower] = {}
        self.finished: OrderedDict[str, str] = OrderedDict()  # match id -> its page data (JSON)

    def follower(self, match_id: str) -> Follower:
        f = self.followers.get(match_id)
        if f is None or f.task.done():
            f = self.followers[match_id] = Follower(self, match_id)
        return f

    async def close(self) -> None:
        for f in list(self.followers.values()):
            f.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await f.task
        await self.redis.aclose()


HUB: web.AppKey[Hub] = web.AppKey("live", Hub)

routes = web.RouteTableDef()


# ------------------------------------------------------------------------------------ pages


async def _record(request: web.Request) -> MatchRecord:
    data = request.app[DATA]
    match_id = request.match_info["match_id"]
    record: MatchRecord | None = await data.call(data.matches.describe, match_id)
    if record is None:
        raise web.HTTPNotFound(text=f"There is no match {match_id}.")
    return record


async def _stored(request: web.Request, record: MatchRecord) -> str:
    data = request.app[DATA]
    try:
        text: str | None = await data.call(data.matches.transcript, record.match_id)
    except ArchiveError as e:
        raise web.HTTPServiceUnavailable(text=f"The transcript of {record.match_id} cannot be read: {e}") from None
    if text is None:
        raise web.HTTPNotFound(text=f"Match {record.match_id} has no stored transcript (it may have expired).")
    return text


@routes.get(r"/matches/{match_id}.jsonl", name="match_jsonl")
async def download(request: web.Request) -> web.Response:
    """The public transcript of a finished match, as a file to save."""
    record = await _record(request)
    if record.status is not MatchStatus.FINISHED:
        raise web.HTTPNotFound(text=f"Match {record.match_id} has not finished: its transcript is stored when it ends.")
    lines = public_transcript(await _stored(request, record))
    response = web.Response(text="\n".join(lines) + "\n", content_type="application/x-ndjson", charset="utf-8")
    response.headers["Content-Disposition"] = f'attachment; filename="{_file_name(record.match_id)}.jsonl"'
    return response


@routes.get("/matches/{match_id}/live", name="match_live")
async def live(request: web.Request) -> web.StreamResponse:
    """The lines of a running match as Server-Sent Events: those after ``Last-Event-ID`` (or ``from``)
    at once, then each as it is recorded; an ``end`` event after the footer."""
    record = await _record(request)
    after = _int(request.headers.get("Last-Event-ID")) or _int(request.query.get("from")) or 0
    response = web.StreamResponse(headers={
        "Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no",
    })  # fmt: skip
    if record.status is MatchStatus.FINISHED:  # nothing to follow: what is left, from the stored transcript
        lines = public_transcript(await _stored(request, record))
        await response.prepare(request)
        for n, line in enumerate(lines[after:], after + 1):
            await response.write(f"id: {n}\ndata: {json.dumps({'n': n, 'line': line, 'update': {}})}\n\n".encode())
        await response.write(b"event: end\ndata: {}\n\n")
        return response
    follower = request.app[HUB].follower(record.match_id)
    await response.prepare(request)
    viewer = follower.join(after)
    started = time.perf_counter()
    try:
        while (chunk := await viewer.next()) is not None:
            await response.write(chunk)
        if viewer.ended and not viewer.dropped:
            await response.write(b"event: end\ndata: {}\n\n")
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        follower.leave(viewer)
        log.info("request", method="GET", path=request.path, status=200, stream=True, dropped=viewer.dropped,
                 ms=round((time.perf_counter() - started) * 1000, 1))  # fmt: skip
    return response


@routes.get("/matches/{match_id}", name="match")
async def match_page(request: web.Request) -> web.Response:
    """A finished match's replay, a running match drawn live, or a queued match's waiting page."""
    record = await _record(request)
    hub = request.app[HUB]
    if record.status is MatchStatus.FINISHED:
        page = hub.finished.get(record.match_id)
        if page is None:
            lines = public_transcript(await _stored(request, record))
            data = request.app[DATA]
            page = await data.call(lambda: script_json(replay_data(lines)))
            hub.finished[record.match_id] = page
            while len(hub.finished) > FINISHED_CACHE:
                hub.finished.popitem(last=False)
        else:
            hub.finished.move_to_end(record.match_id)
        return replay_page(request, record, json.loads(page), page, live=False)
    if record.status is MatchStatus.RUNNING:
        follower = hub.follower(record.match_id)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(follower.ready.wait(), 5)
        snapshot = follower.page_data()
        if snapshot is not None:
            n, page = snapshot
            data = json.loads(page)
            data["live"] = {"url": request.app.router["match_live"].url_for(match_id=record.match_id).path, "from": n}
            return replay_page(request, record, data, script_json(data), live=True)
    return render(request, "match_waiting.html", match=record, refresh=WAITING_REFRESH_S,
                  state=record.status.value if record.status else "unknown")  # fmt: skip


def replay_page(
    request: web.Request, record: MatchRecord, data: dict[str, Any], page: str, live: bool, download: str = ""
) -> web.Response:
    """The site's replay page of ``data`` (``replay_data``; ``page`` is its JSON), its download link to
    ``download`` (default: the public transcript)."""
    game_id = data["game"]["game_id"]
    download = download or f"/matches/{quote(record.match_id)}.jsonl"
    return render(
        request, "match.html", match=record, live=live, title=title_of(data), data_json=page, download=download,
        body=body_markup(), errors_js=error_script(), game_id=game_id,
        script_url=f"/replay/{game_id}.js?v={_version(site_script(game_id))}",
        style_url=f"/replay/{game_id}.css?v={_version(site_style(game_id))}",
    )  # fmt: skip


# ------------------------------------------------------------------------ the replay's files


@routes.get("/replay/{game_id}.js", name="replay_js")
async def replay_js(request: web.Request) -> web.Response:
    """The replay's script for a game (the one ``arena transcript html`` inlines), as a cached file."""
    return _asset(request, site_script, "text/javascript")


@routes.get("/replay/{game_id}.css", name="replay_css")
async def replay_css(request: web.Request) -> web.Response:
    return _asset(request, site_style, "text/css")


def _asset(request: web.Request, make: Any, content_type: str) -> web.Response:
    game_id = request.match_info["game_id"]
    if game_id not in games.GAME_IDS:
        raise web.HTTPNotFound()
    text: str = make(game_id)
    etag = _version(text)
    if request.headers.get("If-None-Match") == f'"{etag}"':
        return web.Response(status=304, headers={"ETag": f'"{etag}"'})
    response = web.Response(text=text, content_type=content_type, charset="utf-8")
    response.headers["ETag"] = f'"{etag}"'
    response.headers["Cache-Control"] = "public, max-age=31536000, immutable" if request.query.get("v") else "no-cache"
    return response


def _version(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _file_name(match_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in match_id)


def _int(text: str | None) -> int:
    try:
        return max(0, int(text or "0"))
    except ValueError:
        return 0


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)

    async def start(app: web.Application) -> None:
        app[HUB] = Hub(app[CONFIG].redis_url, app[DATA])

    async def stop(app: web.Application) -> None:
        await app[HUB].close()

    app.on_startup.append(start)
    app.on_cleanup.insert(0, stop)
