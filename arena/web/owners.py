"""The owners' view: sign in with the owner token, and see the private side of your own bots (their
pause and disable reasons, the gateway's rate-limit counters, transcripts with their own refusal texts).

The session is a cookie that any replica can check without state of its own and without writing to
Redis: ``v1.<name, base64url>.<expiry>.<HMAC-SHA256>``, the HMAC keyed by the owner's token hash as Redis
stores it (``keys.owner``'s ``token_sha256``) over the name and the expiry. Every replica reads that hash
(one HGET a request); nobody without it can make a cookie; rotating the owner's token changes the key, so
it signs the owner out everywhere at once. The token itself is only ever in the sign-in form's body: never
in a URL, a cookie, a log line or a page.

Writes are POST forms (sign in, sign out), refused unless the browser says they come from this site
(Origin, else Referer, equal to the site's own); with ``SameSite=Strict`` on the cookie, another site can
neither post with the session nor read what it shows.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from arena import keys
from arena.replay.frames import replay_data
from arena.replay.page import script_json
from arena.service.matches import MatchRecord, public_lines
from arena.service.ratelimit import REQUEST, SESSION
from arena.service.registry import BotRecord
from arena.web.app import CONFIG, DATA, render
from arena.web.limits import CLIENT, address_of, too_many
from arena.web.live import replay_page
from referee import transcript
from referee.wire.values import token_sha256

routes = web.RouteTableDef()

COOKIE = "arena_owner"
SESSION_S = 12 * 3600  # a session lasts half a day; signing in again is one paste
RECENT = 20  # matches shown per bot


@dataclass(frozen=True)
class Session:
    owner: str
    expires: int


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()


def _mac(token_hash: str, owner: str, expires: int) -> str:
    return hmac.new(token_hash.encode(), f"v1|{owner}|{expires}".encode(), hashlib.sha256).hexdigest()


def make_cookie(owner: str, token_hash: str, expires: int) -> str:
    """The session cookie's value for ``owner`` until ``expires`` (unix seconds)."""
    return f"v1.{_b64(owner)}.{expires}.{_mac(token_hash, owner, expires)}"


def parse_cookie(value: str) -> tuple[str, int, str] | None:
    """(owner, expiry, mac) of a well-formed cookie value, else None (nothing checked yet)."""
    parts = value.split(".")
    if len(parts) != 4 or parts[0] != "v1" or not parts[2].isdigit() or len(parts[3]) != 64:
        return None
    try:
        owner = _unb64(parts[1])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return owner, int(parts[2]), parts[3]


def _stored_hash(r: Any, owner: str) -> str | None:
    raw = r.hget(keys.owner(owner), "token_sha256")
    return None if raw is None else keys.text(raw)


async def session(request: web.Request) -> Session | None:
    """The signed-in owner, if the cookie is valid now: well formed, not expired, and its HMAC made with
    the owner's current token hash (a rotated token, or a deleted owner, ends it)."""
    value = request.cookies.get(COOKIE)
    parsed = parse_cookie(value) if value else None
    if parsed is None:
        return None
    owner, expires, mac = parsed
    if expires < time.time():
        return None
    data = request.app[DATA]
    stored = await data.call(_stored_hash, data.r, owner)
    if stored is None or not hmac.compare_digest(_mac(stored, owner, expires), mac):
        return None
    return Session(owner, expires)


def _same_origin(request: web.Request) -> bool:
    """The POST comes from a page of this site (Origin, else Referer, has this host and scheme)."""
    source = request.headers.get("Origin") or request.headers.get("Referer")
    if not source or source == "null":
        return False
    u = urlsplit(source)
    return u.scheme == request.scheme and u.netloc.lower() == request.host.lower()


def _check_post(request: web.Request) -> None:
    if not _same_origin(request):
        raise web.HTTPForbidden(text="This form must be sent from this site's own page (Origin check).")


def _see_other(location: str) -> web.Response:
    """A 303 as a response (not raised), so the security headers are set on it too."""
    return web.Response(status=303, headers={"Location": location})


# ---------------------------------------------------------------------- sign in, sign out


@routes.get("/signin", name="signin")
async def signin_form(request: web.Request) -> web.Response:
    if await session(request) is not None:
        return _see_other("/owner")
    return render(request, "signin.html", error="")


