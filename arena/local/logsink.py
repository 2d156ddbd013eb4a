"""Log files of child processes (the workers and bots of ``arena serve`` and ``arena local``) that rotate
by size, so that a long-running local arena does not fill its disk with worker logs.

The child writes to a pipe as it would to a file (its JSON lines on stdout and stderr); a thread of the
parent copies them, line by line, into ``PATH`` and renames it ``PATH.1`` (``PATH.1`` to ``PATH.2`` ...,
the oldest dropped) before a line would take it past ``max_bytes``. The child needs no flag for it.
When the parent dies first, the child's writes fail (a closed pipe) and its logging drops them.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final

MAX_BYTES: Final = 10 * 1024 * 1024
"""A log file's size before it is rotated: days of a worker's INFO lines, seconds to open."""
BACKUPS: Final = 3
"""Rotated files kept: at most ``(1 + BACKUPS) * MAX_BYTES`` (40 MB) per process."""


class RotatingLog:
    """Copies a child's output (``source``) into ``path``, rotated by size, on a daemon thread."""

    def __init__(self, source: IO[bytes], path: Path, max_bytes: int | None = None, backups: int | None = None) -> None:
        self.path = path
        self.max_bytes = MAX_BYTES if max_bytes is None else max_bytes
        self.backups = BACKUPS if backups is None else backups
        self._source = source
        self._file = path.open("ab")
        self._size = self._file.tell()
        self._thread = threading.Thread(target=self._copy, name=f"log-{path.name}", daemon=True)
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Wait (up to ``timeout``) for the copier to write what the exited child left in the pipe."""
        self._thread.join(timeout)

    def _copy(self) -> None:
        with self._source, self._file:
            for line in self._source:
                if self._size and self._size + len(line) > self.max_bytes:
                    self._rotate()
                self._file.write(line)
                self._file.flush()  # readable at once, as if the child wrote the file itself
                self._size += len(line)

    def _rotate(self) -> None:
        self._file.close()
        for i in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{i}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{i + 1}"))
        if self.backups > 0:
            os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
        else:
            self.path.unlink(missing_ok=True)
        self._file = self.path.open("ab")
        self._size = 0


def spawn_logged(
    argv: Sequence[str], path: Path, *, max_bytes: int | None = None, backups: int | None = None, **popen: Any
) -> tuple[subprocess.Popen[bytes], RotatingLog]:
    """Start ``argv`` with its stdout and stderr going to ``path``, rotated by size."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **popen)
    assert process.stdout is not None
    return process, RotatingLog(process.stdout, path, max_bytes, backups)
