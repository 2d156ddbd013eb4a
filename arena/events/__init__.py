"""Competitions on the arena: events with frozen entrants (``model``, ``store``), their matches queued
beside the ladder's (``scheduler``), their standings (``standings``, with the whole-event fit of
``rating``), the admin's ``EventService`` (``service``, ``client``).

``formats`` and ``rating`` are pure and shared with local tournaments (``arena.local.tournament``). The
package imports the match service and the ladder, never the local arena, the website or the CLI.
"""