@routes.post("/signin")
async def signin(request: web.Request) -> web.Response:
    """The owner token from the form's body; wrong tokens are limited per address (guessing)."""
    _check_post(request)
    address, now = address_of(request), time.monotonic()
    failures = request.app[CLIENT].signin_failures
    if failures.remaining(address, now) == 0:
        return too_many(request, failures.hit(address, now) or 1, "failed sign-ins")
    form = await request.post()
    token = str(form.get("token", "")).strip()
    data = request.app[DATA]
    owner = await data.call(_owner_for_token, data.r, token) if token else None
    if owner is None:
        failures.hit(address, now)
        return render(request, "signin.html", status=401,
                      error="That is not a current owner token. Paste the token `arena owner create` (or the "
                      "last `arena owner rotate-token`) printed; a rotated token no longer works.")  # fmt: skip
    name, token_hash = owner
    expires = int(time.time()) + SESSION_S
    response = _see_other("/owner")
    response.set_cookie(COOKIE, make_cookie(name, token_hash, expires), max_age=SESSION_S, path="/", httponly=True,
                        secure=request.app[CONFIG].secure, samesite="Strict")  # fmt: skip
    return response


def _owner_for_token(r: Any, token: str) -> tuple[str, str] | None:
    """(owner name, its token hash) when ``token`` is an owner's current token; read only."""
    h = token_sha256(token)
    name = r.get(keys.owner_token(h))
    if name is None:
        return None
    owner = keys.text(name)
    stored = _stored_hash(r, owner)
    return (owner, stored) if stored is not None and hmac.compare_digest(stored, h) else None


@routes.post("/signout", name="signout")
async def signout(request: web.Request) -> web.Response:
    _check_post(request)
    response = _see_other("/")
    response.del_cookie(COOKIE, path="/", secure=request.app[CONFIG].secure, samesite="Strict", httponly=True)
    return response


# ---------------------------------------------------------------------- the owner's page


async def _required(request: web.Request) -> Session:
    s = await session(request)
    if s is None:
        raise web.HTTPUnauthorized(text="Sign in with your owner token to see this page (/signin).")
    return s


@dataclass(frozen=True)
class BotView:
    """One of the owner's bots as its page shows it."""

    bot: BotRecord
    paused: str  # the ladder scheduler's reason ("" when playing)
    sessions_left: int | None  # Play/session opens left in the gateway's window (None: no limit)
    matches: list[MatchRecord]


def _owner_view(data: Any, owner: str, limits: Any) -> tuple[list[BotView], int | None]:
    """The owner's bots with their private side, and its match requests left in the window."""
    r = data.r
    mine = [b for b in data.registry.list() if b.owner == owner]
    pauses: dict[tuple[str, str], str] = {}
    for member, record in r.hgetall(keys.ladder_pauses()).items():
        name, version = json.loads(member)
        rec = json.loads(record)
        if rec.get("state") != "active":
            pauses[(name, version)] = rec.get("reason", "") or rec.get("state", "paused")
    per_kind = limits.per_kind()
    pipe = r.pipeline(transaction=False)
    for b in mine:
        pipe.get(keys.rate(SESSION, f"bot:{b.name}"))
    pipe.get(keys.rate(REQUEST, f"owner:{owner}"))
    counts = [int(c or 0) for c in pipe.execute()]

    def left(kind: str, used: int) -> int | None:
        return max(0, per_kind[kind] - used) if per_kind.get(kind) else None

    views = [
        BotView(b, pauses.get((b.name, b.version), ""), left(SESSION, used),
                data.matches.search(bot=b.name, limit=RECENT))
        for b, used in zip(mine, counts, strict=False)
    ]  # fmt: skip
    return views, left(REQUEST, counts[-1])


@routes.get("/owner", name="owner")
async def owner_page(request: web.Request) -> web.Response:
    s = await session(request)
    if s is None:
        return _see_other("/signin")
    data = request.app[DATA]
    limits = request.app[CONFIG].gateway_limits
    bots, requests_left = await data.call(_owner_view, data, s.owner, limits)
    response = render(request, "owner.html", owner=s.owner, bots=bots, requests_left=requests_left,
                      limits=limits, expires=s.expires)  # fmt: skip
    response.headers["Cache-Control"] = "private, no-store"  # an owner's page stays in no cache
    return response


NOT_YOURS = "No finished match of your bots has that id."


async def _own_match(request: web.Request) -> tuple[Session, str, str] | web.Response:
    """What an owner's page of one match starts from: the signed-in owner, the match id and the owner's
    copy of its transcript; a visitor not signed in gets the redirect to sign in (returned), and a match
    none of whose seats is the owner's the download's 404 (raised), so neither page tells more than it."""
    s = await session(request)
    if s is None:
        return _see_other("/signin")
    data = request.app[DATA]
    match_id = request.match_info["match_id"]
    text = await data.call(_transcript_for, data, match_id, s.owner)
    if text is None:
        raise web.HTTPNotFound(text=NOT_YOURS)
    return s, match_id, text


