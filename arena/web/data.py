"""What the website reads, through the stores the rest of the arena reads with (the match service's
``MatchStore`` and ``Registry``, the ladder's ``Ladder``): one shape per fact, whatever shows it.

The stores are synchronous redis-py clients; each read runs in a thread, as the gateway's do. Nothing
here writes: a store whose constructor would write (``MatchQueue`` creates its consumer groups) is not
made here, the queue's figures are read with read-only commands, and this module's Lua reads are
declared ``no-writes`` (Redis refuses a write in them; they run for a read-only user or on a replica).
Redis away or refusing becomes ``DataUnavailableError``, which the app answers with a 503 page (or JSON)
saying so.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from arena import keys
from arena.events.model import UnknownEventError
from arena.events.store import EventStore
from arena.ladder.elo import BotKey, Row
from arena.ladder.store import Ladder, member
from arena.ladder.values import HistoryPoint, Standing
from arena.redis_client import TROUBLE, ReadScript, connect, trouble
from arena.service.archive import TranscriptArchive
from arena.service.matches import MatchRecord, MatchStore, public_lines
from arena.service.queue import PRIORITIES
from arena.service.registry import BotRecord, Registry
from referee.games import GAME_IDS
from referee.wire.values import MatchStatus

T = TypeVar("T")

BOARD_PAGE: Final = 50  # leaderboard rows a page, unless asked otherwise
BOARD_MAX: Final = 200
TREND_POINTS: Final = 20  # rating-history points a leaderboard row's sparkline draws
HISTORY_POINTS: Final = 100  # points of each version's chart on a bot page (the latest)
RECENT_MATCHES: Final = 20
H2H_SHOWN: Final = 30
MATCH_PAGE: Final = 50
MATCH_MAX: Final = 200
QUEUE_SHOWN: Final = 100
FIGURES_EVERY_S: Final = 5.0  # the home page's bot counts, recounted by each process at most this often

PUBLIC_STATUS: Final = {
    "retired": "retired for good by its owner or the arena; its results stay",
    "disabled": "disabled by its owner or the arena's admin: it plays no matches",
    "paused": "off the ladder after forfeiting matches in a row, until it reconnects and passes a validation match",
    "validating": "playing a validation match to return to the ladder",
    "online": "connected, playing when the ladder or an owner asks",
    "offline": "not connected",
}
"""A bot's state as anyone may read it: one fixed sentence a state. The free text behind a state (an
owner's or admin's disable reason, the ladder's pause record naming matches) is the owner's to read."""


def public_bot(bot: BotRecord) -> dict[str, Any]:
    """What a stranger may know of a bot: ``BotRecord.public()`` (no token hash) less its free-text
    disable reason, with its public state (``PUBLIC_STATUS``)."""
    out = bot.public()
    del out["disabled_reason"]
    return out


def public_match(m: MatchRecord) -> dict[str, Any]:
    """A match's record as the gateway gives it to anyone: no worker id nor referee address (which say
    where the arena's workers are), never the seed before the end (the record has none)."""
    return {
        "match_id": m.match_id, "game_id": m.game_id, "state": m.status.value if m.status else "",
        "bot_names": list(m.bot_names), "rated": m.rated, "priority": m.priority, "enqueued_at": m.enqueued_at,
        "started_at": m.started_at, "finished_at": m.finished_at, "seed_sha256": m.seed_sha256,
        "result": m.result,
    }  # fmt: skip


def row_dict(row: Row) -> dict[str, Any]:
    return {"name": row.name, "version": row.version, "rating": row.rating, "error": row.error,
            "provisional": row.provisional, "games": row.games, "wins": row.wins, "draws": row.draws,
            "losses": row.losses, "last_played": row.last_played}  # fmt: skip


@dataclass(frozen=True)
class Board:
    """One page of a game's leaderboard, each row with its latest ratings (the trend)."""

    game_id: str
    standings: list[Standing]
    total: int  # versions on the ladder
    offset: int
    limit: int
    trends: dict[BotKey, list[float]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id, "total": self.total, "offset": self.offset, "limit": self.limit,
            "rows": [{"rank": s.rank, "owner": s.owner, **row_dict(s.row), "trend": self.trends.get(s.row.key, [])}
                     for s in self.standings],
        }  # fmt: skip


@dataclass(frozen=True)
class Opponent:
    """Head to head of one of a bot's versions against one other bot version, from the bot's side."""

    version: str
    opponent: BotKey
    wins: int
    draws: int
    losses: int

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses


@dataclass(frozen=True)
class Version:
    game_id: str
    rank: int  # on the game's leaderboard (1 best)
    row: Row


