"""Bot names as people read them: two names that look alike are one name, and some names are the arena's.

``fold`` maps a name to the form that decides whether two names clash: case, the separators ``-``, ``_``
and ``.``, and the digits most often passed off as letters (``0`` as ``o``, ``1`` and ``i`` as ``l``) do
not count, so ``Strong``, ``s-trong`` and ``str0ng`` are all ``strong``. The registry keeps one key per
folded name (``keys.bot_name_fold``), so a look-alike is refused in the same step as a duplicate.
"""

from __future__ import annotations

from typing import Final

_SEPARATORS: Final = str.maketrans("", "", "-_.")
_LOOKALIKES: Final = str.maketrans({"0": "o", "1": "l", "i": "l"})

RESERVED: Final = frozenset({
    "arena", "admin", "administrator", "gateway", "referee", "worker", "ladder", "system", "root", "server",
    "random", "greedy", "strong", "reference", "house", "owner", "bot", "anonymous", "nobody", "chance",
})  # fmt: skip
"""Names only the admin registers bots under: the arena's own parts and roles, and its reference bots
(``random``, ``greedy``, ``strong``), so that no owner's bot passes for one of them."""


def fold(name: str) -> str:
    """The form of ``name`` that decides whether it clashes with another (see the module's doc)."""
    return name.casefold().translate(_SEPARATORS).translate(_LOOKALIKES)


_RESERVED_FOLDS: Final = frozenset(fold(n) for n in RESERVED)


def reserved(name: str) -> bool:
    """Whether ``name`` is, or looks like, one of ``RESERVED``."""
    return fold(name) in _RESERVED_FOLDS
