"""The gateway's one table of refusals to status codes (``arena.service.statuses``): each store's
exception type has its code, a subclass without its own entry gets its nearest base's, and no store
defines a refusal the table does not know (it would reach a client as UNKNOWN)."""

from __future__ import annotations

import grpc
import pytest

from arena.service import archive, matches, owners, queue, registry
from arena.service.statuses import REFUSALS, STATUS, status_of


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (registry.RegistryError("bad name"), grpc.StatusCode.INVALID_ARGUMENT),
        (registry.DuplicateBotError("exists"), grpc.StatusCode.ALREADY_EXISTS),
        (registry.UnknownBotError("no bot"), grpc.StatusCode.NOT_FOUND),
        (registry.RetiredBotError("retired"), grpc.StatusCode.FAILED_PRECONDITION),
        (owners.OwnerError("bad name"), grpc.StatusCode.INVALID_ARGUMENT),
        (owners.DuplicateOwnerError("exists"), grpc.StatusCode.ALREADY_EXISTS),
        (owners.UnknownOwnerError("no owner"), grpc.StatusCode.NOT_FOUND),
        (owners.OwnerGoneError("gone"), grpc.StatusCode.UNAUTHENTICATED),
        (owners.ReservedNameError("reserved"), grpc.StatusCode.PERMISSION_DENIED),
        (owners.OwnerQuotaError("full"), grpc.StatusCode.RESOURCE_EXHAUSTED),
        (owners.OwnerBusyError("busy"), grpc.StatusCode.ABORTED),
        (matches.MatchRequestError("bad"), grpc.StatusCode.INVALID_ARGUMENT),
        (matches.UnknownMatchError("no match"), grpc.StatusCode.NOT_FOUND),
        (queue.DuplicateMatchError("exists"), grpc.StatusCode.ALREADY_EXISTS),
        (archive.ArchiveError("file gone"), grpc.StatusCode.DATA_LOSS),
    ],
)
def test_each_refusal_has_its_code(error: Exception, code: grpc.StatusCode) -> None:
    assert isinstance(error, REFUSALS) and status_of(error) is code


def test_a_subclass_takes_its_nearest_bases_code() -> None:
    class Newer(owners.UnknownOwnerError):
        pass

    assert status_of(Newer("x")) is grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("module", [registry, owners, matches, queue, archive], ids=lambda m: m.__name__)
def test_every_refusal_a_store_defines_is_in_the_table(module: object) -> None:
    """Exceptions named ``...Error`` in a store module that a gateway call may raise; a queue's lease
    loss is the worker's, never a client's."""
    internal = {queue.LeaseLostError}
    defined = {v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Exception)
               and v.__module__ == getattr(module, "__name__", "") and v not in internal}  # fmt: skip
    assert defined <= set(STATUS), sorted(c.__name__ for c in defined - set(STATUS))
