"""Every Redis key the arena uses, in one place. Nobody builds key strings elsewhere."""

from __future__ import annotations

from typing import Final

PREFIX: Final = "arena:"
CONSUMER_GROUP: Final = "referees"


def text(value: bytes | str) -> str:
    """A key or value as Redis returned it (bytes, from clients without ``decode_responses``), as text."""
    return value.decode() if isinstance(value, bytes) else value


def match(match_id: str) -> str:
    """Hash: the match's spec (JSON), status, priority, timestamps, worker, result."""
    return f"{PREFIX}match:{match_id}"


def queue(priority: str) -> str:
    """Stream of queued match ids for one priority (consumer group ``referees``)."""
    return f"{PREFIX}queue:{priority}"


def results() -> str:
    """Stream of finished matches, one entry per match, appended exactly once: fields ``match_id`` and
    ``RESULT_RECORD`` (absent from entries stored before records existed)."""
    return f"{PREFIX}results"


RESULT_RECORD: Final = "record_v1"
"""Field of a ``results()`` entry: the result in brief (``arena.results``, what the ladder reads). A change
of the record's layout takes a new name: entries with the old one are then read from the match's result."""


# ---- matches: indexes, event logs, transcripts


def matches_by_time() -> str:
    """Sorted set of every match id, scored by enqueue time (unix seconds)."""
    return f"{PREFIX}matches"


def matches_finished() -> str:
    """Sorted set of the finished matches whose transcript is still in Redis, scored by finish time: the
    archiver's work list (``arena.service.archive``), which a match still running never holds up."""
    return f"{PREFIX}matches:finished"


def matches_by_bot(bot: str) -> str:
    """Sorted set of the match ids a bot is seated in, scored by enqueue time."""
    return f"{PREFIX}matches:bot:{bot}"


def matches_by_game(game_id: str) -> str:
    """Sorted set of the match ids of a game, scored by enqueue time."""
    return f"{PREFIX}matches:game:{game_id}"


def match_seed(match_id: str) -> str:
    """String: the match's seed, kept apart from the public match record until the match ends (deleted
    then: the result and the transcript's footer reveal it)."""
    return f"{PREFIX}seed:{match_id}"


def events(match_id: str) -> str:
    """Stream: the match's transcript lines as recorded (the event log a takeover resumes from), one entry per
    flush of its worker (``EVENT_LINES``), while it runs: deleted with the result, which stores the whole
    transcript."""
    return f"{PREFIX}events:{match_id}"


EVENT_LINES: Final = "lines"
"""Field of an ``events()`` entry: the transcript lines one flush of the worker appended, joined by newlines
(a line is JSON: it has none). Entries written before batches have one ``EVENT_LINE`` instead; read either
with ``arena.service.matches.entry_lines``."""
EVENT_LINE: Final = "line"


def transcript(match_id: str) -> str:
    """String: the full JSON Lines transcript of a finished match, stored once with its result; moved to
    the archive after the retention period, by default seconds later (``arena.service.archive``; the match
    hash says where)."""
    return f"{PREFIX}transcript:{match_id}"


def archive_cursor() -> str:
    """String: the enqueue time up to which every finished match's transcript is archived."""
    return f"{PREFIX}archive:cursor"


def archive_lock() -> str:
    """String with a TTL: held by the one process running an archive pass."""
    return f"{PREFIX}archive:lock"


# ---- bots: registry, presence, session events


def bots() -> str:
    """Set of every registered bot name."""
    return f"{PREFIX}bots"


def bot(name: str) -> str:
    """Hash: owner, game ids, token hash, enabled, reported version, limits, timestamps, the registering
    request's id (a retry with it is the same registration: ``Registry.register``)."""
    return f"{PREFIX}bot:{name}"


def bot_name_fold(folded: str) -> str:
    """String: the name of the bot whose name folds to this (``arena.service.names.fold``): a name that
    looks like a registered one is refused."""
    return f"{PREFIX}botname:{folded}"


