from referee.wire._generated.arena.v1 import match_pb2 as _match_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RefusalCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REFUSAL_CODE_UNSPECIFIED: _ClassVar[RefusalCode]
    REFUSAL_CODE_SYNTAX: _ClassVar[RefusalCode]
    REFUSAL_CODE_ILLEGAL: _ClassVar[RefusalCode]
    REFUSAL_CODE_STALE_TURN: _ClassVar[RefusalCode]
    REFUSAL_CODE_PERMISSION_DENIED: _ClassVar[RefusalCode]
    REFUSAL_CODE_UNKNOWN_MATCH: _ClassVar[RefusalCode]
    REFUSAL_CODE_MALFORMED: _ClassVar[RefusalCode]
REFUSAL_CODE_UNSPECIFIED: RefusalCode
REFUSAL_CODE_SYNTAX: RefusalCode
REFUSAL_CODE_ILLEGAL: RefusalCode
REFUSAL_CODE_STALE_TURN: RefusalCode
REFUSAL_CODE_PERMISSION_DENIED: RefusalCode
REFUSAL_CODE_UNKNOWN_MATCH: RefusalCode
REFUSAL_CODE_MALFORMED: RefusalCode

class PlayRequest(_message.Message):
    __slots__ = ("hello", "action", "ping", "actions")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    action: SubmitAction
    ping: Ping
    actions: ActionBatch
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., action: _Optional[_Union[SubmitAction, _Mapping]] = ..., ping: _Optional[_Union[Ping, _Mapping]] = ..., actions: _Optional[_Union[ActionBatch, _Mapping]] = ...) -> None: ...

class ActionBatch(_message.Message):
    __slots__ = ("actions",)
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    actions: _containers.RepeatedCompositeFieldContainer[SubmitAction]
    def __init__(self, actions: _Optional[_Iterable[_Union[SubmitAction, _Mapping]]] = ...) -> None: ...

class PlayResponse(_message.Message):
    __slots__ = ("welcome", "match_started", "turn", "accepted", "refused", "match_ended", "pong", "batch")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    MATCH_STARTED_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    MATCH_ENDED_FIELD_NUMBER: _ClassVar[int]
    PONG_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    welcome: Welcome
    match_started: MatchStarted
    turn: Turn
    accepted: ActionAccepted
    refused: ActionRefused
    match_ended: MatchEnded
    pong: Pong
    batch: ResponseBatch
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., match_started: _Optional[_Union[MatchStarted, _Mapping]] = ..., turn: _Optional[_Union[Turn, _Mapping]] = ..., accepted: _Optional[_Union[ActionAccepted, _Mapping]] = ..., refused: _Optional[_Union[ActionRefused, _Mapping]] = ..., match_ended: _Optional[_Union[MatchEnded, _Mapping]] = ..., pong: _Optional[_Union[Pong, _Mapping]] = ..., batch: _Optional[_Union[ResponseBatch, _Mapping]] = ...) -> None: ...

