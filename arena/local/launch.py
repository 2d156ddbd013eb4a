"""Bots that run outside the arena's own Python process: how ``arena play``, ``arena tournament`` and
``arena bot check`` start them, and the environment they are given.

The contract with a launched bot, in any language: it finds the referee's ``host:port`` in
``ARENA_SERVER``, its token in ``ARENA_BOT_TOKEN`` and how many matches (seats) it will be given in
``ARENA_MATCHES`` (the same values may be put in its command line with the words ``{address}``,
``{token}`` and ``{matches}``); it opens ``arena.v1.BotService/Play`` there with the token, plays, exits 0
after that many ``MatchEnded``, and exits 0 on SIGTERM. Its stdout and stderr go to files.

A ``Launcher`` starts a bot and hands back a ``BotHandle``:

- ``ProcessLauncher``: spawns a command (``command_launcher``: any executable; ``spec_launcher``: a Python
  bot, FILE.py:Class, module:Class or a reference name, through ``bot_main``);
- ``ExternalLauncher``: a bot started by hand elsewhere; it only says where the bot must connect.

Participants of ``arena play`` and ``arena tournament`` are written ``cmd:COMMAND`` and ``external:NAME``
beside the Python bot specs (``launched_kind``, ``spec_label``, ``check_launched``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from referee.grpc_env import user_environment
from sdk.stdio import STDIO_PREFIX, StdioError, command_argv, command_name, run_closing

ENV_SERVER = "ARENA_SERVER"
"""Environment of a launched bot: the referee's host:port (what ``arena bot run --server`` takes) ..."""
ENV_TOKEN = "ARENA_BOT_TOKEN"
"""... the bot's token (the variable ``arena bot run`` reads) ..."""
ENV_MATCHES = "ARENA_MATCHES"
"""... and the number of matches (seats) it will be given: after them it may exit."""
ENV_SPEC = "ARENA_CHECK_BOT"
"""``bot_main``'s bot: FILE.py:Class, module:Class or a reference name."""
REPORT_MARK = "arena-check:"
"""A line of a launched bot's stdout that starts so carries a JSON report (``bot_main``: act errors)."""

CMD_PREFIX = "cmd:"
"""A participant of ``arena play``/``arena tournament`` that is a command: ``cmd:node bot.js``."""
EXTERNAL_PREFIX = "external:"
"""A participant started by hand: ``external:NAME``; the run prints where it must connect and waits."""
LaunchKind = Literal["cmd", "external"]


# ------------------------------------------------------------------------------------------ handles


class BotHandle(Protocol):
    """One running bot, as its caller sees it."""

    observable: bool  # whether exit_code and signals mean anything (False: a bot started by hand)

    def exit_code(self) -> int | None:
        """Its exit status once it ended (negative: killed by that signal); None while it runs."""

    def terminate(self) -> None:
        """SIGTERM."""

    def kill(self) -> None: ...

    def notes(self) -> list[str]:
        """What it reported so far (act errors), newest last."""

    def last_words(self) -> str:
        """The last line of its stderr (a traceback's verdict), or ``""``."""

    def stderr_path(self) -> Path | None:
        """The file its stderr goes to (None: not ours to see)."""


class Launcher(Protocol):
    """Starts a bot. ``restartable``: it may be started again after it died or got lost (a spawned
    process); a bot started by hand is waited for instead."""

    label: str
    restartable: bool

    def start(self, address: str, token: str, matches: int) -> BotHandle: ...


class ProcessHandle:
    observable = True

    def __init__(self, proc: subprocess.Popen[bytes], out: Path, err: Path) -> None:
        self.proc = proc
        self.out = out
        self.err = err

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def notes(self) -> list[str]:
        found = []
        for line in _read(self.out).splitlines():
            if line.startswith(REPORT_MARK):
                with contextlib.suppress(ValueError, AttributeError):
                    found.append(str(json.loads(line[len(REPORT_MARK) :]).get("error", "")))
        return found

    def last_words(self) -> str:
        lines = [x.strip() for x in _read(self.err).splitlines() if x.strip()]
        return lines[-1][:300] if lines else ""

    def stderr_path(self) -> Path | None:
        return self.err


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


@dataclass
class ProcessLauncher:
    """Spawns ``argv`` with the address, token and match count in its environment (``ENV_SERVER``,
    ``ENV_TOKEN``, ``ENV_MATCHES``) and in the words ``{address}``, ``{token}``, ``{matches}`` of
    ``argv``; its stdout and stderr go to ``log_dir/STEM-N.out`` and ``.err`` (N counts its starts)."""

    argv: list[str]
    label: str
    log_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    restartable: bool = True
    started: int = 0
    stem: str = "bot"

    def start(self, address: str, token: str, matches: int) -> BotHandle:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.started += 1
        values = {"address": address, "token": token, "matches": str(matches)}
        argv = [_fill(word, values) for word in self.argv]
        env = {**user_environment(), **self.env, ENV_SERVER: address, ENV_TOKEN: token, ENV_MATCHES: str(matches)}
        out = self.log_dir / f"{self.stem}-{self.started}.out"
        err = self.log_dir / f"{self.stem}-{self.started}.err"
        with out.open("wb") as o, err.open("wb") as e:
            proc = subprocess.Popen(argv, env=env, stdout=o, stderr=e, stdin=subprocess.DEVNULL)
        return ProcessHandle(proc, out, err)


