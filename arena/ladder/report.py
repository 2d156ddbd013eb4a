"""How a ladder is shown to a person: the leaderboard table, the rating-history chart (a PNG), and the
whole ladder as one self-contained HTML page (``board_html``: leaderboard, an inline SVG rating chart,
head to head, the matches with links to their replays).

Everything here takes the ladder's typed values (``Standing``, ``HistoryPoint``, ``HeadToHead``), read
from a ``LadderReader``: the ladder in Redis (``arena.ladder.store.Ladder``, the operator's side) or the
gateway's ``LadderService`` (``arena.ladder.client.LadderClient``, what the CLI reads)."""

from __future__ import annotations

import html
import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from rich.table import Table

from arena.colours import bot_colours

if TYPE_CHECKING:
    from arena.ladder.elo import BotKey
    from arena.ladder.values import HeadToHead, HistoryPoint, Standing


class LadderReader(Protocol):
    """The ladder's reads, as ``Ladder`` (Redis) and ``LadderClient`` (the gateway) both offer them."""

    def games(self) -> list[str]: ...

    def leaderboard(self, game_id: str, limit: int | None = None, offset: int = 0) -> list[Standing]: ...

    def history(self, game_id: str, name: str, version: str | None = None) -> dict[BotKey, list[HistoryPoint]]: ...

    def h2h(self, game_id: str, name: str | None = None) -> list[HeadToHead]: ...


def utc_time(t: float) -> str:
    """A timestamp as UTC date and minute (``-`` for none), like every time the CLI shows; a column or label
    beside it says UTC. One zone for everyone: a ladder is read from many time zones."""
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t)) if t else "-"


BOARD_WHOLE: tuple[str, ...] = ("bot", "owner", "version", "last played (UTC)")
"""The leaderboard's columns never cut nor wrapped (``arena.cli.common.print_table``)."""


def board_table(game_id: str, standings: Sequence[Standing]) -> Table:
    """A game's leaderboard (``Ladder.leaderboard``) as a table."""
    table = Table(title=f"{game_id} ladder", caption="? provisional (fewer than 15 games); ± is a 95% interval; "
                  "fit: the whole-history fit of every result (- until the ladder makes one)")  # fmt: skip
    for col, justify in [("#", "right"), ("bot", "left"), ("owner", "left"), ("version", "left"), ("rating", "right"),
                         ("fit", "right"), ("games", "right"), ("W/D/L", "right"),
                         ("last played (UTC)", "left")]:  # fmt: skip
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for s in standings:
        r = s.row
        mark = "?" if r.provisional else ""
        fitted = "-" if s.fit is None else f"{s.fit.rating:.0f} ± {s.fit.error:.0f}"
        table.add_row(str(s.rank), r.name, s.owner or "-", r.version, f"{r.rating:.0f}{mark} ± {r.error:.0f}",
                      fitted, str(r.games), f"{r.wins}/{r.draws}/{r.losses}", utc_time(r.last_played),
                      style="dim" if r.provisional else None)  # fmt: skip
    return table


def plot(series: Mapping[tuple[str, str, str], Sequence[HistoryPoint]], path: str) -> None:
    """One line per (game, bot, version): rating after each match against the match's end time, in UTC."""
    import matplotlib

    matplotlib.use("Agg")
    from datetime import UTC, datetime

    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5))
    several_games = len({g for g, _, _ in series}) > 1
    for (g, n, v), pts in series.items():
        label = f"{n} {v}" + (f" ({g})" if several_games else "")
        ax.plot(
            [mdates.date2num(datetime.fromtimestamp(p.finished_at, UTC)) for p in pts],  # type: ignore[no-untyped-call]
            [p.rating for p in pts],
            label=label,
            lw=1.2,
        )
    ax.xaxis_date(UTC)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator(), tz=UTC))  # type: ignore[no-untyped-call]
    ax.set_xlabel("match end time (UTC)")
    ax.set_ylabel("Elo rating")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------------ the HTML page

_CHART = {"width": 900, "height": 340, "left": 58, "right": 18, "top": 14, "bottom": 44}
_PAGE_STYLE = """
:root { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, "Liberation Sans", "DejaVu Sans", sans-serif;
  font-size: 14px; color: #26231e; background: #f4f1ea; }
body { margin: 0; }
header { background: #2f2a23; color: #f6efe0; padding: 12px 20px; }
header h1 { margin: 0; font-size: 20px; }
header p { margin: 3px 0 0; color: #cfc4ae; font-size: 12.5px; }
main { padding: 14px 20px 30px; display: grid; gap: 16px; max-width: 1200px; }
section { background: #fff; border: 1px solid #e2dccf; border-radius: 10px; padding: 12px 16px; overflow-x: auto; }
h2 { margin: 0 0 8px; font-size: 16px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th { text-align: left; color: #7a7264; font-weight: 600; padding: 4px 8px; border-bottom: 2px solid #e2dccf; }
td { padding: 4px 8px; border-bottom: 1px solid #f0ebe1; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.provisional td { color: #8a8273; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 50%; margin-right: 6px;
  vertical-align: -1px; }
.muted { color: #7a7264; font-size: 12px; }
a { color: #8a5a2b; }
svg text { font-size: 11px; fill: #6b6356; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin-top: 6px; font-size: 13px; }
.up { color: #2f7d4f; } .down { color: #b4451f; }
"""