def token(token_sha256: str) -> str:
    """String: the name of the bot whose token has this SHA-256 (tokens are never stored)."""
    return f"{PREFIX}token:{token_sha256}"


def admin_token() -> str:
    """String: the SHA-256 of the arena's admin token."""
    return f"{PREFIX}admin"


def presence(name: str) -> str:
    """Hash: gateway id -> the bot's session info (JSON) on that gateway, while it has a session open there.
    It counts while that gateway's ``gateway_alive`` key exists (``arena.service.presence``)."""
    return f"{PREFIX}presence:{name}"


def online() -> str:
    """Set of the bot names that have a ``presence`` hash: the bots to look at for who is online, so that
    the ladder's scheduler reads the online bots rather than every registered one."""
    return f"{PREFIX}online"


def gateway_alive(gateway_id: str) -> str:
    """String with a time-to-live that the gateway refreshes at every heartbeat: while it exists, the
    presence its sessions wrote counts; a dead gateway's sessions go offline when it runs out."""
    return f"{PREFIX}gateway:{gateway_id}:alive"


def gateway_bots(gateway_id: str) -> str:
    """Set of the bot names with a session on this gateway (what to clear when it is found dead)."""
    return f"{PREFIX}gateway:{gateway_id}:bots"


def gateways() -> str:
    """Set of the gateway ids that wrote presence (a live gateway sweeps away the dead ones')."""
    return f"{PREFIX}gateways"


def bot_changes() -> str:
    """Stream of ``bot`` names whose token or enabled flag changed (rotation, disabling, retirement): each
    gateway reads it with its assignments and checks that bot's sessions at once."""
    return f"{PREFIX}botchanges"


PRESENCE_LADDER: Final = "ladder"
"""Field of a ``presence()`` value: false when the session asked to stay off the ladder (``arena bot run
--no-ladder``); absent (sessions of older gateways) means on."""


def bot_running(name: str) -> str:
    """Set of the match ids in progress that seat this bot."""
    return f"{PREFIX}running:{name}"


def assignments() -> str:
    """Stream of match assignments for every bot (``bot``, ``match_id``, ``game_id``, ``seat``,
    ``address``): each gateway reads it once and tells its own sessions, so Redis connections do not
    grow with the sessions."""
    return f"{PREFIX}assignments"


# ---- workers


def worker(worker_id: str) -> str:
    """Hash with a time-to-live: a live referee worker's address and load."""
    return f"{PREFIX}worker:{worker_id}"


def workers() -> str:
    """Set of worker ids seen (stale ones have no ``worker`` hash any more)."""
    return f"{PREFIX}workers"


# ---- ladder (arena/ladder/store.py, arena/ladder/scheduler.py) ---------------------------------

LADDER_GROUP: Final = "ladder"
"""Consumer group of the ladder processes on ``results()``."""


def ladder_rows(game_id: str) -> str:
    """Hash: one field per bot version (JSON ``[name, version]``) -> its row (JSON)."""
    return f"{PREFIX}ladder:{game_id}:rows"


def ladder_board(game_id: str) -> str:
    """Sorted set: bot versions (JSON ``[name, version]``) scored by rating; the leaderboard."""
    return f"{PREFIX}ladder:{game_id}:board"


def ladder_latest(game_id: str) -> str:
    """Hash: bot name -> its latest version on this ladder (a new version starts from its rating)."""
    return f"{PREFIX}ladder:{game_id}:latest"


def ladder_h2h(game_id: str) -> str:
    """Hash: JSON ``[name_a, version_a, name_b, version_b]`` (a < b) -> JSON ``[a_wins, draws, b_wins]``."""
    return f"{PREFIX}ladder:{game_id}:h2h"


def ladder_history(game_id: str, member: str) -> str:
    """List: one bot version's rating after each of its matches, JSON ``[finished_at, rating, match_id]``."""
    return f"{PREFIX}ladder:{game_id}:history:{member}"


