/* The Bridges of Shangri-La on the replay page (arena/replay/games/shangrila): the board (villages, bridges,
 * Stones, a journey's arrow and its pill), the supplies and what a journey did. The page's script
 * (arena/replay/assets/replay.js) calls this with its helpers and data and draws with the hooks it returns.
 */
window.__replayDrawing = function (R) {
  "use strict";

  var D = R.D, FRAMES = R.FRAMES, FIRST_VIEW = R.FIRST_VIEW, N = R.N;
  var h = R.h, s = R.s, put = R.put, clear = R.clear, byId = R.byId, plural = R.plural, textOn = R.textOn;
  var seatColour = R.seatColour, seatName = R.seatName, chip = R.chip, nameCell = R.nameCell;

  var DISCIPLINES = FIRST_VIEW.disciplines || [];
  function abbr(d) {
    var name = DISCIPLINES[d] || "?";
    return name.charAt(0).toUpperCase() + name.charAt(1);
  }
  function colourName(seat) {
    return FIRST_VIEW.colours ? FIRST_VIEW.colours[seat] : "seat " + seat;
  }

  function bridgeKey(b) { return b[0] + "-" + b[1]; }

  function drawShangrila(k) {
    var B = D.board;
    var v = FRAMES[k].view;
    var m = k > 0 ? D.moves[k - 1] : null;
    var J = m && m.journey;
    var R = B.radius;
    var XY = B.villages;
    var standing = {};
    v.standing_bridges.forEach(function (b) { standing[bridgeKey(b)] = true; });
    var justBroken = {};
    if (J) J.broken.forEach(function (b) { justBroken[bridgeKey(b)] = true; });
    var changed = {};
    if (m && m.changed) m.changed.forEach(function (c) { changed[c[0] + "-" + c[1]] = true; });
    var moved = {};
    if (J) J.moved.forEach(function (x) { if (x.result !== "back") moved[J.to + "-" + x.d] = true; });
    var stones = {};
    v.stones.forEach(function (x) { stones[x] = true; });
    var closed = {};
    B.closed.forEach(function (x) { closed[x] = true; });
    var mover = m && m.actor >= 0 ? seatColour(m.actor) : "#333";

    var svg = s("svg", { id: "board-svg", viewBox: "0 0 " + B.size[0] + " " + B.size[1], preserveAspectRatio: "xMidYMid meet",
      role: "img", "aria-label": "the board after ply " + k, "data-ply": k });
    svg.appendChild(s("defs", null,
      s("pattern", { id: "hatch", width: 8, height: 8, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
        s("rect", { width: 8, height: 8, fill: "#eee9df" }), s("line", { x1: 0, y1: 0, x2: 0, y2: 8, stroke: "#c9c0ad", "stroke-width": 3 })),
      s("marker", { id: "arrowhead", viewBox: "0 0 10 10", refX: 5, refY: 5, markerWidth: 3.2, markerHeight: 3.2, orient: "auto-start-reverse" },
        s("path", { d: "M0,0 L10,5 L0,10 z", fill: mover }))));

    // bridges
    var bridges = s("g", { id: "bridges" });
    B.bridges.forEach(function (b) {
      var key = bridgeKey(b);
      var a = XY[b[0]], c = XY[b[1]];
      var dx = c[0] - a[0], dy = c[1] - a[1], len = Math.hypot(dx, dy), ux = dx / len, uy = dy / len;
      var x1 = a[0] + ux * (R - 4), y1 = a[1] + uy * (R - 4), x2 = c[0] - ux * (R - 4), y2 = c[1] - uy * (R - 4);
      var broken = !standing[key];
      var g = s("g", { "class": "bridge", "data-bridge": key, "data-broken": broken ? "true" : "false",
        "data-just-broken": justBroken[key] ? "true" : "false" },
        s("title", { text: "bridge " + key + (broken ? ": broken" : "") }));
      if (!broken) {
        g.appendChild(s("line", { "class": "deck", x1: x1, y1: y1, x2: x2, y2: y2 }));
        g.appendChild(s("line", { "class": "planks", x1: x1, y1: y1, x2: x2, y2: y2 }));
      } else {
        var mx = (a[0] + c[0]) / 2, my = (a[1] + c[1]) / 2;
        if (justBroken[key]) g.appendChild(s("circle", { "class": "halo", cx: mx, cy: my, r: 17 }));
        g.appendChild(s("line", { "class": "gap", x1: x1, y1: y1, x2: x2, y2: y2 }));
        g.appendChild(s("path", { "class": "cross", d: "M" + (mx - 8) + "," + (my - 8) + " l16,16 M" + (mx + 8) + "," + (my - 8) + " l-16,16" }));
      }
      bridges.appendChild(g);
    });
    svg.appendChild(bridges);

    // villages and their seven spaces
    var villages = s("g", { id: "villages" });
    XY.forEach(function (xy, vi) {
      var x = xy[0], y = xy[1];
      var cls = "village" + (vi === B.red_walled ? " red-walls" : "") + (closed[vi] ? " closed" : "") +
        (J && J.from === vi ? " source" : "") + (J && J.to === vi ? " dest" : "");
      var stone = !!stones[vi];
      var g = s("g", { "class": cls, "data-village": vi, "data-stone": stone ? "true" : "false" },
        s("title", { text: "village " + vi + (closed[vi] ? " (not in play)" : stone ? " (Stone: no action may start here or enter)" : "") }),
        s("circle", { "class": "ground", cx: x, cy: y, r: R }));
      if (stone) {  // village 2 out of play with 3 players has one too (S2): the engine says so
        g.appendChild(s("path", { "class": "stone", d: "M" + (x - 15) + "," + (y + 9) + " l3,-14 l10,-7 l12,3 l6,12 l-4,9 l-13,4 z" }));
      }
      g.appendChild(s("text", { "class": "number", x: x, y: y + 1, text: vi }));
      var row = v.villages[vi];
      for (var d = 0; d < 7 && d < row.length; d++) {
        var angle = (-90 + d * 360 / 7) * Math.PI / 180;
        var cx = x + Math.cos(angle) * 40, cy = y + Math.sin(angle) * 40;
        var sp = row[d];
        var key = vi + "-" + d;
        var attrs = { "class": "space", "data-space": key, "data-discipline": DISCIPLINES[d] };
        if (moved[key]) attrs["data-moved"] = "true";
        var sg = s("g", attrs);
        if (sp === null) {
          sg.appendChild(s("circle", { "class": "empty", cx: cx, cy: cy, r: 16 }));
          sg.appendChild(s("text", { "class": "abbr empty-abbr", x: cx, y: cy, text: abbr(d) }));
          sg.appendChild(s("title", { text: "village " + vi + " " + DISCIPLINES[d] + ": empty" }));
        } else {
          var colour = seatColour(sp[0]);
          sg.setAttribute("data-colour", colourName(sp[0]));
          sg.setAttribute("data-student", sp[1] ? "true" : "false");
          sg.appendChild(s("circle", { "class": "tile", cx: cx, cy: cy, r: 16, fill: colour }));
          sg.appendChild(s("text", { "class": "abbr", x: cx, y: cy, fill: textOn(colour), text: abbr(d) }));
          if (sp[1]) {
            var sx = x + Math.cos(angle) * 56, sy = y + Math.sin(angle) * 56;
            sg.appendChild(s("circle", { "class": "student", cx: sx, cy: sy, r: 7.5, fill: colour }));
          }
          sg.appendChild(s("title", { text: "village " + vi + " " + DISCIPLINES[d] + ": " + colourName(sp[0]) + " master" +
            (sp[1] ? " with its student" : "") + " (" + seatName(sp[0]) + ")" }));
        }
        if (changed[key] || moved[key]) sg.appendChild(s("circle", { "class": "hl", cx: cx, cy: cy, r: 20 }));
        g.appendChild(sg);
      }
      villages.appendChild(g);
    });
    svg.appendChild(villages);

    if (J) drawJourney(svg, J, XY, R, mover);
    return svg;
  }

  function drawJourney(svg, J, XY, R, colour) {
    var a = XY[J.from], b = XY[J.to];
    var dx = b[0] - a[0], dy = b[1] - a[1], len = Math.hypot(dx, dy), ux = dx / len, uy = dy / len;
    var px = -uy, py = ux;  // a bend to one side, so the arrow does not hide the broken bridge
    var sx = a[0] + ux * (R + 2) + px * 18, sy = a[1] + uy * (R + 2) + py * 18;
    var ex = b[0] - ux * (R + 12) + px * 18, ey = b[1] - uy * (R + 12) + py * 18;
    var cx = (a[0] + b[0]) / 2 + px * 62, cy = (a[1] + b[1]) / 2 + py * 62;
    var d = "M" + sx + "," + sy + " Q" + cx + "," + cy + " " + ex + "," + ey;
    var g = s("g", { id: "journey" });
    g.appendChild(s("path", { id: "journey-arrow-casing", d: d }));
    g.appendChild(s("path", { id: "journey-arrow", d: d, stroke: colour, "marker-end": "url(#arrowhead)",
      "data-from": J.from, "data-to": J.to },
      s("title", { text: "journey " + J.from + " \u2192 " + J.to })));
    // A pill beside the arrow: the students that moved (in their colours) and the tiles sent home. It is
    // laid out at (0, 0) and moved to a free place once the board is on the page (placeJourneyLabel).
    var arrived = J.moved.filter(function (x) { return x.result !== "back"; });
    var text = plural(arrived.length, "student") + " in" + (J.home.length ? ", " + J.home.length + " sent home" : "");
    var dots = J.moved.length;
    var label = s("g", { id: "journey-label", "data-moved": J.moved.length, "data-sent-home": J.home.length, "data-dots": dots },
      s("rect", { x: 0, y: 0, width: 10, height: PILL_HEIGHT, rx: PILL_HEIGHT / 2 }));
    J.moved.forEach(function (x, i) {
      label.appendChild(s("circle", { cx: 16 + i * 15, cy: PILL_HEIGHT / 2, r: 6.5, fill: seatColour(x.colour),
        stroke: "#2e2a24", "stroke-width": 1, opacity: x.result === "back" ? 0.35 : 1 }));
    });
    label.appendChild(s("text", { x: 12 + dots * 15, y: PILL_HEIGHT / 2 + 1, text: text }));
    g.appendChild(label);
    svg.appendChild(g);
  }

  var PILL_HEIGHT = 28;

  /* Put the journey's pill where it covers no marker of the board (spaces, students, Stones, a broken
     bridge's cross, the arrow itself), nor a village if it can help it, as near the arrow's bend as that
     allows: its width is the text's measured width, the markers' boxes are the browser's. */
  function placeJourneyLabel() {
    var label = byId("journey-label"), arrow = byId("journey-arrow");
    if (!label || !arrow) return;
    var text = label.querySelector("text");
    var w = Number(text.getAttribute("x")) + text.getComputedTextLength() + 14, hgt = PILL_HEIGHT;
    label.querySelector("rect").setAttribute("width", w);
    var box = function (e) { var r = e.getBBox(); return { x: r.x, y: r.y, w: r.width, h: r.height }; };
    var markers = Array.prototype.map.call(byId("board-svg").querySelectorAll(
      ".space circle, .village .stone, .village .number, .bridge .cross, .bridge .halo"), box);
    var length = arrow.getTotalLength();
    for (var at = 0; at <= length; at += 8) {
      var q = arrow.getPointAtLength(at);
      markers.push({ x: q.x - 6, y: q.y - 6, w: 12, h: 12 });  // the arrow and its white casing
    }
    var villages = Array.prototype.map.call(byId("board-svg").querySelectorAll(".village .ground"), box);
    var size = D.board.size;
    var hits = function (x, y, boxes, most) {
      var n = 0;
      for (var i = 0; i < boxes.length && n < most; i++) {
        var o = boxes[i];
        if (x < o.x + o.w + 2 && o.x < x + w + 2 && y < o.y + o.h + 2 && o.y < y + hgt + 2) n++;
      }
      return n;
    };
    // Candidates: every 10 units within 320 of the arrow's bend; the one covering the fewest markers,
    // then the fewest villages, then the nearest wins.
    var bend = arrow.getPointAtLength(length / 2);
    var best = null, bestCost = Infinity;
    for (var dy = -320; dy <= 320; dy += 10) {
      for (var dx = -320; dx <= 320; dx += 10) {
        var x = Math.min(Math.max(bend.x + dx - w / 2, 4), size[0] - w - 4);
        var y = Math.min(Math.max(bend.y + dy - hgt / 2, 4), size[1] - hgt - 4);
        var cost = Math.hypot(x + w / 2 - bend.x, y + hgt / 2 - bend.y);
        if (cost >= bestCost) continue;
        cost += hits(x, y, markers, 1 + Math.floor(bestCost / 1e6)) * 1e6;
        if (cost >= bestCost) continue;
        cost += hits(x, y, villages, 99) * 1e3;
        if (cost < bestCost) { best = [x, y]; bestCost = cost; }
      }
    }
    label.setAttribute("transform", "translate(" + best[0].toFixed(1) + " " + best[1].toFixed(1) + ")");
    label.setAttribute("data-covers", bestCost >= 1e6 ? "markers" : bestCost >= 1e3 ? "village" : "nothing");
    // Away from the bend, a thin line ties the pill to its arrow.
    var cx = best[0] + w / 2, cy = best[1] + hgt / 2;
    if (Math.hypot(cx - bend.x, cy - bend.y) > 60) {
      label.parentNode.insertBefore(s("line", { id: "journey-leader", x1: bend.x, y1: bend.y,
        x2: Math.min(Math.max(bend.x, best[0]), best[0] + w), y2: Math.min(Math.max(bend.y, best[1]), best[1] + hgt) }), label);
    }
  }

  function drawShangrilaPlayers(k) {
    var v = FRAMES[k].view;
    var table = h("table", { id: "supply" },
      h("thead", null, h("tr", null, h("th", { text: "supply" }),
        DISCIPLINES.map(function (name, d) { return h("th", { title: name, text: abbr(d) }); }),
        h("th", { "class": "score-col", title: "masters of this colour on the board: the score (S17), not the sum of the row", text: "masters" }))),
      h("tbody", null, v.supply.map(function (row, seat) {
        return h("tr", { "data-seat": seat, "class": v.to_move === seat ? "to-move" : null },
          h("td", { "class": "name", title: seatName(seat) + " (seat " + seat + ")" }, nameCell(seat)),
          row.map(function (n) { return h("td", { "class": n ? null : "zero", text: n }); }),
          h("td", { "class": "total", text: v.masters[seat] }));
      })));
    put(clear(byId("players")), null, [table]);
  }

  function shangrilaEvent(m) {
    var J = m.journey;
    if (!J) return null;
    var how = { master: "becomes a master", student: "joins its master as student", won: "wins the space", back: "finds no room: back to its supply" };
    return h("div", { id: "journey-info", "data-from": J.from, "data-to": J.to, "data-sent-home": J.home.length },
      h("h3", null, chip(m.actor), " Journey " + J.from + " \u2192 " + J.to),
      h("ul", null,
        J.moved.map(function (x) { return h("li", null, chip(x.colour), " " + DISCIPLINES[x.d] + " student " + how[x.result]); }),
        J.home.map(function (x) {
          return h("li", { "data-sent-home": colourName(x.colour) }, chip(x.colour),
            " " + colourName(x.colour) + " " + DISCIPLINES[x.d] + (x.tiles > 1 ? " master and student" : " master") + " sent home");
        }),
        J.broken.map(function (b) { return h("li", null, "bridge " + bridgeKey(b) + " breaks"); }),
        J.stones.map(function (x) { return h("li", null, "village " + x + " is cut off: a Stone"); })));
  }

  function shangrilaLegend() {
    put(byId("legend"), null, DISCIPLINES.map(function (name, d) {
      return h("span", null, h("b", { text: abbr(d) }), " " + name);
    }).concat([h("span", { text: "\u2022 big disc: master, small disc: its student; gold ring: changed by the last move" })]));
  }


  return {
    title: "The Bridges of Shangri-La \u00b7 " + N + " players",
    unit: "masters",
    colourName: colourName,
    phaseExtra: function (v) {
      return v.stones ? " \u00b7 " + plural(v.stones.length - (D.board.closed || []).length, "Stone") : "";
    },
    draw: function (k, board) { board.appendChild(drawShangrila(k)); placeJourneyLabel(); drawShangrilaPlayers(k); },
    event: shangrilaEvent,
    legend: shangrilaLegend
  };
};
