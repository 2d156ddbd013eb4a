from referee.wire._generated.arena.v1 import match_pb2 as _match_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MatchState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MATCH_STATE_UNSPECIFIED: _ClassVar[MatchState]
    MATCH_STATE_QUEUED: _ClassVar[MatchState]
    MATCH_STATE_RUNNING: _ClassVar[MatchState]
    MATCH_STATE_FINISHED: _ClassVar[MatchState]
MATCH_STATE_UNSPECIFIED: MatchState
MATCH_STATE_QUEUED: MatchState
MATCH_STATE_RUNNING: MatchState
MATCH_STATE_FINISHED: MatchState

class OwnerRecord(_message.Message):
    __slots__ = ("name", "max_bots", "bots", "created_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_BOTS_FIELD_NUMBER: _ClassVar[int]
    BOTS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_bots: int
    bots: int
    created_at: float
    def __init__(self, name: _Optional[str] = ..., max_bots: _Optional[int] = ..., bots: _Optional[int] = ..., created_at: _Optional[float] = ...) -> None: ...

class CreateOwnerRequest(_message.Message):
    __slots__ = ("name", "max_bots")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_BOTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_bots: int
    def __init__(self, name: _Optional[str] = ..., max_bots: _Optional[int] = ...) -> None: ...

class CreateOwnerResponse(_message.Message):
    __slots__ = ("owner", "token")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    owner: OwnerRecord
    token: str
    def __init__(self, owner: _Optional[_Union[OwnerRecord, _Mapping]] = ..., token: _Optional[str] = ...) -> None: ...

class ListOwnersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListOwnersResponse(_message.Message):
    __slots__ = ("owners",)
    OWNERS_FIELD_NUMBER: _ClassVar[int]
    owners: _containers.RepeatedCompositeFieldContainer[OwnerRecord]
    def __init__(self, owners: _Optional[_Iterable[_Union[OwnerRecord, _Mapping]]] = ...) -> None: ...

class SetOwnerMaxBotsRequest(_message.Message):
    __slots__ = ("name", "max_bots")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_BOTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_bots: int
    def __init__(self, name: _Optional[str] = ..., max_bots: _Optional[int] = ...) -> None: ...

class SetOwnerMaxBotsResponse(_message.Message):
    __slots__ = ("owner",)
    OWNER_FIELD_NUMBER: _ClassVar[int]
    owner: OwnerRecord
    def __init__(self, owner: _Optional[_Union[OwnerRecord, _Mapping]] = ...) -> None: ...

class RotateOwnerTokenRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RotateOwnerTokenResponse(_message.Message):
    __slots__ = ("token",)
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: str
    def __init__(self, token: _Optional[str] = ...) -> None: ...

class BotRecord(_message.Message):
    __slots__ = ("name", "owner", "game_ids", "enabled", "disabled_reason", "version", "online", "matches_running", "created_at", "last_seen", "max_concurrent", "ladder_paused", "retired_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    GAME_IDS_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    DISABLED_REASON_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ONLINE_FIELD_NUMBER: _ClassVar[int]
    MATCHES_RUNNING_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_FIELD_NUMBER: _ClassVar[int]
    LADDER_PAUSED_FIELD_NUMBER: _ClassVar[int]
    RETIRED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    owner: str
    game_ids: _containers.RepeatedScalarFieldContainer[str]
    enabled: bool
    disabled_reason: str
    version: str
    online: bool
    matches_running: int
    created_at: float
    last_seen: float
    max_concurrent: int
    ladder_paused: str
    retired_at: float
    def __init__(self, name: _Optional[str] = ..., owner: _Optional[str] = ..., game_ids: _Optional[_Iterable[str]] = ..., enabled: _Optional[bool] = ..., disabled_reason: _Optional[str] = ..., version: _Optional[str] = ..., online: _Optional[bool] = ..., matches_running: _Optional[int] = ..., created_at: _Optional[float] = ..., last_seen: _Optional[float] = ..., max_concurrent: _Optional[int] = ..., ladder_paused: _Optional[str] = ..., retired_at: _Optional[float] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("bot_version", "sdk_version", "no_ladder")
    BOT_VERSION_FIELD_NUMBER: _ClassVar[int]
    SDK_VERSION_FIELD_NUMBER: _ClassVar[int]
    NO_LADDER_FIELD_NUMBER: _ClassVar[int]
    bot_version: str
    sdk_version: str
    no_ladder: bool
    def __init__(self, bot_version: _Optional[str] = ..., sdk_version: _Optional[str] = ..., no_ladder: _Optional[bool] = ...) -> None: ...

class SessionEvent(_message.Message):
    __slots__ = ("welcome", "assigned", "heartbeat")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    ASSIGNED_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    welcome: SessionWelcome
    assigned: MatchAssigned
    heartbeat: Heartbeat
    def __init__(self, welcome: _Optional[_Union[SessionWelcome, _Mapping]] = ..., assigned: _Optional[_Union[MatchAssigned, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...

class SessionWelcome(_message.Message):
    __slots__ = ("bot_name", "session_id")
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    bot_name: str
    session_id: str
    def __init__(self, bot_name: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class MatchAssigned(_message.Message):
    __slots__ = ("match_id", "game_id", "seat", "referee_address", "route")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    REFEREE_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    game_id: str
    seat: int
    referee_address: str
    route: str
    def __init__(self, match_id: _Optional[str] = ..., game_id: _Optional[str] = ..., seat: _Optional[int] = ..., referee_address: _Optional[str] = ..., route: _Optional[str] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("server_time",)
    SERVER_TIME_FIELD_NUMBER: _ClassVar[int]
    server_time: float
    def __init__(self, server_time: _Optional[float] = ...) -> None: ...

class RegisterBotRequest(_message.Message):
    __slots__ = ("name", "owner", "game_ids", "max_concurrent")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    GAME_IDS_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_FIELD_NUMBER: _ClassVar[int]
    name: str
    owner: str
    game_ids: _containers.RepeatedScalarFieldContainer[str]
    max_concurrent: int
    def __init__(self, name: _Optional[str] = ..., owner: _Optional[str] = ..., game_ids: _Optional[_Iterable[str]] = ..., max_concurrent: _Optional[int] = ...) -> None: ...

class RegisterBotResponse(_message.Message):
    __slots__ = ("bot", "token")
    BOT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    bot: BotRecord
    token: str
    def __init__(self, bot: _Optional[_Union[BotRecord, _Mapping]] = ..., token: _Optional[str] = ...) -> None: ...

class RotateTokenRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RotateTokenResponse(_message.Message):
    __slots__ = ("token",)
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: str
    def __init__(self, token: _Optional[str] = ...) -> None: ...

class SetBotEnabledRequest(_message.Message):
    __slots__ = ("name", "enabled", "reason")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    enabled: bool
    reason: str
    def __init__(self, name: _Optional[str] = ..., enabled: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class SetBotEnabledResponse(_message.Message):
    __slots__ = ("bot",)
    BOT_FIELD_NUMBER: _ClassVar[int]
    bot: BotRecord
    def __init__(self, bot: _Optional[_Union[BotRecord, _Mapping]] = ...) -> None: ...

class RetireBotRequest(_message.Message):
    __slots__ = ("name", "reason")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    reason: str
    def __init__(self, name: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RetireBotResponse(_message.Message):
    __slots__ = ("bot",)
    BOT_FIELD_NUMBER: _ClassVar[int]
    bot: BotRecord
    def __init__(self, bot: _Optional[_Union[BotRecord, _Mapping]] = ...) -> None: ...

class AddBotGamesRequest(_message.Message):
    __slots__ = ("name", "game_ids")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GAME_IDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    game_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., game_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class AddBotGamesResponse(_message.Message):
    __slots__ = ("bot",)
    BOT_FIELD_NUMBER: _ClassVar[int]
    bot: BotRecord
    def __init__(self, bot: _Optional[_Union[BotRecord, _Mapping]] = ...) -> None: ...

class ListBotsRequest(_message.Message):
    __slots__ = ("game_id",)
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    def __init__(self, game_id: _Optional[str] = ...) -> None: ...

class ListBotsResponse(_message.Message):
    __slots__ = ("bots",)
    BOTS_FIELD_NUMBER: _ClassVar[int]
    bots: _containers.RepeatedCompositeFieldContainer[BotRecord]
    def __init__(self, bots: _Optional[_Iterable[_Union[BotRecord, _Mapping]]] = ...) -> None: ...

class MatchRecord(_message.Message):
    __slots__ = ("match_id", "game_id", "state", "bot_names", "rated", "priority", "enqueued_at", "started_at", "finished_at", "worker", "referee_address", "seed_sha256", "result")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    BOT_NAMES_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    REFEREE_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SEED_SHA256_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    game_id: str
    state: MatchState
    bot_names: _containers.RepeatedScalarFieldContainer[str]
    rated: bool
    priority: str
    enqueued_at: float
    started_at: float
    finished_at: float
    worker: str
    referee_address: str
    seed_sha256: str
    result: _match_pb2.MatchResult
    def __init__(self, match_id: _Optional[str] = ..., game_id: _Optional[str] = ..., state: _Optional[_Union[MatchState, str]] = ..., bot_names: _Optional[_Iterable[str]] = ..., rated: _Optional[bool] = ..., priority: _Optional[str] = ..., enqueued_at: _Optional[float] = ..., started_at: _Optional[float] = ..., finished_at: _Optional[float] = ..., worker: _Optional[str] = ..., referee_address: _Optional[str] = ..., seed_sha256: _Optional[str] = ..., result: _Optional[_Union[_match_pb2.MatchResult, _Mapping]] = ...) -> None: ...

class RequestMatchRequest(_message.Message):
    __slots__ = ("game_id", "bot_names", "seed", "rated", "time_control", "match_id")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    BOT_NAMES_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    bot_names: _containers.RepeatedScalarFieldContainer[str]
    seed: str
    rated: bool
    time_control: _match_pb2.TimeControl
    match_id: str
    def __init__(self, game_id: _Optional[str] = ..., bot_names: _Optional[_Iterable[str]] = ..., seed: _Optional[str] = ..., rated: _Optional[bool] = ..., time_control: _Optional[_Union[_match_pb2.TimeControl, _Mapping]] = ..., match_id: _Optional[str] = ...) -> None: ...

class RequestMatchResponse(_message.Message):
    __slots__ = ("match_id", "seed_sha256")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_SHA256_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seed_sha256: str
    def __init__(self, match_id: _Optional[str] = ..., seed_sha256: _Optional[str] = ...) -> None: ...

class DescribeMatchRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class DescribeMatchResponse(_message.Message):
    __slots__ = ("match",)
    MATCH_FIELD_NUMBER: _ClassVar[int]
    match: MatchRecord
    def __init__(self, match: _Optional[_Union[MatchRecord, _Mapping]] = ...) -> None: ...

class ListMatchesRequest(_message.Message):
    __slots__ = ("bot_name", "game_id", "since", "until", "limit", "state", "owner")
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    bot_name: str
    game_id: str
    since: float
    until: float
    limit: int
    state: MatchState
    owner: str
    def __init__(self, bot_name: _Optional[str] = ..., game_id: _Optional[str] = ..., since: _Optional[float] = ..., until: _Optional[float] = ..., limit: _Optional[int] = ..., state: _Optional[_Union[MatchState, str]] = ..., owner: _Optional[str] = ...) -> None: ...

class ListMatchesResponse(_message.Message):
    __slots__ = ("matches",)
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[MatchRecord]
    def __init__(self, matches: _Optional[_Iterable[_Union[MatchRecord, _Mapping]]] = ...) -> None: ...

class FollowMatchRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class FollowMatchResponse(_message.Message):
    __slots__ = ("transcript_line",)
    TRANSCRIPT_LINE_FIELD_NUMBER: _ClassVar[int]
    transcript_line: str
    def __init__(self, transcript_line: _Optional[str] = ...) -> None: ...

class GetTranscriptRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class GetTranscriptResponse(_message.Message):
    __slots__ = ("match_id", "jsonl", "full")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    JSONL_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    jsonl: str
    full: bool
    def __init__(self, match_id: _Optional[str] = ..., jsonl: _Optional[str] = ..., full: _Optional[bool] = ...) -> None: ...