def ladder_versions(game_id: str, name: str) -> str:
    """Set: the versions of bot ``name`` rated on this ladder (an index of ``ladder_rows``: a bot page reads
    its versions without scanning every row)."""
    return f"{PREFIX}ladder:{game_id}:versions:{name}"


def ladder_opponents(game_id: str, name: str) -> str:
    """Set: the fields of ``ladder_h2h`` that name bot ``name`` (an index: its head to head without
    scanning every pair)."""
    return f"{PREFIX}ladder:{game_id}:opponents:{name}"


def ladder_fit(game_id: str) -> str:
    """Hash: the whole-history fit (``arena.ladder.fit``) of the results applied when it was made: one field per
    bot version (JSON ``[name, version]``) -> JSON ``[rating, sd, games]``; field ``results``: how many results
    it fitted, ``fitted_at``: when (Unix seconds)."""
    return f"{PREFIX}ladder:{game_id}:fit"


def ladder_applied(game_id: str) -> str:
    """Set: match ids applied to this game's ladder (exactly once)."""
    return f"{PREFIX}ladder:{game_id}:applied"


def ladder_state(game_id: str) -> str:
    """Hash: ``seq`` (applications so far); every change to the game's ladder bumps it (the WATCH key).
    ``indexed``: "1" when ``ladder_versions`` and ``ladder_opponents`` hold every version and pair (a ladder
    begun, or rebuilt, since they exist); else readers scan the rows and pairs."""
    return f"{PREFIX}ladder:{game_id}:state"


def ladder_rebuild_lock(game_id: str) -> str:
    """String with a TTL: held while ``rebuild`` rewrites the game's ladder; appliers wait."""
    return f"{PREFIX}ladder:{game_id}:rebuilding"


def ladder_cursor() -> str:
    """String: id of the last ``results()`` entry the ladder has applied, with every entry before it."""
    return f"{PREFIX}ladder:cursor"


def ladder_games() -> str:
    """Set: game ids that have a ladder."""
    return f"{PREFIX}ladder:games"


def ladder_pauses() -> str:
    """Hash: bot version (JSON ``[name, version]``) -> its pause record (JSON) kept by the scheduler."""
    return f"{PREFIX}ladder:pauses"


# ---- owners and rate limits (arena/service/owners.py, arena/service/ratelimit.py)


def owner(name: str) -> str:
    """Hash: an owner (bot author): ``name``, ``token_sha256``, ``max_bots``, ``created_at``, ``request_id``."""
    return f"{PREFIX}owner:{name}"


def owner_token(token_sha256: str) -> str:
    """String: the owner whose token has this hash."""
    return f"{PREFIX}ownertoken:{token_sha256}"


def owners() -> str:
    """Set of owner names."""
    return f"{PREFIX}owners"


def owner_registering(name: str) -> str:
    """String with a short time-to-live: held while a RegisterBot of this owner counts its bots and
    registers one, so that concurrent registrations cannot pass ``max_bots`` together."""
    return f"{PREFIX}ownerlock:{name}"


def rate(kind: str, token_sha256: str) -> str:
    """Counter expiring at the end of the current window: calls of one kind with one token in it."""
    return f"{PREFIX}rate:{kind}:{token_sha256}"


# ---- events: competitions (arena.events; not a match's event log)


def event_ids() -> str:
    """Sorted set of every event (competition) id, scored by creation time."""
    return f"{PREFIX}competitions"


def event(event_id: str) -> str:
    """Hash: a competition's definition (field ``definition``, JSON), its ``state`` and ``updated_at``."""
    return f"{PREFIX}competition:{event_id}"


def event_slots(event_id: str) -> str:
    """Hash: an event's planned matches, slot key -> the slot (JSON): its bots, state and match id."""
    return f"{PREFIX}competition:{event_id}:slots"


def event_seed(event_id: str) -> str:
    """String: the event's secret seed, from which each table's match seeds derive (never listed)."""
    return f"{PREFIX}competition:{event_id}:seed"
