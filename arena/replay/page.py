"""The replay page: one HTML file with its style, script and data inline (no network, no fonts to fetch).

The markup, style and script are files beside this module (``assets/replay.html``, ``replay.css``,
``replay.js``; the wheel carries them as package data); the game's drawing (``arena.replay.drawing``)
adds its parts of the script and the style. The page data (``arena.replay.frames``) goes
in a ``<script type="application/json">`` element, written so that nothing in it (a bot's name, a
refused action) can end that element or be read as markup: ``<``, ``>`` and ``&`` are JSON escapes.
A Content-Security-Policy forbids every fetch, so the page cannot reach the network even by mistake.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from arena.replay.drawing import drawing_for
from arena.replay.frames import replay_data
from referee import games

_PLACEHOLDER = re.compile(r"\{\{[A-Z]+\}\}")
_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}


@cache
def asset(name: str) -> str:
    """The text of one of the page's files (``assets/NAME``)."""
    return (resources.files("arena.replay") / "assets" / name).read_text(encoding="utf-8")


def script_json(value: Any) -> str:
    """``value`` as JSON that is safe inside a ``<script>`` element of an HTML page."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).translate(_JSON_ESCAPES)


def title_of(data: dict[str, Any]) -> str:
    header = data["header"]
    names = " vs ".join(s["bot_name"] for s in header["seats"])
    return f"{header['game_id']}: {names} ({header['match_id']})"


def page_html(data: dict[str, Any]) -> str:
    """The replay page of ``replay_data``'s output, with the script and style of the game's drawing (the one
    its registration names) before the page's own script and after its style."""
    drawing = drawing_for(games.get(data["game"]["game_id"]))
    parts = {
        "{{TITLE}}": html.escape(title_of(data)),
        "{{STYLE}}": asset("replay.css") + drawing.style,
        "{{DATA}}": script_json(data),
        "{{SCRIPT}}": (drawing.script + "\n" if drawing.script else "") + asset("replay.js"),
    }
    # One pass over the template: a placeholder's text inside a value (a bot named "{{SCRIPT}}") stays text.
    return _PLACEHOLDER.sub(lambda m: parts[m.group()], asset("replay.html"))


def replay_html(lines: Sequence[str | bytes]) -> str:
    """The replay page of a transcript (its lines): TranscriptError if the first line is no usable header."""
    return page_html(replay_data(lines))


def write_replay(lines: Sequence[str | bytes], path: str | Path) -> Path:
    """Write the replay page of a transcript's lines to ``path`` (its folder is made); the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(replay_html(lines), encoding="utf-8")
    return out


# ----------------------------------------------------------------------- the page on a website


@cache
def body_markup() -> str:
    """The page's markup between ``<body>`` and its data: what a website serving the replay under its own
    headers (``arena.web.live``) puts in its page, beside the script and style it serves as files."""
    page = asset("replay.html")
    start = page.index(">", page.index("<body")) + 1
    return page[start : page.index('<script type="application/json"')].strip("\n")


@cache
def error_script() -> str:
    """The page's first script, which collects its script errors (``window.__replayErrors``): it must run
    before anything else, so a website inlines it (with its nonce) rather than serving it as a file."""
    page = asset("replay.html")
    start = page.index(">", page.index("<script>")) + 1
    return page[start : page.index("</script>", start)].strip("\n")


@cache
def site_script(game_id: str) -> str:
    """The replay's script for one game as a file: the game's drawing's part, then the page's own."""
    drawing = drawing_for(games.get(game_id))
    return (drawing.script + "\n" if drawing.script else "") + asset("replay.js")


@cache
def site_style(game_id: str) -> str:
    """The replay's style for one game as a file: the page's own, then the game's drawing's."""
    return asset("replay.css") + drawing_for(games.get(game_id)).style
