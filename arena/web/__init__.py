"""The arena's website (``arena web``): leaderboards, bots, matches, replays and live matches for anyone
with a browser, and the same data as JSON under ``/api/v1``.

It reads the arena's Redis (and the transcript archive) and writes nothing, and keeps no state of its own
between requests, so any number of replicas serve behind a load balancer. It sits beside the local arena:
it uses the match service's and the ladder's stores to read, and nothing of the service uses it.
"""
