"""The one mapping from the gateway's refusals (the stores' exceptions) to gRPC status codes.

The stores (registry, owners, match store and queue, archive) raise exceptions that say why nothing was
done, one type per reason (never a message to read); the gateway's ``_call`` turns each into its status
here, with the exception's message as the details, so a new call gets the same code for the same reason.
Redis being away is not a refusal: ``_call`` answers it UNAVAILABLE (``arena.redis_client.TROUBLE``).
"""

from __future__ import annotations

from typing import Final

import grpc

from arena.service.archive import ArchiveError
from arena.service.matches import MatchRequestError, UnknownMatchError
from arena.service.owners import (
    DuplicateOwnerError,
    OwnerBusyError,
    OwnerError,
    OwnerGoneError,
    OwnerQuotaError,
    ReservedNameError,
    UnknownOwnerError,
)
from arena.service.queue import DuplicateMatchError
from arena.service.registry import DuplicateBotError, RegistryError, RetiredBotError, UnknownBotError

STATUS: Final[dict[type[Exception], grpc.StatusCode]] = {
    RegistryError: grpc.StatusCode.INVALID_ARGUMENT,
    DuplicateBotError: grpc.StatusCode.ALREADY_EXISTS,
    UnknownBotError: grpc.StatusCode.NOT_FOUND,
    RetiredBotError: grpc.StatusCode.FAILED_PRECONDITION,
    OwnerError: grpc.StatusCode.INVALID_ARGUMENT,
    DuplicateOwnerError: grpc.StatusCode.ALREADY_EXISTS,
    UnknownOwnerError: grpc.StatusCode.NOT_FOUND,
    OwnerGoneError: grpc.StatusCode.UNAUTHENTICATED,  # the caller's own account went away under its token
    ReservedNameError: grpc.StatusCode.PERMISSION_DENIED,  # the admin may
    OwnerQuotaError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    OwnerBusyError: grpc.StatusCode.ABORTED,  # retry
    MatchRequestError: grpc.StatusCode.INVALID_ARGUMENT,
    UnknownMatchError: grpc.StatusCode.NOT_FOUND,
    DuplicateMatchError: grpc.StatusCode.ALREADY_EXISTS,
    ArchiveError: grpc.StatusCode.DATA_LOSS,  # Redis says archived; the file is not there (or no archive here)
}
REFUSALS: Final = tuple(STATUS)


def status_of(error: Exception) -> grpc.StatusCode:
    """The status of a refusal: that of its most specific class in ``STATUS`` (the class's own, else its
    nearest base's)."""
    return next(STATUS[c] for c in type(error).__mro__ if c in STATUS)
