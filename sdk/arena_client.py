"""Running a bot on the arena service: one session with the gateway, and a ``Play`` stream per match (all
of them on one connection to the gateway).

The gateway's session tells the bot of every match it is seated in (``MatchAssigned``); the bot plays
each over ``BotService.Play`` on the same gateway, naming the match in its Hello
(``sdk.client.BotClient``, same token), and the gateway relays the stream to the worker running it.
When a worker dies and another takes the match over, the gateway re-attaches the stream by itself;
the resumed match sends the whole history, so the local engine state is rebuilt. An assignment that
names a ``referee_address`` (an arena whose gateway advertises its workers, for bots inside its
network) is played there instead, and one that also names a ``route`` is played through the arena's Play
proxy at that address, the route in the call's metadata (one connection to the proxy for every worker);
when the match moves, its next assignment names the new worker's route and the bot follows it there.
Lost sessions are reopened with back-off; sessions refused for the client's TLS settings are said so in
one line and retried slower, and ``TlsSetupError`` ends ``run`` after ``TLS_ATTEMPTS`` of them in a row.
``drain`` (``arena bot run`` on SIGTERM) closes the session but lets the running matches end, so stopping a
bot forfeits nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import random

import grpc
import structlog

from referee.wire import arena_pb2, arena_pb2_grpc
from referee.wire.contract import bearer_metadata
from referee.wire.tls import ClientTls, aio_channel, tls_advice
from sdk.bot import Bot, MatchOutcome
from sdk.client import SDK_VERSION, AuthenticationError, BotClient, SessionRefusedError, check_bot, outcome_of

log = structlog.get_logger("sdk.arena")

RELEASE_AFTER_S = 3.0
SETTLE_EVERY_S = 3.0
TLS_ATTEMPTS = 3
"""Sessions in a row refused for the client's TLS settings (the arena's CA not trusted, a name not on its
certificate, plaintext to a TLS port) after which ``run`` gives up: only a change of settings heals that."""


class TlsSetupError(Exception):
    """The arena cannot be reached with this runner's TLS settings; the message says which to change."""


