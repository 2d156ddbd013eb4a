"""The arena's tokens: how they are made (a bot's, an owner's, a local arena's admin token: here and
nowhere else, so that every token the arena hands out has the strength checked below) and how strong a
secret is: the admin token a deployment is started with must be worth guessing at no better than 32
random bytes.

The estimate is honest rather than clever: the characters of the token (a known prefix such as ``arena_``
removed) are placed in the smallest usual alphabet that holds them all (hex, base64url, printable ASCII),
and length times that alphabet's bits per character must reach 256. Strings with few distinct characters,
made of one short piece repeated, or mostly runs of neighbouring characters (``abcd...``, ``0123...``) are
refused whatever their length, and so is every example value written in the repository's docs.
"""

from __future__ import annotations

import itertools
import math
import secrets
import string
from typing import Final

MIN_BITS: Final = 256
BOT_PREFIX: Final = "arena_"
OWNER_PREFIX: Final = "arena_owner_"
ADMIN_PREFIX: Final = "arena_admin_"
KNOWN_PREFIXES: Final = (ADMIN_PREFIX, OWNER_PREFIX, BOT_PREFIX)  # longest first: "arena_" begins them all
EXAMPLES: Final = frozenset({"change-me", "changeme", "secret", "password", "admin", "token"})
HOW: Final = 'make one with: python -c "import secrets; print(secrets.token_urlsafe(32))" (or openssl rand -hex 32)'
_ALPHABETS: Final = (
    (frozenset(string.hexdigits), 4.0),
    (frozenset(string.ascii_letters + string.digits + "-_"), 6.0),
    (frozenset(string.ascii_letters + string.digits + "+/="), 6.0),
    (frozenset(string.printable.strip()), math.log2(94)),
)


def _new(prefix: str) -> str:
    """32 random bytes, base64url, after ``prefix`` (which says whose token it is to a person reading it)."""
    return prefix + secrets.token_urlsafe(32)


def new_bot_token() -> str:
    """A bot's token, shown once (registration, rotation); Redis keeps its SHA-256 only."""
    return _new(BOT_PREFIX)


def new_owner_token() -> str:
    """An owner's token, shown once (creation, rotation); Redis keeps its SHA-256 only."""
    return _new(OWNER_PREFIX)


def new_admin_token() -> str:
    """The admin token of a local arena that was given none (``arena local``)."""
    return _new(ADMIN_PREFIX)


def estimated_bits(token: str) -> float:
    """Bits of randomness the token can hold at most: its length times its alphabet's bits per character."""
    body = token
    for prefix in KNOWN_PREFIXES:
        if body.startswith(prefix):
            body = body[len(prefix) :]
            break
    chars = set(body)
    for alphabet, bits in _ALPHABETS:
        if chars <= alphabet:
            return len(body) * bits
    return len(body) * 7.0


def weak_token_reason(token: str, what: str = "the admin token") -> str | None:
    """Why ``token`` is too weak to guard the arena (a message naming ``what`` and how to make a good
    one), or None when it will do."""
    if not token:
        return f"{what} is empty; {HOW}"
    if token.strip().lower() in EXAMPLES:
        return f"{what} is the example value {token.strip()!r} from the docs; {HOW}"
    body = token
    for prefix in KNOWN_PREFIXES:
        body = body.removeprefix(prefix)
    if len(set(body)) < 12:
        return f"{what} uses only {len(set(body))} distinct characters: it is not random; {HOW}"
    for period in range(1, len(body) // 2 + 1):
        if len(body) % period == 0 and body == body[:period] * (len(body) // period):
            return f"{what} is one piece repeated: it is not random; {HOW}"
    steps = sum(abs(ord(a) - ord(b)) <= 1 for a, b in itertools.pairwise(body))
    if steps * 2 > len(body):  # 'abcdef...', '0123...', 'aabbcc...': random text has few such neighbours
        return f"{what} is mostly a run of neighbouring characters: it is not random; {HOW}"
    bits = estimated_bits(token)
    if bits < MIN_BITS:
        return f"{what} holds at most {bits:.0f} bits of randomness; {MIN_BITS} (32 random bytes) are needed; {HOW}"
    return None