@routes.get(r"/owner/matches/{match_id}.jsonl", name="owner_transcript")
async def owner_transcript(request: web.Request) -> web.Response:
    """The transcript with this owner's seats' refusal texts (other seats' stay private); 404 for a match
    none of whose seats is the owner's (the same answer as for no match: nothing is learnt from it)."""
    s = await _required(request)
    data = request.app[DATA]
    text = await data.call(_transcript_for, data, request.match_info["match_id"], s.owner)
    if text is None:
        raise web.HTTPNotFound(text=NOT_YOURS)
    name = request.match_info["match_id"].replace('"', "")
    return web.Response(text=text, content_type="application/x-ndjson", charset="utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}.private.jsonl"',
                                 "Cache-Control": "private, no-store"})  # fmt: skip


@routes.get(r"/owner/matches/{match_id:[^/.]+}", name="owner_match")
async def owner_match(request: web.Request) -> web.Response:
    """The owner's seats' refused moves in one match, with the referee's reasons (the private side of a
    transcript a replay does not show); the same 404 as the download for anyone else's match."""
    own = await _own_match(request)
    if isinstance(own, web.Response):
        return own
    s, match_id, text = own
    data = request.app[DATA]
    seats, refusals = _own_refusals(text, await data.call(_own_seats, data, match_id, s.owner))
    response = render(request, "owner_match.html", owner=s.owner, match_id=match_id, seats=seats,
                      refusals=refusals)  # fmt: skip
    response.headers["Cache-Control"] = "private, no-store"
    return response


@routes.get(r"/owner/matches/{match_id:[^/.]+}/replay", name="owner_replay")
async def owner_replay(request: web.Request) -> web.Response:
    """The match's replay from the owner's copy of its transcript: beside its bots' moves, their own
    notes (and their refusals in full), which the public replay never has; the same 404 as the download
    for anyone else's match. Made for each request and cached nowhere (``private, no-store``)."""
    own = await _own_match(request)
    if isinstance(own, web.Response):
        return own
    _, match_id, text = own
    data = request.app[DATA]
    record = await data.call(data.matches.describe, match_id)
    if record is None:
        raise web.HTTPNotFound(text=NOT_YOURS)
    lines = text.removesuffix("\n").split("\n")  # not splitlines: U+2028 may be in a line
    replay = await data.call(replay_data, lines)
    download = request.app.router["owner_transcript"].url_for(match_id=match_id).path
    response = replay_page(request, record, replay, script_json(replay), live=False, download=download)
    response.headers["Cache-Control"] = "private, no-store"
    return response


def _own_refusals(text: str, seats: set[int]) -> tuple[list[tuple[int, str]], list[transcript.Refusal]]:
    """(seat, bot name) of the owner's seats, and their refusals in order."""
    names: list[tuple[int, str]] = []
    refusals = []
    for line in text.splitlines():
        if '"header"' in line or '"refusal"' in line:
            event = transcript.parse_event(line)
            if isinstance(event, transcript.Header):
                names = [(x.seat, x.bot_name) for x in event.seats if x.seat in seats]
            elif isinstance(event, transcript.Refusal) and event.seat in seats:
                refusals.append(event)
    return names, refusals


def _own_seats(data: Any, match_id: str, owner: str) -> set[int]:
    record = data.matches.describe(match_id)
    return set() if record is None else _seats_of(data, record, owner)


def _seats_of(data: Any, record: MatchRecord, owner: str) -> set[int]:
    """The seats of ``record`` whose bot is ``owner``'s now."""
    names = list(dict.fromkeys(record.bot_names))
    pipe = data.r.pipeline(transaction=False)
    for name in names:
        pipe.hget(keys.bot(name), "owner")
    owners = {n: keys.text(o) if o is not None else "" for n, o in zip(names, pipe.execute(), strict=True)}
    return {i for i, name in enumerate(record.bot_names) if owners.get(name) == owner}


def _transcript_for(data: Any, match_id: str, owner: str) -> str | None:
    record = data.matches.describe(match_id)
    if record is None:
        return None
    seats = _seats_of(data, record, owner)
    if not seats:
        return None
    text = data.matches.transcript(match_id)
    if text is None:
        return None
    lines = public_lines(text.splitlines(), seats)
    return "\n".join(lines) + "\n"


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
