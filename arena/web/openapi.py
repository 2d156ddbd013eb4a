"""The OpenAPI 3 description of /api/v1 (``arena.web.api``), written by hand as the routes are: a test
holds every route of ``api`` in it and every path of it in ``api``. Version "v1" like the proto's package
(``arena.v1``): fields may be added; a change that breaks a client takes /api/v2."""

from __future__ import annotations

from typing import Any, Final

from referee import games
from referee.wire.values import MatchStatus


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _param(name: str, where: str, schema: dict[str, Any], text: str, required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": where, "required": required or where == "path", "schema": schema, "description": text}


def _json(schema: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "description": text,
        "headers": {"ETag": {"schema": {"type": "string"}}},
        "content": {"application/json": {"schema": schema}},
    }


# fmt: off
_NOT_MODIFIED: Final = {"description": "Not modified: If-None-Match named the current ETag"}
_ERROR: Final = {"description": "An error", "content": {"application/json": {"schema": _ref("Error")}}}
_IF_NONE_MATCH: Final = _param("If-None-Match", "header", {"type": "string"}, "an ETag this client holds")
_GAME = _param("game_id", "path", {"type": "string", "enum": list(games.GAME_IDS)}, "a game id")
_MATCH_ID = _param("match_id", "path", {"type": "string"}, "a match id")
_NUM = {"type": "number"}
_INT = {"type": "integer"}
_STR = {"type": "string"}


def _get(summary: str, params: list[dict[str, Any]], ok: dict[str, Any]) -> dict[str, Any]:
    return {"get": {"summary": summary, "parameters": [*params, _IF_NONE_MATCH],
                    "responses": {"200": ok, "304": _NOT_MODIFIED, "400": _ERROR, "404": _ERROR,
                                  "503": _ERROR}}}


_ROW: Final = {"type": "object", "properties": {
    "name": _STR, "version": _STR, "rating": _NUM, "error": {**_NUM, "description": "half-width of the 95% interval"},
    "provisional": {"type": "boolean", "description": "fewer than 15 games"}, "games": _INT, "wins": _INT,
    "draws": _INT, "losses": _INT, "last_played": {**_NUM, "description": "unix time (0: never)"}}}

_MATCH: Final = {"type": "object", "properties": {
    "match_id": _STR, "game_id": _STR, "state": {"type": "string", "enum": [*MatchStatus, ""]},
    "bot_names": {"type": "array", "items": _STR, "description": "by seat"}, "rated": {"type": "boolean"},
    "priority": _STR, "enqueued_at": _NUM, "started_at": _NUM, "finished_at": _NUM, "seed_sha256": _STR,
    "result": {"type": "object", "nullable": True,
               "description": "the stored result (end_reason, seats with ranks and scores, the seed after the "
                              "end)"}}}

OPENAPI: Final[dict[str, Any]] = {
    "openapi": "3.0.3",
    "info": {
        "title": "Bot arena API", "version": "v1",
        "description": "The arena's public data, read only: leaderboards, bots, matches, transcripts, the queue. "
                       "Every answer has an ETag; send If-None-Match to get 304 when it has not changed. "
                       "Nothing here reveals a token, a token hash, an owner's private data or a seat's "
                       "private text.",
    },
    "servers": [{"url": "/api/v1"}],
    "paths": {
        "/openapi.json": _get("This document", [], _json({"type": "object"}, "the OpenAPI document")),
        "/games": _get("The games and their ladders' sizes", [], _json({"type": "object", "properties": {
            "games": {"type": "array", "items": {"type": "object", "properties": {
                "game_id": _STR, "players": _INT, "ladder_versions": _INT}}}}}, "the games")),
        "/ladder/{game_id}": _get("A page of a game's leaderboard, best first", [
            _GAME,
            _param("offset", "query", {**_INT, "minimum": 0, "default": 0}, "places to skip"),
            _param("limit", "query", {**_INT, "minimum": 1, "maximum": 200, "default": 50}, "rows"),
        ], _json(_ref("Board"), "the leaderboard page")),
        "/bots/{name}": _get("A bot: public record, state, versions, rating history, recent matches, head to head", [
            _param("name", "path", _STR, "the bot's name"),
        ], _json(_ref("Bot"), "the bot")),
        "/matches": _get("Matches, newest first (by request time)", [
            _param("game", "query", {"type": "string", "enum": list(games.GAME_IDS)}, "only this game"),
            _param("bot", "query", _STR, "only matches seating this bot"),
            _param("state", "query", {"type": "string", "enum": list(MatchStatus)}, "only matches in this state"),
            _param("before", "query", _NUM, "cursor: matches requested before this time (a page's next_before)"),
            _param("limit", "query", {**_INT, "minimum": 1, "maximum": 200, "default": 50}, "matches"),
        ], _json({"type": "object", "properties": {
            "matches": {"type": "array", "items": _ref("Match")},
            "next_before": {**_NUM, "nullable": True, "description": "the next page's cursor (null: last page)"},
            "next": {**_STR, "description": "the next page's URL (absent on the last)"}}},
            "a page of matches")),
        "/matches/{match_id}": _get("A match's public record", [_MATCH_ID], _json(_ref("Match"), "the match")),
        "/matches/{match_id}/transcript": _get("A finished match's public transcript (JSON Lines)", [
            _MATCH_ID,
            _param("offset", "query", {**_INT, "minimum": 0, "default": 0}, "first line (0: the header)"),
            _param("limit", "query", {**_INT, "minimum": 1, "maximum": 10000, "default": 1000}, "lines"),
        ], {"description": "the lines: other seats' refusals keep seat, ply and code but never the refused text "
                           "nor the referee's reason",
            "headers": {"ETag": {"schema": _STR}, "X-Total-Lines": {"schema": _INT},
                        "Link": {"schema": _STR, "description": 'the next page, rel="next"'}},
            "content": {"application/x-ndjson": {"schema": _STR}}}),
        "/queue": _get("What waits for a worker and what runs", [], _json({"type": "object", "properties": {
            "waiting": {"type": "array", "items": _ref("Match")},
            "running": {"type": "array", "items": _ref("Match")}}}, "the queue")),
    },
    "components": {"schemas": {
        "Error": {"type": "object", "properties": {"error": {"type": "object", "properties": {
            "status": _INT, "message": _STR}}}},
        "Row": _ROW,
        "Match": _MATCH,
        "Board": {"type": "object", "properties": {
            "game_id": _STR, "total": {**_INT, "description": "bot versions on the ladder"}, "offset": _INT,
            "limit": _INT, "next": {**_STR, "description": "the next page's URL (absent on the last)"},
            "rows": {"type": "array", "items": {"allOf": [_ROW, {"type": "object", "properties": {
                "rank": _INT, "owner": _STR,
                "trend": {"type": "array", "items": _NUM, "description": "latest ratings, oldest first"}}}]}}}},
        "Bot": {"type": "object", "properties": {
            "bot": {"type": "object", "description": "name, owner, game_ids, enabled, version, max_concurrent, "
                                                     "created_at, last_seen, online, matches_running, retired_at"},
            "state": {"type": "string", "enum": ["retired", "disabled", "paused", "validating", "online", "offline"]},
            "state_reason": _STR,
            "versions": {"type": "array", "items": {"allOf": [_ROW, {"type": "object", "properties": {
                "game_id": _STR, "rank": _INT}}]}},
            "history": {"type": "object", "description": "game id -> [{version, points: [[finished_at, rating, "
                                                         "match_id], ...]}] (the latest 500 points a version)"},
            "recent_matches": {"type": "array", "items": _ref("Match")},
            "head_to_head": {"type": "object", "description": "game id -> [{version, opponent, opponent_version, "
                                                              "wins, draws, losses}], most played first"}}},
    }},
}
# fmt: on