def _fill(word: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        word = word.replace("{" + key + "}", value)
    return word


def spec_launcher(spec: str, label: str, log_dir: Path) -> ProcessLauncher:
    """A FILE.py:Class, module:Class or reference bot, run by ``bot_main`` in a Python process of its own."""
    code = "import sys; from arena.local.launch import bot_main; sys.exit(bot_main())"
    return ProcessLauncher([sys.executable, "-c", code], label, log_dir, env={ENV_SPEC: spec})


def command_launcher(command: str, label: str, log_dir: Path, stem: str = "bot") -> ProcessLauncher:
    """``--cmd``: any executable (a shell-style command line), told where to connect by its environment
    or the ``{address}``/``{token}``/``{matches}`` words. ValueError for a command that cannot run."""
    return ProcessLauncher(command_argv(command), label, log_dir, stem=stem)


class ExternalHandle:
    observable = False

    def exit_code(self) -> int | None:
        return None

    def terminate(self) -> None:
        pass

    def kill(self) -> None:
        pass

    def notes(self) -> list[str]:
        return []

    def last_words(self) -> str:
        return ""

    def stderr_path(self) -> Path | None:
        return None


@dataclass
class ExternalLauncher:
    """A bot started by hand, elsewhere: ``start`` tells the person (``say``) where it must connect."""

    say: Callable[[str], None]
    label: str = "bot"
    restartable: bool = False

    def start(self, address: str, token: str, matches: int) -> BotHandle:
        who = "your bot" if self.label == "bot" else f"your bot {self.label}"
        self.say(
            f"start {who} now; it must connect to the referee at {address} with token {token} "
            f"(e.g. arena bot run BOT --server {address} --token {token} --matches {matches}, or any bot with "
            f"{ENV_SERVER}={address} {ENV_TOKEN}={token} {ENV_MATCHES}={matches} in its environment); "
            f"it will play {matches} matches"
        )
        return ExternalHandle()


def bot_main() -> int:
    """A spawned bot (``spec_launcher``): load it, play ``ENV_MATCHES`` matches on ``ENV_SERVER`` and exit 0;
    SIGTERM stops it cleanly. Each exception of its ``act`` is reported on stdout (``REPORT_MARK``)."""
    from referee.logs import configure
    from sdk.bots import make_bot
    from sdk.client import BotClient, load_bot

    configure(json=False, level="WARNING")
    bot = load_bot(os.environ[ENV_SPEC], factory=make_bot)

    def act_error(e: BaseException) -> None:
        print(REPORT_MARK + json.dumps({"error": f"{type(e).__name__}: {e}"[:300]}), flush=True)

    client = BotClient(
        bot, os.environ[ENV_SERVER], os.environ[ENV_TOKEN], max_matches=int(os.environ[ENV_MATCHES]), on_error=act_error
    )

    async def main() -> None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, client.stop)
        await run_closing(client, bot)

    try:
        asyncio.run(main())
    except StdioError as e:  # the bot's command died: its last words are above, in the same stderr
        print(f"arena: error: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


def exit_status(code: int) -> str:
    """An exit status as people read it: ``1``, ``-9 (killed by SIGKILL)``."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"{code} (killed by {signal.Signals(-code).name})"
    return str(code)


async def wait_exit(handle: BotHandle, timeout: float, poll_s: float = 0.05) -> int | None:
    """Its exit status, waiting at most ``timeout`` seconds for it (None: still running)."""
    deadline = time.monotonic() + timeout
    while (code := handle.exit_code()) is None and time.monotonic() < deadline:
        await asyncio.sleep(poll_s)
    return code


async def wind_down(handle: BotHandle, exit_s: float, *, now: bool = False) -> None:
    """End a launched bot: ``exit_s`` seconds to exit by itself (none with ``now``), as many after SIGTERM,
    then SIGKILL."""
    if not handle.observable:
        return
    if not now and await wait_exit(handle, exit_s) is not None:
        return
    handle.terminate()
    if await wait_exit(handle, exit_s) is None:
        handle.kill()


# --------------------------------------------------------------------------- play/tournament participants


def launched_kind(spec: str) -> LaunchKind | None:
    """``cmd`` or ``external`` for a participant written ``cmd:COMMAND`` or ``external:NAME``; None for a
    Python bot (FILE.py:Class, module:Class, a reference name)."""
    if spec.startswith(CMD_PREFIX):
        return "cmd"
    if spec.startswith(EXTERNAL_PREFIX):
        return "external"
    return None


def launched_value(spec: str) -> str:
    """The COMMAND of ``cmd:COMMAND``, the NAME of ``external:NAME``."""
    kind = launched_kind(spec)
    return spec[len(CMD_PREFIX if kind == "cmd" else EXTERNAL_PREFIX) :] if kind else spec


def spec_label(spec: str) -> str:
    """A participant's name before copies are told apart: a Python bot's class or reference name, a
    command's ``command_name`` (``cmd:`` and ``stdio:``), an external bot's NAME."""
    kind = launched_kind(spec)
    if kind == "cmd":
        return command_name(launched_value(spec))
    if spec.startswith(STDIO_PREFIX):
        return command_name(spec.removeprefix(STDIO_PREFIX))
    if kind == "external":
        return launched_value(spec)
    return spec.rpartition(":")[2] or spec


def file_labels(specs: Sequence[str]) -> list[str]:
    """Each participant's ``spec_label``, but where one name stands for different bots (``MyBot`` of
    mybot.py and of mybot_v1.py: an SPRT of a new version against the old) each gets its file too,
    ``mybot.py:MyBot`` and ``mybot_v1.py:MyBot``, or as written when the file names are alike too. Copies
    of one bot keep one name (the callers number them)."""
    bases = [spec_label(spec) for spec in specs]
    labels = [
        _with_file(spec) if len({s for s, b in zip(specs, bases, strict=True) if b == base}) > 1 else base
        for spec, base in zip(specs, bases, strict=True)
    ]
    return [
        launched_value(spec) if len({s for s, x in zip(specs, labels, strict=True) if x == label}) > 1 else label
        for spec, label in zip(specs, labels, strict=True)
    ]


def _with_file(spec: str) -> str:
    """A Python bot as its file's name and class (``mybot_v1.py:MyBot``); any other as written."""
    where, _, name = spec.rpartition(":")
    if launched_kind(spec) is None and where and not spec.startswith(STDIO_PREFIX):
        return f"{Path(where).name}:{name}"
    return launched_value(spec)


