from referee.wire._generated.arena.v1 import bot_pb2 as _bot_pb2
from referee.wire._generated.arena.v1 import match_pb2 as _match_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StartMatchRequest(_message.Message):
    __slots__ = ("spec",)
    SPEC_FIELD_NUMBER: _ClassVar[int]
    spec: _match_pb2.MatchSpec
    def __init__(self, spec: _Optional[_Union[_match_pb2.MatchSpec, _Mapping]] = ...) -> None: ...

class StartMatchResponse(_message.Message):
    __slots__ = ("match_id", "seed_sha256")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_SHA256_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seed_sha256: str
    def __init__(self, match_id: _Optional[str] = ..., seed_sha256: _Optional[str] = ...) -> None: ...

class GetMatchRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class GetMatchResponse(_message.Message):
    __slots__ = ("match_id", "finished", "ply", "result")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    PLY_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    finished: bool
    ply: int
    result: _match_pb2.MatchResult
    def __init__(self, match_id: _Optional[str] = ..., finished: _Optional[bool] = ..., ply: _Optional[int] = ..., result: _Optional[_Union[_match_pb2.MatchResult, _Mapping]] = ...) -> None: ...

class WatchMatchRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class WatchMatchResponse(_message.Message):
    __slots__ = ("ply", "transcript_line", "result")
    PLY_FIELD_NUMBER: _ClassVar[int]
    TRANSCRIPT_LINE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ply: _bot_pb2.PlyRecord
    transcript_line: str
    result: _match_pb2.MatchResult
    def __init__(self, ply: _Optional[_Union[_bot_pb2.PlyRecord, _Mapping]] = ..., transcript_line: _Optional[str] = ..., result: _Optional[_Union[_match_pb2.MatchResult, _Mapping]] = ...) -> None: ...
