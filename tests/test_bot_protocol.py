"""A bot written from docs/protocol.md alone, in raw gRPC (no SDK), against the arena's gateway and a real
worker process: the session flow, the Play stream through the gateway, refusals, and the end of the stream.

Each step asserts what the page says a bot in another language can rely on.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

import grpc
from jsonschema import Draft202012Validator

from arena.local.arena import LocalArena
from arena.service.client import ArenaClient
from referee.wire import arena_pb2, arena_pb2_grpc, bot_pb2, bot_pb2_grpc, match_pb2

SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "schemas" / "view-shanghaien.schema.json"


async def doc_bot(gateway: str, token: str, assigned: asyncio.Future[None], seed: int) -> dict[str, Any]:
    """OpenSession, wait for MatchAssigned, then one Play stream for that match: answer each Turn with a
    random legal action (the first one with a malformed action), until the gateway ends the stream."""
    out: dict[str, Any] = {"play": [], "refused": [], "bad_views": [], "turn_ids": [], "clock": []}
    validator = Draft202012Validator(json.loads(SCHEMA.read_text()))
    rng = random.Random(seed)
    metadata = (("authorization", f"Bearer {token}"),)
    async with grpc.aio.insecure_channel(gateway) as channel:
        session = arena_pb2_grpc.ArenaServiceStub(channel).OpenSession(  # type: ignore[no-untyped-call]
            arena_pb2.OpenSessionRequest(bot_version="9.1"), metadata=metadata
        )
        events = session.__aiter__()
        welcome = await events.__anext__()
        out["session_welcome"] = welcome.welcome
        if not assigned.done():
            assigned.set_result(None)
        while (event := await events.__anext__()).WhichOneof("event") != "assigned":
            pass  # heartbeats
        out["assigned"] = event.assigned
        requests: asyncio.Queue[bot_pb2.PlayRequest | None] = asyncio.Queue()
        hello = bot_pb2.Hello(bot_name="a name nobody checks", bot_version="9.2", match_ids=[event.assigned.match_id])
        await requests.put(bot_pb2.PlayRequest(hello=hello))

        async def feed() -> Any:
            while (item := await requests.get()) is not None:
                yield item

        call = bot_pb2_grpc.BotServiceStub(channel).Play(feed(), metadata=metadata)  # type: ignore[no-untyped-call]
        ended_at = 0.0
        async for message in call:
            kind = message.WhichOneof("message")
            out["play"].append(kind)
            if kind == "welcome":
                out["welcome"] = message.welcome
            elif kind == "match_started":
                out["started"] = message.match_started
            elif kind == "turn":
                t = message.turn
                out["turn_ids"].append(t.turn_id)
                out["clock"].append((t.move_ms, t.time_bank_ms))
                out["bad_views"] += [e.message for e in validator.iter_errors(json.loads(t.view_json))]
                text = "Roll" if len(out["turn_ids"]) == 1 else rng.choice(list(t.legal_actions))
                action = bot_pb2.SubmitAction(match_id=t.match_id, seat=t.seat, turn_id=t.turn_id, action=text)
                await requests.put(bot_pb2.PlayRequest(action=action))
            elif kind == "refused":
                r = message.refused
                out["refused"].append((bot_pb2.RefusalCode.Name(r.code), r.remaining_ms))
                legal = "roll"  # the first turn of a Shanghaien seat: roll is its only action
                again = bot_pb2.SubmitAction(match_id=r.match_id, seat=r.seat, turn_id=r.turn_id, action=legal)
                await requests.put(bot_pb2.PlayRequest(action=again))
            elif kind == "match_ended":
                out["result"] = message.match_ended.result
                ended_at = time.monotonic()
        out["stream_end_s"] = time.monotonic() - ended_at  # the gateway ended the stream by itself
        out["code"] = await call.code()
        await requests.put(None)
        session.cancel()
    return out


def test_a_bot_written_from_the_protocol_page_plays_through_the_gateway(redis_url: str, tmp_path: Path) -> None:
    async def main() -> tuple[str, list[dict[str, Any]], str]:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            try:
                tokens = [(await asyncio.to_thread(admin.register_bot, n, "tests", ["shanghaien"], 2))[1]
                          for n in ("north", "south")]  # fmt: skip
                loop = asyncio.get_running_loop()
                ready = [loop.create_future() for _ in tokens]
                bots = [
                    asyncio.create_task(doc_bot(arena.gateway, t, f, i))
                    for i, (t, f) in enumerate(zip(tokens, ready, strict=True))
                ]
                await asyncio.wait_for(asyncio.gather(*ready), 30)  # both sessions open before the match exists
                match_id, _ = await asyncio.to_thread(admin.request_match, "shanghaien", ["north", "south"])
                outs = await asyncio.wait_for(asyncio.gather(*bots), 120)
                for _ in range(300):  # the worker records the result just after the bots have it
                    if (await asyncio.to_thread(admin.describe, match_id)).state == arena_pb2.MATCH_STATE_FINISHED:
                        break
                    await asyncio.sleep(0.1)
                text, _ = await asyncio.to_thread(admin.transcript, match_id)
                return match_id, outs, text
            finally:
                admin.close()

    match_id, outs, text = asyncio.run(main())
    header = json.loads(text.splitlines()[0])
    assert [s["bot_name"] for s in header["seats"]] == ["north", "south"]  # the token names the bot, not Hello
    assert {s["bot_version"] for s in header["seats"]} == {"9.2"}  # Hello's version is the one recorded
    refusals = [json.loads(line) for line in text.splitlines() if '"refusal"' in line]
    assert [r["code"] for r in refusals] == ["syntax", "syntax"]  # REFUSAL_CODE_SYNTAX as transcripts print it
    for seat, out in enumerate(outs):
        assert out["session_welcome"].bot_name == ("north", "south")[seat]
        a = out["assigned"]
        assert (a.match_id, a.game_id, a.seat, a.referee_address) == (match_id, "shanghaien", seat, "")
        assert out["play"][:2] == ["welcome", "match_started"] and out["play"][-1] == "match_ended"
        assert out["welcome"].max_message_bytes == 256 * 1024
        assert out["started"].seat == seat and list(out["started"].bot_names) == ["north", "south"]
        assert out["started"].time_control.first_move_ms == 5000 and out["started"].time_control.move_ms == 1000
        assert out["refused"] == [("REFUSAL_CODE_SYNTAX", out["refused"][0][1])] and out["refused"][0][1] > 0
        assert out["bad_views"] == []
        assert out["turn_ids"] == sorted(set(out["turn_ids"])) and len(out["turn_ids"]) > 10
        assert out["clock"][:2] == [(5000, 10_000), (1000, 10_000)]  # the first move's allowance, then move_ms
        assert out["result"].end_reason == match_pb2.END_REASON_COMPLETED
        # after MatchEnded the gateway ends the stream itself, status OK (not the worker's keepalive, ~30 s on)
        assert out["code"] == grpc.StatusCode.OK and out["stream_end_s"] < 10