class ResponseBatch(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[PlayResponse]
    def __init__(self, messages: _Optional[_Iterable[_Union[PlayResponse, _Mapping]]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("bot_name", "bot_version", "sdk_version", "match_ids", "omit_view_json", "want_acks", "accept_batches")
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_VERSION_FIELD_NUMBER: _ClassVar[int]
    SDK_VERSION_FIELD_NUMBER: _ClassVar[int]
    MATCH_IDS_FIELD_NUMBER: _ClassVar[int]
    OMIT_VIEW_JSON_FIELD_NUMBER: _ClassVar[int]
    WANT_ACKS_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_BATCHES_FIELD_NUMBER: _ClassVar[int]
    bot_name: str
    bot_version: str
    sdk_version: str
    match_ids: _containers.RepeatedScalarFieldContainer[str]
    omit_view_json: bool
    want_acks: bool
    accept_batches: bool
    def __init__(self, bot_name: _Optional[str] = ..., bot_version: _Optional[str] = ..., sdk_version: _Optional[str] = ..., match_ids: _Optional[_Iterable[str]] = ..., omit_view_json: _Optional[bool] = ..., want_acks: _Optional[bool] = ..., accept_batches: _Optional[bool] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("session_id", "referee_version", "max_message_bytes", "batches")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    REFEREE_VERSION_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    referee_version: str
    max_message_bytes: int
    batches: bool
    def __init__(self, session_id: _Optional[str] = ..., referee_version: _Optional[str] = ..., max_message_bytes: _Optional[int] = ..., batches: _Optional[bool] = ...) -> None: ...

class MatchStarted(_message.Message):
    __slots__ = ("match_id", "game_id", "seat", "bot_names", "time_control", "seed_sha256", "rated")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    BOT_NAMES_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    SEED_SHA256_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    game_id: str
    seat: int
    bot_names: _containers.RepeatedScalarFieldContainer[str]
    time_control: _match_pb2.TimeControl
    seed_sha256: str
    rated: bool
    def __init__(self, match_id: _Optional[str] = ..., game_id: _Optional[str] = ..., seat: _Optional[int] = ..., bot_names: _Optional[_Iterable[str]] = ..., time_control: _Optional[_Union[_match_pb2.TimeControl, _Mapping]] = ..., seed_sha256: _Optional[str] = ..., rated: _Optional[bool] = ...) -> None: ...

class PlyRecord(_message.Message):
    __slots__ = ("ply", "actor", "action")
    PLY_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ply: int
    actor: int
    action: str
    def __init__(self, ply: _Optional[int] = ..., actor: _Optional[int] = ..., action: _Optional[str] = ...) -> None: ...

class Turn(_message.Message):
    __slots__ = ("match_id", "seat", "turn_id", "ply", "history", "view_json", "legal_actions", "move_ms", "time_bank_ms")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    PLY_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    VIEW_JSON_FIELD_NUMBER: _ClassVar[int]
    LEGAL_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    MOVE_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_BANK_MS_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    turn_id: int
    ply: int
    history: _containers.RepeatedCompositeFieldContainer[PlyRecord]
    view_json: str
    legal_actions: _containers.RepeatedScalarFieldContainer[str]
    move_ms: int
    time_bank_ms: int
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ..., turn_id: _Optional[int] = ..., ply: _Optional[int] = ..., history: _Optional[_Iterable[_Union[PlyRecord, _Mapping]]] = ..., view_json: _Optional[str] = ..., legal_actions: _Optional[_Iterable[str]] = ..., move_ms: _Optional[int] = ..., time_bank_ms: _Optional[int] = ...) -> None: ...

class SubmitAction(_message.Message):
    __slots__ = ("match_id", "seat", "turn_id", "action", "note")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    turn_id: int
    action: str
    note: str
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ..., turn_id: _Optional[int] = ..., action: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class ActionAccepted(_message.Message):
    __slots__ = ("match_id", "seat", "turn_id", "action", "think_ms", "note_reason")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    THINK_MS_FIELD_NUMBER: _ClassVar[int]
    NOTE_REASON_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    turn_id: int
    action: str
    think_ms: int
    note_reason: str
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ..., turn_id: _Optional[int] = ..., action: _Optional[str] = ..., think_ms: _Optional[int] = ..., note_reason: _Optional[str] = ...) -> None: ...

class ActionRefused(_message.Message):
    __slots__ = ("match_id", "seat", "turn_id", "action", "code", "reason", "remaining_ms")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REMAINING_MS_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    turn_id: int
    action: str
    code: RefusalCode
    reason: str
    remaining_ms: int
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ..., turn_id: _Optional[int] = ..., action: _Optional[str] = ..., code: _Optional[_Union[RefusalCode, str]] = ..., reason: _Optional[str] = ..., remaining_ms: _Optional[int] = ...) -> None: ...

class MatchEnded(_message.Message):
    __slots__ = ("result", "history")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    result: _match_pb2.MatchResult
    history: _containers.RepeatedCompositeFieldContainer[PlyRecord]
    def __init__(self, result: _Optional[_Union[_match_pb2.MatchResult, _Mapping]] = ..., history: _Optional[_Iterable[_Union[PlyRecord, _Mapping]]] = ...) -> None: ...

class Ping(_message.Message):
    __slots__ = ("nonce",)
    NONCE_FIELD_NUMBER: _ClassVar[int]
    nonce: int
    def __init__(self, nonce: _Optional[int] = ...) -> None: ...

class Pong(_message.Message):
    __slots__ = ("nonce",)
    NONCE_FIELD_NUMBER: _ClassVar[int]
    nonce: int
    def __init__(self, nonce: _Optional[int] = ...) -> None: ...
