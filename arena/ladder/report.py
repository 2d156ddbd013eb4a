"""How a ladder is shown to a person: the leaderboard table and the rating-history chart."""

from __future__ import annotations

import time
from typing import Any

from rich.table import Table


def local_time(t: float) -> str:
    """A timestamp as local date and minute (``-`` for none)."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "-"


def board_table(game_id: str, standings: list[Any]) -> Table:
    """A game's leaderboard (``Ladder.leaderboard``) as a table."""
    table = Table(title=f"{game_id} ladder", caption="? provisional (fewer than 15 games); ± is a 95% interval")
    for col, justify in [("#", "right"), ("bot", "left"), ("version", "left"), ("rating", "right"),
                         ("games", "right"), ("W/D/L", "right"), ("last played", "left")]:  # fmt: skip
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for s in standings:
        r = s.row
        mark = "?" if r.provisional else ""
        table.add_row(str(s.rank), r.name, r.version, f"{r.rating:.0f}{mark} ± {r.error:.0f}", str(r.games),
                      f"{r.wins}/{r.draws}/{r.losses}", local_time(r.last_played),
                      style="dim" if r.provisional else None)  # fmt: skip
    return table


def plot(series: dict[tuple[str, str, str], list[Any]], path: str) -> None:
    """One line per (game, bot, version): rating after each match against the match's end time."""
    import matplotlib

    matplotlib.use("Agg")
    from datetime import datetime

    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5))
    several_games = len({g for g, _, _ in series}) > 1
    for (g, n, v), pts in series.items():
        label = f"{n} {v}" + (f" ({g})" if several_games else "")
        ax.plot(
            [mdates.date2num(datetime.fromtimestamp(p.finished_at)) for p in pts],  # type: ignore[no-untyped-call]
            [p.rating for p in pts],
            label=label,
            lw=1.2,
        )
    ax.xaxis_date()
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))  # type: ignore[no-untyped-call]
    ax.set_ylabel("Elo rating")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


