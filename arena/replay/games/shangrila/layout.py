"""Where the replay page draws things: the fixed board layout of The Bridges of Shangri-La.

The coordinates (SVG user units in a 1000 x 760 board) follow the published board as ../shared/BOARD.md
describes it ("where it lies on the board"): 0, 1, 2 along the top, 3 and 9 at the middle of the left
and right edges, 6 bottom left, 12 lower right, 4, 5, 7 and 8 in the centre, 10 and 11 along the bottom.
They are chosen so that no bridge of ``seeds/board.json`` crosses another or passes over a village
(``tests/test_replay.py`` checks both).
"""

from __future__ import annotations

from typing import Final

BOARD_SIZE: Final = (1000, 760)
VILLAGE_XY: Final[tuple[tuple[int, int], ...]] = (
    (95, 95),  # 0 top left
    (470, 75),  # 1 top centre
    (875, 100),  # 2 top right (red walls)
    (230, 395),  # 3 left, middle
    (380, 255),  # 4 upper centre-left
    (640, 240),  # 5 upper centre-right
    (85, 665),  # 6 bottom left
    (470, 450),  # 7 centre
    (720, 455),  # 8 centre right
    (905, 400),  # 9 right, middle
    (330, 665),  # 10 bottom, centre-left
    (590, 680),  # 11 bottom, centre-right
    (860, 660),  # 12 lower right
)
VILLAGE_RADIUS: Final = 62
"""Room a village needs around its centre (its seven spaces sit on a ring inside it)."""
