"""``python -m arena.cli``: the ``arena`` command (how the arena starts its own child processes)."""

import sys

from arena.cli.main import main

sys.exit(main())
