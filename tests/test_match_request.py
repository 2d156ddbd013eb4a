"""``arena match request`` seating a bot that has no session: queued all the same (it may be about to
connect), but said at once, instead of an aborted match half a minute later."""

from __future__ import annotations

import asyncio

import pytest

from arena.cli.main import main
from arena.redis_client import connect
from arena.service.gateway import start_gateway
from arena.service.registry import Registry


def test_a_request_seating_offline_bots_warns_at_once(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    registry = Registry(connect(redis_url))
    registry.set_admin_token("admin")
    for name in ("alpha", "beta"):
        registry.register(name, "me", ["shanghaien"])

    async def run() -> None:
        server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0")
        try:
            capsys.readouterr()
            argv = ["match", "request", "alpha", "beta", "--game", "shanghaien", "--gateway", f"127.0.0.1:{port}",
                    "--admin-token", "admin"]  # fmt: skip
            assert await asyncio.to_thread(main, argv) == 0
        finally:
            await server.stop(None)
            await servicer.close()

    asyncio.run(run())
    captured = capsys.readouterr()
    assert "queued shanghaien-" in captured.out
    assert "warning: alpha, beta are offline" in captured.err and "within 30 s" in captured.err, captured.err