def _nice_step(span: float, ticks: int = 6) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) that cuts ``span`` into about ``ticks`` parts."""
    raw = max(span, 1e-9) / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def rating_chart_svg(series: Mapping[BotKey, Sequence[HistoryPoint]], colours: Mapping[BotKey, str],
                     replays: Mapping[str, str]) -> str:  # fmt: skip
    """An inline SVG chart: one line per bot version (``HistoryPoint``s: rating after each match against
    the match's end time), each point titled and linked to its match's replay when there is one."""
    c = _CHART
    w, h = c["width"], c["height"]
    points = [p for pts in series.values() for p in pts]
    if not points:
        return '<p class="muted">no rated matches yet</p>'
    t0: float = min(p.finished_at for p in points)
    t1: float = max(p.finished_at for p in points)
    if t1 - t0 < 60:
        t0, t1 = t0 - 30, t1 + 30
    lo: float = min(p.rating for p in points)
    hi: float = max(p.rating for p in points)
    step = _nice_step(hi - lo + 40)
    lo, hi = math.floor((lo - 10) / step) * step, math.ceil((hi + 10) / step) * step
    plot_w, plot_h = w - c["left"] - c["right"], h - c["top"] - c["bottom"]

    def x(t: float) -> float:
        return round(c["left"] + (t - t0) / (t1 - t0) * plot_w, 1)

    def y(r: float) -> float:
        return round(c["top"] + (hi - r) / (hi - lo) * plot_h, 1)

    out = [f'<svg id="rating-chart" viewBox="0 0 {w} {h}" width="100%" role="img" '
           f'aria-label="rating after each match" xmlns="http://www.w3.org/2000/svg">']  # fmt: skip
    value = lo
    while value <= hi + 1e-9:
        out.append(f'<line x1="{c["left"]}" x2="{w - c["right"]}" y1="{y(value)}" y2="{y(value)}" stroke="#eee8dc"/>'
                   f'<text x="{c["left"] - 8}" y="{y(value) + 4}" text-anchor="end">{value:.0f}</text>')  # fmt: skip
        value += step
    fmt = "%H:%M" if t1 - t0 < 2 * 86400 else "%Y-%m-%d"
    for i in range(6):
        t = t0 + (t1 - t0) * i / 5
        anchor = "start" if i == 0 else "end" if i == 5 else "middle"
        out.append(f'<text x="{x(t)}" y="{h - c["bottom"] + 18}" text-anchor="{anchor}">'
                   f"{html.escape(time.strftime(fmt, time.gmtime(t)))}</text>")  # fmt: skip
    out.append(f'<text x="{c["left"] + plot_w / 2}" y="{h - 6}" text-anchor="middle">match end time (UTC)</text>')
    out.append(f'<text transform="translate(14 {c["top"] + plot_h / 2}) rotate(-90)" text-anchor="middle">Elo</text>')
    for key, pts in series.items():
        colour = colours[key]
        name = html.escape(f"{key[0]} {key[1]}")
        coords = " ".join(f"{x(p.finished_at)},{y(p.rating)}" for p in pts)
        out.append(f'<polyline class="series" data-bot="{html.escape(key[0])}" data-version="{html.escape(key[1])}" '
                   f'data-points="{len(pts)}" points="{coords}" fill="none" stroke="{colour}" '
                   'stroke-width="2"/>')  # fmt: skip
        for p in pts:
            dot = (f'<circle cx="{x(p.finished_at)}" cy="{y(p.rating)}" r="3" fill="{colour}">'
                   f"<title>{name}: {p.rating:.0f} after {html.escape(p.match_id)}</title></circle>")  # fmt: skip
            href = replays.get(p.match_id)
            out.append(f'<a href="{html.escape(href)}">{dot}</a>' if href else dot)
    out.append("</svg>")
    return "".join(out)


def board_page(ladder: LadderReader, game_id: str, standings: Sequence[Standing],
               replays: Mapping[str, str] | None = None) -> str:  # fmt: skip
    """``board_html`` of ``standings`` with what else the page shows read from ``ladder``: every listed
    version's rating history and the game's head-to-head records."""
    histories: dict[BotKey, list[HistoryPoint]] = {}
    for s in standings:
        histories.update(ladder.history(game_id, s.row.name, s.row.version))
    return board_html(game_id, standings, histories, ladder.h2h(game_id), replays)


def board_html(game_id: str, standings: Sequence[Standing], histories: Mapping[BotKey, Sequence[HistoryPoint]],
               h2h: Sequence[HeadToHead], replays: Mapping[str, str] | None = None,
               generated: float | None = None) -> str:  # fmt: skip
    """One game's ladder as one self-contained HTML page (no script, no network): the leaderboard
    (``Ladder.leaderboard``), the rating chart of ``histories`` (``Ladder.history`` per bot version), the
    head-to-head table (``Ladder.h2h``) and the matches of those histories, newest first, each linked to
    its replay when ``replays`` (match id -> relative URL) has one."""
    from arena.ladder.elo import INITIAL_RATING

    links = dict(replays or {})
    esc = html.escape
    keys = [s.row.key for s in standings] + [k for k in histories if k not in {s.row.key for s in standings}]
    colours = dict(zip(keys, bot_colours(keys), strict=True))  # the rule the replays use (arena.colours)

    def swatch(key: BotKey) -> str:
        return f'<span class="swatch" style="background:{colours.get(key, "#999")}"></span>'

    rows = []
    for s in standings:
        r = s.row
        mark = "?" if r.provisional else ""
        rows.append(
            f'<tr class="{"provisional" if r.provisional else ""}" data-bot="{esc(r.name)}" data-rank="{s.rank}">'
            f'<td class="num">{s.rank}</td><td>{swatch(r.key)}{esc(r.name)}</td><td>{esc(r.version)}</td>'
            f'<td class="num">{r.rating:.0f}{mark} ± {r.error:.0f}</td><td class="num">{r.games}</td>'
            f'<td class="num">{r.wins}/{r.draws}/{r.losses}</td><td>{esc(utc_time(r.last_played))}</td></tr>'
        )
    pairs = []
    for h in h2h:
        n = h.a_wins + h.draws + h.b_wins
        if n:
            pairs.append(
                f"<tr><td>{swatch(h.a)}{esc(h.a[0])} {esc(h.a[1])}</td>"
                f"<td>{swatch(h.b)}{esc(h.b[0])} {esc(h.b[1])}</td>"
                f'<td class="num">{h.a_wins}</td><td class="num">{h.draws}</td><td class="num">{h.b_wins}</td>'
                f'<td class="num">{(h.a_wins + 0.5 * h.draws) / n:.0%}</td></tr>'
            )
    # The matches of the histories: who played, each one's rating after it and the change.
    matches: dict[str, dict[str, Any]] = {}
    for key, pts in histories.items():
        before = INITIAL_RATING
        for p in pts:
            m = matches.setdefault(p.match_id, {"at": p.finished_at, "bots": []})
            m["bots"].append((key, p.rating, p.rating - before))
            before = p.rating
    recent = sorted(matches.items(), key=lambda kv: (-kv[1]["at"], kv[0]))[:200]
    match_rows = []
    for match_id, m in recent:
        href = links.get(match_id)
        replay = f'<a href="{esc(href)}">replay</a>' if href else '<span class="muted">-</span>'
        bots = ", ".join(
            f'{swatch(k)}{esc(k[0])} {rating:.0f} <span class="{"up" if d >= 0 else "down"}">({d:+.0f})</span>'
            for k, rating, d in m["bots"]
        )
        match_rows.append(f'<tr data-match="{esc(match_id)}"><td>{esc(utc_time(m["at"]))}</td>'
                          f"<td><code>{esc(match_id)}</code></td><td>{bots}</td><td>{replay}</td></tr>")  # fmt: skip
    legend = "".join(f"<span>{swatch(k)}{esc(k[0])} {esc(k[1])}</span>" for k in histories)
    made = utc_time(generated if generated is not None else time.time()) + " UTC"
    linked = sum(1 for match_id in matches if match_id in links)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<link rel="icon" href="data:,"><title>{esc(game_id)} ladder</title><style>{_PAGE_STYLE}</style></head>
<body><header><h1>{esc(game_id)} ladder</h1>
<p>{len(standings)} bot version(s) · {len(matches)} rated match(es) · {linked} with a replay ·
made {esc(made)}</p></header>
<main>
<section><h2>Leaderboard</h2><table id="leaderboard"><thead><tr><th class="num">#</th><th>bot</th><th>version</th>
<th class="num">rating ± 95%</th><th class="num">games</th><th class="num">W/D/L</th><th>last played (UTC)</th></tr>
</thead>
<tbody>{"".join(rows)}</tbody></table>
<p class="muted">? provisional (fewer than 15 games); ± is a 95% interval</p></section>
<section><h2>Rating after each match</h2>{rating_chart_svg(histories, colours, links)}
<div class="legend">{legend}</div></section>
<section><h2>Head to head</h2><table id="h2h"><thead><tr><th>bot A</th><th>bot B</th><th class="num">A wins</th>
<th class="num">draws</th><th class="num">B wins</th><th class="num">A score</th></tr></thead>
<tbody>{"".join(pairs)}</tbody></table>
<p class="muted">every pair of seats of every rated match</p></section>
<section><h2>Matches</h2><table id="matches"><thead><tr><th>finished (UTC)</th><th>match</th>
<th>rating after it (change)</th><th>replay</th></tr></thead><tbody>{"".join(match_rows)}</tbody></table></section>
</main></body></html>
"""
