"""A synchronous client of ``EventService`` (the admin's), for the CLI and scripts."""

from __future__ import annotations

import json
from typing import Any

from arena.gateway_client import GatewayClient
from referee.wire import event_pb2, event_pb2_grpc, match_pb2


class EventClient(GatewayClient):
    STUB = event_pb2_grpc.EventServiceStub
    TIMEOUT = 30.0  # an event's standings (a whole fit) can take a while

    def create(self, event_id: str, game_id: str, fmt: str, entrants: list[str], *, top: int = 0,
               games_per_pairing: int = 2, time_control: dict[str, int] | None = None, start_at: float = 0.0,
               rated: bool = False, rounds: int = 0, share: float = 0.0, grace_s: float = -1.0) -> Any:  # fmt: skip
        request = event_pb2.CreateEventRequest(
            event_id=event_id, game_id=game_id, format=fmt, entrants=entrants, top=top,
            games_per_pairing=games_per_pairing, start_at=start_at, rated=rated, rounds=rounds, share=share,
            grace_s=grace_s,
        )  # fmt: skip
        if time_control:
            request.time_control.CopyFrom(match_pb2.TimeControl(**time_control))
        return self._call("CreateEvent", request).event

    def list(self) -> list[Any]:
        return list(self._call("ListEvents", event_pb2.ListEventsRequest()).events)

    def show(self, event_id: str) -> dict[str, Any]:
        """``EventStore.summary``: the event, its standings and its matches."""
        reply = self._call("GetEvent", event_pb2.GetEventRequest(event_id=event_id))
        out: dict[str, Any] = json.loads(reply.standings_json)
        return out

    def change(self, event_id: str, action: str) -> Any:
        return self._call("ChangeEvent", event_pb2.ChangeEventRequest(event_id=event_id, action=action)).event

    def export(self, event_id: str, fmt: str) -> str:
        text: str = self._call("ExportEvent", event_pb2.ExportEventRequest(event_id=event_id, format=fmt)).text
        return text
