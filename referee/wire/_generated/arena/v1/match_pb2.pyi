from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EndReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    END_REASON_UNSPECIFIED: _ClassVar[EndReason]
    END_REASON_COMPLETED: _ClassVar[EndReason]
    END_REASON_ABORTED: _ClassVar[EndReason]
    END_REASON_FORFEIT: _ClassVar[EndReason]

class SeatStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEAT_STATUS_UNSPECIFIED: _ClassVar[SeatStatus]
    SEAT_STATUS_ACTIVE: _ClassVar[SeatStatus]
    SEAT_STATUS_FORFEITED: _ClassVar[SeatStatus]
END_REASON_UNSPECIFIED: EndReason
END_REASON_COMPLETED: EndReason
END_REASON_ABORTED: EndReason
END_REASON_FORFEIT: EndReason
SEAT_STATUS_UNSPECIFIED: SeatStatus
SEAT_STATUS_ACTIVE: SeatStatus
SEAT_STATUS_FORFEITED: SeatStatus

class TimeControl(_message.Message):
    __slots__ = ("first_move_ms", "move_ms", "bank_ms", "grace_ms", "disconnect_grace_ms", "join_timeout_ms")
    FIRST_MOVE_MS_FIELD_NUMBER: _ClassVar[int]
    MOVE_MS_FIELD_NUMBER: _ClassVar[int]
    BANK_MS_FIELD_NUMBER: _ClassVar[int]
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    DISCONNECT_GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    JOIN_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    first_move_ms: int
    move_ms: int
    bank_ms: int
    grace_ms: int
    disconnect_grace_ms: int
    join_timeout_ms: int
    def __init__(self, first_move_ms: _Optional[int] = ..., move_ms: _Optional[int] = ..., bank_ms: _Optional[int] = ..., grace_ms: _Optional[int] = ..., disconnect_grace_ms: _Optional[int] = ..., join_timeout_ms: _Optional[int] = ...) -> None: ...

class SeatSpec(_message.Message):
    __slots__ = ("seat", "bot_name", "token_sha256")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_SHA256_FIELD_NUMBER: _ClassVar[int]
    seat: int
    bot_name: str
    token_sha256: str
    def __init__(self, seat: _Optional[int] = ..., bot_name: _Optional[str] = ..., token_sha256: _Optional[str] = ...) -> None: ...

class MatchSpec(_message.Message):
    __slots__ = ("match_id", "game_id", "seats", "seed", "time_control", "rated")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    game_id: str
    seats: _containers.RepeatedCompositeFieldContainer[SeatSpec]
    seed: str
    time_control: TimeControl
    rated: bool
    def __init__(self, match_id: _Optional[str] = ..., game_id: _Optional[str] = ..., seats: _Optional[_Iterable[_Union[SeatSpec, _Mapping]]] = ..., seed: _Optional[str] = ..., time_control: _Optional[_Union[TimeControl, _Mapping]] = ..., rated: _Optional[bool] = ...) -> None: ...

class SeatResult(_message.Message):
    __slots__ = ("seat", "bot_name", "bot_version", "score", "rank", "status", "strikes", "refusals")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_VERSION_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STRIKES_FIELD_NUMBER: _ClassVar[int]
    REFUSALS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    bot_name: str
    bot_version: str
    score: int
    rank: int
    status: SeatStatus
    strikes: int
    refusals: int
    def __init__(self, seat: _Optional[int] = ..., bot_name: _Optional[str] = ..., bot_version: _Optional[str] = ..., score: _Optional[int] = ..., rank: _Optional[int] = ..., status: _Optional[_Union[SeatStatus, str]] = ..., strikes: _Optional[int] = ..., refusals: _Optional[int] = ...) -> None: ...

class MatchResult(_message.Message):
    __slots__ = ("match_id", "game_id", "end_reason", "seats", "seed", "seed_sha256", "plies", "detail")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    END_REASON_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SEED_SHA256_FIELD_NUMBER: _ClassVar[int]
    PLIES_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    game_id: str
    end_reason: EndReason
    seats: _containers.RepeatedCompositeFieldContainer[SeatResult]
    seed: str
    seed_sha256: str
    plies: int
    detail: str
    def __init__(self, match_id: _Optional[str] = ..., game_id: _Optional[str] = ..., end_reason: _Optional[_Union[EndReason, str]] = ..., seats: _Optional[_Iterable[_Union[SeatResult, _Mapping]]] = ..., seed: _Optional[str] = ..., seed_sha256: _Optional[str] = ..., plies: _Optional[int] = ..., detail: _Optional[str] = ...) -> None: ...
