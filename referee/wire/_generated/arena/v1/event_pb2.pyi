from referee.wire._generated.arena.v1 import match_pb2 as _match_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EventEntrant(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class EventRecord(_message.Message):
    __slots__ = ("event_id", "game_id", "format", "entrants", "games_per_pairing", "time_control", "start_at", "rated", "rounds", "share", "grace_s", "created_at", "state", "matches_played", "matches_forfeited", "matches_remaining")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ENTRANTS_FIELD_NUMBER: _ClassVar[int]
    GAMES_PER_PAIRING_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    START_AT_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    GRACE_S_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MATCHES_PLAYED_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FORFEITED_FIELD_NUMBER: _ClassVar[int]
    MATCHES_REMAINING_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    game_id: str
    format: str
    entrants: _containers.RepeatedCompositeFieldContainer[EventEntrant]
    games_per_pairing: int
    time_control: _match_pb2.TimeControl
    start_at: float
    rated: bool
    rounds: int
    share: float
    grace_s: float
    created_at: float
    state: str
    matches_played: int
    matches_forfeited: int
    matches_remaining: int
    def __init__(self, event_id: _Optional[str] = ..., game_id: _Optional[str] = ..., format: _Optional[str] = ..., entrants: _Optional[_Iterable[_Union[EventEntrant, _Mapping]]] = ..., games_per_pairing: _Optional[int] = ..., time_control: _Optional[_Union[_match_pb2.TimeControl, _Mapping]] = ..., start_at: _Optional[float] = ..., rated: _Optional[bool] = ..., rounds: _Optional[int] = ..., share: _Optional[float] = ..., grace_s: _Optional[float] = ..., created_at: _Optional[float] = ..., state: _Optional[str] = ..., matches_played: _Optional[int] = ..., matches_forfeited: _Optional[int] = ..., matches_remaining: _Optional[int] = ...) -> None: ...

class CreateEventRequest(_message.Message):
    __slots__ = ("event_id", "game_id", "format", "entrants", "top", "games_per_pairing", "time_control", "start_at", "rated", "rounds", "share", "grace_s")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ENTRANTS_FIELD_NUMBER: _ClassVar[int]
    TOP_FIELD_NUMBER: _ClassVar[int]
    GAMES_PER_PAIRING_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    START_AT_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    GRACE_S_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    game_id: str
    format: str
    entrants: _containers.RepeatedScalarFieldContainer[str]
    top: int
    games_per_pairing: int
    time_control: _match_pb2.TimeControl
    start_at: float
    rated: bool
    rounds: int
    share: float
    grace_s: float
    def __init__(self, event_id: _Optional[str] = ..., game_id: _Optional[str] = ..., format: _Optional[str] = ..., entrants: _Optional[_Iterable[str]] = ..., top: _Optional[int] = ..., games_per_pairing: _Optional[int] = ..., time_control: _Optional[_Union[_match_pb2.TimeControl, _Mapping]] = ..., start_at: _Optional[float] = ..., rated: _Optional[bool] = ..., rounds: _Optional[int] = ..., share: _Optional[float] = ..., grace_s: _Optional[float] = ...) -> None: ...

class CreateEventResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: EventRecord
    def __init__(self, event: _Optional[_Union[EventRecord, _Mapping]] = ...) -> None: ...

class ListEventsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListEventsResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[EventRecord]
    def __init__(self, events: _Optional[_Iterable[_Union[EventRecord, _Mapping]]] = ...) -> None: ...

class GetEventRequest(_message.Message):
    __slots__ = ("event_id",)
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    def __init__(self, event_id: _Optional[str] = ...) -> None: ...

class GetEventResponse(_message.Message):
    __slots__ = ("event", "standings_json")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    STANDINGS_JSON_FIELD_NUMBER: _ClassVar[int]
    event: EventRecord
    standings_json: str
    def __init__(self, event: _Optional[_Union[EventRecord, _Mapping]] = ..., standings_json: _Optional[str] = ...) -> None: ...

class ChangeEventRequest(_message.Message):
    __slots__ = ("event_id", "action")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    action: str
    def __init__(self, event_id: _Optional[str] = ..., action: _Optional[str] = ...) -> None: ...

class ChangeEventResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: EventRecord
    def __init__(self, event: _Optional[_Union[EventRecord, _Mapping]] = ...) -> None: ...

class ExportEventRequest(_message.Message):
    __slots__ = ("event_id", "format")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    format: str
    def __init__(self, event_id: _Optional[str] = ..., format: _Optional[str] = ...) -> None: ...

class ExportEventResponse(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...