def check_launched(spec: str) -> None:
    """ValueError (one line) for a ``cmd:`` participant that cannot run or an ``external:`` one without a
    usable name; nothing for a good one (or a Python bot, which ``check_players`` loads)."""
    from referee.wire.values import bot_text_error

    kind = launched_kind(spec)
    value = launched_value(spec)
    if kind == "cmd":
        command_argv(value)
    elif kind == "external":
        problem = bot_text_error(name=value) if value else "name is empty"
        if problem is not None:
            raise ValueError(f"external bot {value!r}: {problem}")


PROBE_S = 60.0
"""How long loading the bots may take in ``probe_bots``' child process."""
_PROBE_MARK = "arena-probe:"
_PROBE_CODE = """\
import json, os, sys
from sdk.bots import make_bot
from sdk.client import BotLoadError, load_bot
from arena.local.launch import declared_games
for spec in sys.argv[1:]:
    try:
        bot = load_bot(spec, factory=make_bot)
        answer = {'name': bot.name, 'games': declared_games(bot)}
    except BotLoadError as e:
        answer = {'error': str(e)}
    print('\\n' + MARK + json.dumps(answer), flush=True)
os._exit(0)
"""


def probe_bots(specs: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The name and the game ids of each Python bot ``specs`` name, learnt in one Python process of their
    own: a bot's module and constructor are its author's code, and whatever they start (a thread that never
    ends, a signal handler, a socket) must not keep the command that checks them alive. ``BotLoadError``
    says why the first bot that cannot be loaded cannot."""
    from sdk.client import BotLoadError

    if not specs:
        return []
    code = f"MARK = {_PROBE_MARK!r}\n" + _PROBE_CODE
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, *specs],
            capture_output=True, text=True, timeout=PROBE_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        names = ", ".join(repr(s) for s in specs)
        raise BotLoadError(f"cannot load bot {names}: loading took more than {PROBE_S:g} s") from None
    answers: list[dict[str, Any]] = []
    for line in done.stdout.splitlines():
        if line.startswith(_PROBE_MARK):
            with contextlib.suppress(json.JSONDecodeError):
                answers.append(json.loads(line[len(_PROBE_MARK) :]))
    out: list[tuple[str, tuple[str, ...]]] = []
    for i, spec in enumerate(specs):
        answer = answers[i] if i < len(answers) else {}
        if "error" in answer:
            raise BotLoadError(answer["error"])
        if "name" not in answer:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise BotLoadError(f"cannot load bot {spec!r}: its process ended with status {done.returncode}: {last}")
        out.append((answer["name"], tuple(answer["games"])))
    return out


def declared_games(bot: Any) -> tuple[str, ...]:
    """The game ids a bot says it plays (a ``game_ids`` attribute), else every game."""
    from referee import games

    declared = getattr(bot, "game_ids", None)
    if not declared:
        return games.GAME_IDS
    return tuple(g for g in games.GAME_IDS if g in set(declared))


def file_stem(label: str) -> str:
    """``label`` made safe as a file name's stem (the launched bot's output files)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("._") or "bot"