class ArenaBotRunner:
    """Plays ``bot`` in every match the arena at ``gateway`` seats it in, until stopped (or, with
    ``max_matches``, until that many of its matches ended)."""

    def __init__(
        self,
        bot: Bot,
        gateway: str,
        token: str,
        *,
        max_matches: int | None = None,
        max_backoff: float = 5.0,
        tls: ClientTls | None = None,
        ladder: bool = True,
        tls_backoff: float = 5.0,
    ) -> None:
        """``ladder`` False: the session asks the ladder not to seat the bot (unrated testing)."""
        self.bot = check_bot(bot)
        self.ladder = ladder
        self.gateway = gateway
        self.tls = tls
        self.token = token
        self.max_matches = max_matches
        self.max_backoff = max_backoff
        self.tls_backoff = tls_backoff  # the first wait after a TLS failure (then doubled): longer than max_backoff
        self.outcomes: list[MatchOutcome] = []
        self.connected = asyncio.Event()
        self.bot_name = ""
        self.log = log.bind(bot=bot.name)
        self._where: dict[str, str] = {}  # match id -> referee address, for matches not yet ended
        self._ended: set[str] = set()
        self._clients: dict[str, tuple[BotClient, asyncio.Task[list[MatchOutcome]]]] = {}
        self._gateway_channel: grpc.aio.Channel | None = None  # every match's Play stream through the gateway
        self._proxy_channels: dict[str, grpc.aio.Channel] = {}  # Play proxy address -> the one connection to it
        self._stop = asyncio.Event()
        self._draining = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    def drain(self, within_s: float) -> None:
        """Take no new matches (the session closes: the arena sees the bot go offline and the ladder stops
        seating it) but play the running ones to their end, then stop; stop anyway after ``within_s``
        seconds. Called again: stop now."""
        if self._draining.is_set():
            self._stop.set()
            return
        self._draining.set()
        self.log.info("draining", matches=len(self._where), within_s=within_s)
        asyncio.get_running_loop().call_later(within_s, self._stop.set)
        self._stop_if_drained()

    def _stop_if_drained(self) -> None:
        if self._draining.is_set() and not self._where:
            self._stop.set()

    async def run(self) -> list[MatchOutcome]:
        stopper = asyncio.create_task(self._stop.wait())
        drainer = asyncio.create_task(self._draining.wait())
        settler = asyncio.create_task(self._settle_unreachable())
        backoff = 0.1
        tls_failures = 0  # in a row
        try:
            while not self._stop.is_set() and not self._draining.is_set():
                session = asyncio.create_task(self._session())
                await asyncio.wait({session, stopper, drainer}, return_when=asyncio.FIRST_COMPLETED)
                if not session.done():
                    session.cancel()
                    with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                        await session
                    break
                error = session.exception()
                if isinstance(error, AuthenticationError):
                    raise error
                if error is not None and not isinstance(error, grpc.aio.AioRpcError):
                    raise error
                problem = await self._tls_problem(error)
                tls_failures = tls_failures + 1 if problem else 0
                if problem and tls_failures >= TLS_ATTEMPTS:
                    raise TlsSetupError(problem)
                if problem:  # it will not heal by itself: one clear line, and a longer wait
                    wait = self.tls_backoff * 2 ** (tls_failures - 1)
                    self.log.error("cannot open a session: TLS", problem=problem, retry_in_s=wait)
                    await asyncio.wait({stopper}, timeout=wait)
                    continue
                if isinstance(error, grpc.aio.AioRpcError):
                    self.log.warning("arena session lost", code=error.code().name, details=error.details())
                else:
                    backoff = 0.1
                self.connected.clear()
                await asyncio.sleep(backoff * (0.5 + random.random()))
                backoff = min(self.max_backoff, backoff * 2)
            await stopper  # draining: until the running matches end (or the drain's time is up)
        finally:
            stopper.cancel()
            drainer.cancel()
            settler.cancel()
            for client, task in self._clients.values():
                client.stop()
                task.cancel()
            await asyncio.gather(*(t for _, t in self._clients.values()), return_exceptions=True)
            if self._gateway_channel is not None:
                await self._gateway_channel.close()
                self._gateway_channel = None
            for channel in self._proxy_channels.values():
                await channel.close()
            self._proxy_channels.clear()
        return self.outcomes

    async def _settle_unreachable(self) -> None:
        """Bots that dial workers: a match whose worker is unreachable may have ended there, recorded but
        not told (its worker died between the two; no other worker takes a recorded match over). Every
        ``SETTLE_EVERY_S`` such matches are looked up on the gateway, and one that finished ends here with
        its recorded result. (Through the gateway, the gateway does this itself.)"""
        channel: grpc.aio.Channel | None = None
        try:
            while True:
                await asyncio.sleep(SETTLE_EVERY_S)
                waiting = [m for m, where in self._where.items() if not where.startswith("match:")
                           and not (where in self._clients and self._clients[where][0].connected.is_set())]  # fmt: skip
                if not waiting or not self.bot_name:
                    continue
                channel = channel or aio_channel(self.gateway, self.tls)
                stub = arena_pb2_grpc.ArenaServiceStub(channel)  # type: ignore[no-untyped-call]
                for match_id in waiting:
                    try:
                        reply = await stub.DescribeMatch(
                            arena_pb2.DescribeMatchRequest(match_id=match_id), metadata=bearer_metadata(self.token),
                            timeout=10,
                        )  # fmt: skip
                    except grpc.aio.AioRpcError:
                        continue
                    m = reply.match
                    if m.state != arena_pb2.MATCH_STATE_FINISHED or not m.HasField("result"):
                        continue
                    seats = list(m.bot_names)
                    outcome = outcome_of(m.result, seats.index(self.bot_name) if self.bot_name in seats else 0)
                    self.log.info("match ended while its worker was away: its recorded result", match_id=match_id)
                    self.bot.on_match_end(outcome)
                    self._outcome(outcome)
        finally:
            if channel is not None:
                await channel.close()

    async def _tls_problem(self, error: BaseException | None) -> str | None:
        """What is wrong with this runner's TLS for the gateway (``referee.wire.tls.tls_advice``), when a
        session could not be opened: None for any other failure."""
        if not isinstance(error, grpc.aio.AioRpcError) or error.code() != grpc.StatusCode.UNAVAILABLE:
            return None
        return await asyncio.to_thread(tls_advice, self.gateway, self.tls)

    async def _session(self) -> None:
        async with aio_channel(self.gateway, self.tls) as channel:
            stub = arena_pb2_grpc.ArenaServiceStub(channel)  # type: ignore[no-untyped-call]
            request = arena_pb2.OpenSessionRequest(
                bot_version=self.bot.version, sdk_version=SDK_VERSION, no_ladder=not self.ladder
            )
            call = stub.OpenSession(request, metadata=bearer_metadata(self.token))
            try:
                async for event in call:
                    kind = event.WhichOneof("event")
                    if kind == "welcome":
                        self.bot_name = event.welcome.bot_name
                        self.connected.set()
                        self.log.info("arena session open", bot_name=self.bot_name)
                    elif kind == "assigned":
                        self._assign(event.assigned)
            except grpc.aio.AioRpcError as e:
                if e.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                    raise AuthenticationError(e.details() or e.code().name) from None
                raise

    def _assign(self, a: arena_pb2.MatchAssigned) -> None:
        if a.match_id in self._ended:
            return
        if not a.referee_address:  # through the gateway: one stream for this match
            key = f"match:{a.match_id}"
            if key in self._clients:
                return  # told again (a worker took the match over): the gateway re-attaches the stream
            self.log.info("match assigned", match_id=a.match_id, seat=a.seat)
            self._where[a.match_id] = key
            if self._gateway_channel is None:  # one connection (and TLS handshake) for all of them, not one each
                self._gateway_channel = aio_channel(self.gateway, self.tls)
            client = BotClient(
                self.bot, self.gateway, self.token, match_ids=(a.match_id,), max_matches=1, on_outcome=self._outcome,
                tls=self.tls, channel=self._gateway_channel,
            )  # fmt: skip
            self._start(key, client)
            return
        where = f"{a.referee_address}#{a.route}" if a.route else a.referee_address  # one stream per worker
        before = self._where.get(a.match_id)
        self._where[a.match_id] = where
        self.log.info("match assigned", match_id=a.match_id, seat=a.seat, referee=where)
        if where not in self._clients:
            channel = None
            if a.route:  # through the Play proxy: one connection (and TLS handshake) for every worker's stream
                channel = self._proxy_channels.get(a.referee_address)
                if channel is None:
                    channel = self._proxy_channels[a.referee_address] = aio_channel(a.referee_address, self.tls)
            client = BotClient(
                self.bot, a.referee_address, self.token, on_outcome=self._outcome, tls=self.tls, channel=channel,
                route=a.route,
            )  # fmt: skip
            self._start(where, client)
        if before is not None and before != where:
            self.log.info("match moved to another worker", match_id=a.match_id, referee=where)
            self._release(before)

    def _start(self, key: str, client: BotClient) -> None:
        task = asyncio.get_running_loop().create_task(self._play(key, client), name=f"play-{key}")
        self._clients[key] = (client, task)

    async def _play(self, key: str, client: BotClient) -> list[MatchOutcome]:
        try:
            return await client.run()
        except (AuthenticationError, SessionRefusedError) as e:  # not ours (any more), or over
            self.log.info("referee refused the stream", referee=key, reason=str(e))
            if key.startswith("match:"):  # that match will not end here: a drain does not wait for it
                self._where.pop(key.removeprefix("match:"), None)
                self._stop_if_drained()
            return []
        finally:
            if self._clients.get(key, (None,))[0] is client:
                del self._clients[key]

    def _outcome(self, outcome: MatchOutcome) -> None:
        if outcome.match_id in self._ended:
            return
        self._ended.add(outcome.match_id)
        self.outcomes.append(outcome)
        address = self._where.pop(outcome.match_id, None)
        if address is not None:  # a moment later: a next match there may be announced meanwhile
            asyncio.get_running_loop().call_later(RELEASE_AFTER_S, self._release, address)
        if self.max_matches is not None and len(self.outcomes) >= self.max_matches:
            self._stop.set()
        self._stop_if_drained()

    def _release(self, address: str) -> None:
        """Close the connection to a worker that runs none of our matches now."""
        if address in self._where.values():
            return
        entry = self._clients.pop(address, None)
        if entry is not None:
            entry[0].stop()


async def run_on_arena(bot: Bot, gateway: str, token: str, **kwargs: object) -> list[MatchOutcome]:
    return await ArenaBotRunner(bot, gateway, token, **kwargs).run()  # type: ignore[arg-type]
