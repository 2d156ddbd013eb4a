"""Replays: a transcript as one self-contained HTML page that replays the match in any browser, offline.

``replay_html(lines)`` gives the page of a transcript's lines, ``write_replay(lines, path)`` writes it.
The positions come from replaying the transcript through the engines (``arena.replay.frames``); the page
(``arena.replay.page``, its script, style and markup in ``assets/``) only draws them.
"""

from __future__ import annotations

from arena.replay.frames import replay_data
from arena.replay.page import replay_html, write_replay

__all__ = ["replay_data", "replay_html", "write_replay"]
