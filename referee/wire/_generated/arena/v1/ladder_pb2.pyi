from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RatingStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RATING_STATUS_UNSPECIFIED: _ClassVar[RatingStatus]
    RATING_STATUS_PROVISIONAL: _ClassVar[RatingStatus]
    RATING_STATUS_ESTABLISHED: _ClassVar[RatingStatus]
RATING_STATUS_UNSPECIFIED: RatingStatus
RATING_STATUS_PROVISIONAL: RatingStatus
RATING_STATUS_ESTABLISHED: RatingStatus

class LadderRow(_message.Message):
    __slots__ = ("rank", "bot_name", "bot_version", "rating", "error", "games", "wins", "draws", "losses", "last_played", "status", "info", "owner", "fit_rating", "fit_sd", "fit_games")
    RANK_FIELD_NUMBER: _ClassVar[int]
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_VERSION_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    WINS_FIELD_NUMBER: _ClassVar[int]
    DRAWS_FIELD_NUMBER: _ClassVar[int]
    LOSSES_FIELD_NUMBER: _ClassVar[int]
    LAST_PLAYED_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    FIT_RATING_FIELD_NUMBER: _ClassVar[int]
    FIT_SD_FIELD_NUMBER: _ClassVar[int]
    FIT_GAMES_FIELD_NUMBER: _ClassVar[int]
    rank: int
    bot_name: str
    bot_version: str
    rating: float
    error: float
    games: int
    wins: int
    draws: int
    losses: int
    last_played: float
    status: RatingStatus
    info: float
    owner: str
    fit_rating: float
    fit_sd: float
    fit_games: int
    def __init__(self, rank: _Optional[int] = ..., bot_name: _Optional[str] = ..., bot_version: _Optional[str] = ..., rating: _Optional[float] = ..., error: _Optional[float] = ..., games: _Optional[int] = ..., wins: _Optional[int] = ..., draws: _Optional[int] = ..., losses: _Optional[int] = ..., last_played: _Optional[float] = ..., status: _Optional[_Union[RatingStatus, str]] = ..., info: _Optional[float] = ..., owner: _Optional[str] = ..., fit_rating: _Optional[float] = ..., fit_sd: _Optional[float] = ..., fit_games: _Optional[int] = ...) -> None: ...

class GetLeaderboardRequest(_message.Message):
    __slots__ = ("game_id", "limit", "offset")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    limit: int
    offset: int
    def __init__(self, game_id: _Optional[str] = ..., limit: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class GetLeaderboardResponse(_message.Message):
    __slots__ = ("rows", "total")
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[LadderRow]
    total: int
    def __init__(self, rows: _Optional[_Iterable[_Union[LadderRow, _Mapping]]] = ..., total: _Optional[int] = ...) -> None: ...

class LadderRatingPoint(_message.Message):
    __slots__ = ("finished_at", "rating", "match_id")
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    finished_at: float
    rating: float
    match_id: str
    def __init__(self, finished_at: _Optional[float] = ..., rating: _Optional[float] = ..., match_id: _Optional[str] = ...) -> None: ...

class LadderRatingSeries(_message.Message):
    __slots__ = ("bot_name", "bot_version", "points")
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_VERSION_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    bot_name: str
    bot_version: str
    points: _containers.RepeatedCompositeFieldContainer[LadderRatingPoint]
    def __init__(self, bot_name: _Optional[str] = ..., bot_version: _Optional[str] = ..., points: _Optional[_Iterable[_Union[LadderRatingPoint, _Mapping]]] = ...) -> None: ...

class GetRatingHistoryRequest(_message.Message):
    __slots__ = ("game_id", "bot_name", "bot_version")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_VERSION_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    bot_name: str
    bot_version: str
    def __init__(self, game_id: _Optional[str] = ..., bot_name: _Optional[str] = ..., bot_version: _Optional[str] = ...) -> None: ...

class GetRatingHistoryResponse(_message.Message):
    __slots__ = ("series",)
    SERIES_FIELD_NUMBER: _ClassVar[int]
    series: _containers.RepeatedCompositeFieldContainer[LadderRatingSeries]
    def __init__(self, series: _Optional[_Iterable[_Union[LadderRatingSeries, _Mapping]]] = ...) -> None: ...

class LadderHeadToHead(_message.Message):
    __slots__ = ("a_name", "a_version", "b_name", "b_version", "a_wins", "draws", "b_wins")
    A_NAME_FIELD_NUMBER: _ClassVar[int]
    A_VERSION_FIELD_NUMBER: _ClassVar[int]
    B_NAME_FIELD_NUMBER: _ClassVar[int]
    B_VERSION_FIELD_NUMBER: _ClassVar[int]
    A_WINS_FIELD_NUMBER: _ClassVar[int]
    DRAWS_FIELD_NUMBER: _ClassVar[int]
    B_WINS_FIELD_NUMBER: _ClassVar[int]
    a_name: str
    a_version: str
    b_name: str
    b_version: str
    a_wins: int
    draws: int
    b_wins: int
    def __init__(self, a_name: _Optional[str] = ..., a_version: _Optional[str] = ..., b_name: _Optional[str] = ..., b_version: _Optional[str] = ..., a_wins: _Optional[int] = ..., draws: _Optional[int] = ..., b_wins: _Optional[int] = ...) -> None: ...

class GetHeadToHeadRequest(_message.Message):
    __slots__ = ("game_id", "bot_name")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    bot_name: str
    def __init__(self, game_id: _Optional[str] = ..., bot_name: _Optional[str] = ...) -> None: ...

class GetHeadToHeadResponse(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[LadderHeadToHead]
    def __init__(self, records: _Optional[_Iterable[_Union[LadderHeadToHead, _Mapping]]] = ...) -> None: ...