@dataclass(frozen=True)
class BotPage:
    """Everything the bot page and ``/api/v1/bots/{name}`` show of one bot, public forms only."""

    bot: BotRecord
    state: str  # a key of PUBLIC_STATUS
    versions: list[Version]
    histories: dict[str, dict[BotKey, list[HistoryPoint]]]  # game -> version -> rating after each match
    recent: list[MatchRecord]
    h2h: dict[str, list[Opponent]] = field(default_factory=dict)  # game -> most played first

    @property
    def reason(self) -> str:
        return PUBLIC_STATUS[self.state]

    def to_dict(self) -> dict[str, Any]:
        return {
            "bot": public_bot(self.bot), "state": self.state, "state_reason": self.reason,
            "versions": [{"game_id": v.game_id, "rank": v.rank, **row_dict(v.row)} for v in self.versions],
            "history": {g: [{"version": k[1], "points": [[p.finished_at, p.rating, p.match_id] for p in pts]}
                            for k, pts in hs.items()] for g, hs in self.histories.items()},
            "recent_matches": [public_match(m) for m in self.recent],
            "head_to_head": {g: [{"version": o.version, "opponent": o.opponent[0], "opponent_version": o.opponent[1],
                                  "wins": o.wins, "draws": o.draws, "losses": o.losses} for o in os]
                             for g, os in self.h2h.items()},
        }  # fmt: skip


@dataclass(frozen=True)
class MatchPage:
    """A page of the match list, newest first; ``next_before``: the cursor of the next page (None: last)."""

    matches: list[MatchRecord]
    next_before: float | None


class DataUnavailableError(Exception):
    """The arena's database cannot answer now: the page says so (503), with the reason for a person."""


_BOARD = """#!lua flags=no-writes
-- KEYS: a game's board (sorted set) and rows (hash). ARGV: first and last place (ZREVRANGE indexes), the
-- bot hash key prefix (keys.bot('')), the history key prefix (keys.ladder_history(game, '')), trend points.
-- Returns JSON [ladder size, rows (null for a member without a row), owners, trends (each the latest
-- history points, as stored)]: one round trip, one reply to decode. It names bot and history keys itself
-- (one Redis server, as the arena is deployed; as arena.ladder.store's _READ does).
local members = redis.call('ZREVRANGE', KEYS[1], ARGV[1], ARGV[2])
local total = redis.call('ZCARD', KEYS[1])
local n = #members
local rows, owners, trends = {}, {}, {}
if n > 0 then rows = redis.call('HMGET', KEYS[2], unpack(members)) end
for i = 1, n do
  if rows[i] then
    local name = cjson.decode(members[i])[1]
    owners[i] = cjson.encode(redis.call('HGET', ARGV[3] .. name, 'owner') or '')
    trends[i] = '[' .. table.concat(redis.call('LRANGE', ARGV[4] .. members[i], -tonumber(ARGV[5]), -1), ',') .. ']'
  else
    rows[i], owners[i], trends[i] = 'null', '""', '[]'
  end
end
return '[' .. total .. ',[' .. table.concat(rows, ',') .. '],[' .. table.concat(owners, ',') .. '],[' ..
       table.concat(trends, ',') .. ']]'
"""


_LATEST = """#!lua flags=no-writes
-- KEYS[1]: a list of JSON values (a rating history); ARGV[1]: how many of the last. Returns them as one
-- JSON array: one reply to decode, not one a point.
return '[' .. table.concat(redis.call('LRANGE', KEYS[1], -tonumber(ARGV[1]), -1), ',') .. ']'
"""


class WebData:
    def __init__(self, redis_url: str, archive: Path | None = None) -> None:
        self.r = connect(redis_url)
        self.matches = MatchStore(self.r, archive=TranscriptArchive(archive) if archive else None)
        self.registry = Registry(self.r)
        self.ladder = Ladder(self.r)
        self._board = ReadScript(self.r, _BOARD)
        self._bot_figures: tuple[float, tuple[int, int]] | None = None  # (when counted, figures)
        self._counting = threading.Lock()  # held by the one thread recounting them
        self._latest = ReadScript(self.r, _LATEST)
        self.events = EventStore(self.r, self.matches)

    def event_list(self) -> list[dict[str, Any]]:
        """Every event's head (``EventStore.summary``'s ``event``), newest first."""
        out = []
        for event_id in self.events.ids():
            try:
                out.append(self.events.summary(event_id)["event"])
            except UnknownEventError:  # removed between the two reads
                continue
        return out

    def event_page(self, event_id: str) -> dict[str, Any] | None:
        """An event's whole picture (``EventStore.summary``: the standings the CLI shows), or None."""
        try:
            return self.events.summary(event_id)
        except UnknownEventError:
            return None

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a thread; ``DataUnavailableError`` when Redis cannot answer."""
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except TROUBLE as e:
            raise DataUnavailableError(trouble(e)) from e

    def bot_figures(self) -> tuple[int, int]:
        """(bots registered, bots online) for the home page. Counting those online is O(bots) (0.4 s of
        this process's time with 50,000 bots), so each process keeps the last count and, once it is
        ``FIGURES_EVERY_S`` old, answers with it while a thread counts again: no page waits but the first."""
        cached = self._bot_figures
        if cached is None:
            return self._count_bots()
        if time.monotonic() - cached[0] >= FIGURES_EVERY_S and self._counting.acquire(blocking=False):

            def recount() -> None:
                try:
                    self._count_bots()
                except Exception:  # Redis away: the next page tries again (and says so if it cannot read)
                    pass
                finally:
                    self._counting.release()

            threading.Thread(target=recount, name="bot-figures", daemon=True).start()
        return cached[1]

    def _count_bots(self) -> tuple[int, int]:
        """The online bots from their index (``keys.online``, SSCAN) and their presence a thousand at a
        time: short commands that never hold Redis up, and as many as bots online, not registered."""
        total = int(self.r.scard(keys.bots()))
        online = len(self.registry.presence.online_names())
        self._bot_figures = (time.monotonic(), (total, online))
        return total, online

    def queue_figures(self) -> dict[str, int]:
        """Matches queued (all priorities) and running (leased to a worker), read only."""
        pipe = self.r.pipeline(transaction=False)
        for p in PRIORITIES:
            pipe.xlen(keys.queue(p))
            pipe.xpending(keys.queue(p), keys.CONSUMER_GROUP)
        replies = pipe.execute(raise_on_error=False)
        queued = running = 0
        for length, pending in zip(replies[::2], replies[1::2], strict=True):
            if isinstance(pending, Exception):  # no worker has made the consumer group yet: none running
                if "NOGROUP" not in str(pending):
                    raise pending
                pending = {"pending": 0}
            if isinstance(length, Exception):
                raise length
            running += int(pending["pending"])
            queued += int(length) - int(pending["pending"])
        return {"queued": queued, "running": running}

    # ------------------------------------------------------------------ leaderboards

    def board(self, game_id: str, offset: int = 0, limit: int = BOARD_PAGE) -> Board:
        """A page of the leaderboard: its rows, their owners, their last ``TREND_POINTS`` ratings and the
        ladder's size, as ``Ladder.leaderboard`` reads rows but in one round trip and one JSON decode
        (``_BOARD``): the page's cost does not grow with the ladder, and is a few milliseconds."""
        raw: Any = self._board(
            [keys.ladder_board(game_id), keys.ladder_rows(game_id)],
            [offset, offset + limit - 1, keys.bot(""), keys.ladder_history(game_id, ""), TREND_POINTS],
        )
        total, rows, owners, trends = json.loads(raw)
        standings, lines = [], {}
        for i, (d, owner, pts) in enumerate(zip(rows, owners, trends, strict=True)):
            if d:
                row = Row.from_dict(d)
                standings.append(Standing(offset + i + 1, row, owner))
                lines[row.key] = [float(p[1]) for p in pts]
        return Board(game_id, standings, int(total), offset, limit, lines)

    # ------------------------------------------------------------------ bots

    def bot_page(self, name: str) -> BotPage | None:
        """The bot's public page, or None for no such bot."""
        bot = self.registry.find(name)
        if bot is None:
            return None
        versions: list[Version] = []
        histories: dict[str, dict[BotKey, list[HistoryPoint]]] = {}
        h2h: dict[str, list[Opponent]] = {}
        for game_id in bot.game_ids:
            keys_ = self.ladder.versions(game_id, name)
            if not keys_:
                continue
            pipe = self.r.pipeline(transaction=False)
            for k in keys_:
                pipe.hget(keys.ladder_rows(game_id), member(k))
                pipe.zrevrank(keys.ladder_board(game_id), member(k))
                self._latest([keys.ladder_history(game_id, member(k))], [HISTORY_POINTS], client=pipe)
            replies = pipe.execute()
            game_hist: dict[BotKey, list[HistoryPoint]] = {}
            for k, (raw, rank, pts) in zip(keys_, zip(*[iter(replies)] * 3, strict=True), strict=True):
                if raw:
                    versions.append(Version(game_id, int(rank) + 1 if rank is not None else 0,
                                            Row.from_dict(json.loads(raw))))  # fmt: skip
                points = json.loads(pts)
                if points:
                    game_hist[k] = [HistoryPoint(float(t), float(r), str(m)) for t, r, m in points]
            histories[game_id] = game_hist
            h2h[game_id] = self._h2h(game_id, name)
        recent = self.matches.search(bot=name, limit=RECENT_MATCHES)
        return BotPage(bot, self._state(bot), versions, histories, recent, h2h)

    def _h2h(self, game_id: str, name: str) -> list[Opponent]:
        """The bot's most played head-to-head records on a ladder (``Ladder.h2h``: from the bot's index,
        most games first), from its side; only the shown ones are turned round."""
        out = []
        for h in self.ladder.h2h(game_id, name):
            if h.a[0] == name:
                out.append(Opponent(h.a[1], h.b, h.a_wins, h.draws, h.b_wins))
            if h.b[0] == name and h.a[0] != name:
                out.append(Opponent(h.b[1], h.a, h.b_wins, h.draws, h.a_wins))
            if len(out) >= H2H_SHOWN:
                break
        return out[:H2H_SHOWN]

    def _state(self, bot: BotRecord) -> str:
        if bot.retired:
            return "retired"
        if not bot.enabled:
            return "disabled"
        raw = self.r.hget(keys.ladder_pauses(), member((bot.name, bot.version)))
        paused = json.loads(raw).get("state", "active") if raw else "active"
        if paused in ("paused", "validating"):
            return str(paused)
        return "online" if bot.online else "offline"

    # ------------------------------------------------------------------ matches

    def match_page(self, *, game_id: str | None = None, bot: str | None = None, state: MatchStatus | None = None,
                   before: float | None = None, limit: int = MATCH_PAGE) -> MatchPage:  # fmt: skip
        """A page of matches newest first (by request time), one more read to know whether another follows."""
        found = self.matches.search(game_id=game_id, bot=bot, state=state, before=before, limit=limit + 1)
        more = len(found) > limit
        found = found[:limit]
        return MatchPage(found, found[-1].enqueued_at if more and found else None)

    def queue_page(self) -> dict[str, list[MatchRecord]]:
        """What waits for a worker (oldest first, higher priority first) and what runs, read from the queue
        streams without touching them: an entry pending in the consumer group is leased (running)."""
        pipe = self.r.pipeline(transaction=False)
        for p in PRIORITIES:
            pipe.xrange(keys.queue(p), "-", "+", count=QUEUE_SHOWN * 2)
            pipe.xpending_range(keys.queue(p), keys.CONSUMER_GROUP, min="-", max="+", count=QUEUE_SHOWN * 2)
        replies = pipe.execute(raise_on_error=False)
        waiting: list[str] = []
        running: list[str] = []
        for entries, pending in zip(replies[::2], replies[1::2], strict=True):
            if isinstance(entries, Exception):
                raise entries
            if isinstance(pending, Exception):
                if "NOGROUP" not in str(pending):
                    raise pending
                pending = []
            leased = {keys.text(p["message_id"]) for p in pending}
            for entry_id, fields in entries:
                match_id = keys.text(fields.get(b"match_id") or fields.get("match_id") or b"")
                (running if keys.text(entry_id) in leased else waiting).append(match_id)
        records = self.matches.describe_many(waiting[:QUEUE_SHOWN] + running[:QUEUE_SHOWN])
        return {"waiting": [r for r in records if r.match_id in set(waiting)],
                "running": [r for r in records if r.match_id in set(running)]}  # fmt: skip

    def latest_finished(self, n: int) -> list[MatchRecord]:
        """The ``n`` matches that finished last, newest first: from the index of finished matches (by finish
        time), not a search by state, which reads past every queued and running match first. That index
        drops archived matches: when it holds fewer, the search by state says what finished last."""
        ids: Any = self.r.zrevrange(keys.matches_finished(), 0, n - 1)
        found = self.matches.describe_many([keys.text(i) for i in ids])
        if len(found) < n:
            return self.matches.search(state=MatchStatus.FINISHED, limit=n)
        return found

    def public_transcript(self, match_id: str) -> list[str] | None:
        """A finished match's transcript as anyone may read it (``public_lines`` with no seat: every
        refusal keeps its seat, ply and code, never the refused text nor the referee's reason), one JSON
        line an item; None when none is stored (no such match, or not finished). ArchiveError when it is
        archived and the archive cannot give it."""
        text = self.matches.transcript(match_id)
        if text is None:
            return None
        lines = text.removesuffix("\n").split("\n") if text else []  # not splitlines: U+2028 may be in a line
        return public_lines(lines, set())

    def ladder_sizes(self) -> dict[str, int]:
        """Every game's number of rated bot versions, in one round trip."""
        pipe = self.r.pipeline(transaction=False)
        for g in GAME_IDS:
            pipe.zcard(keys.ladder_board(g))
        return {g: int(n) for g, n in zip(GAME_IDS, pipe.execute(), strict=True)}

    def close(self) -> None:
        self.r.close()
