/* The replay page's script.
 *
 * It draws the frames the arena embedded in #replay-data: every position of the match as the engines
 * replayed it from the transcript (arena/replay/frames.py). It applies no rule of either game: what a
 * move changed (spaces, a journey's students and the tiles sent home, the cards of a Shanghai) comes
 * with the data, read from the engine's positions before and after it.
 *
 * Stable hooks for people and tests: #ply-shown[data-ply][data-plies], #scores[data-scores],
 * #result[data-scores][data-ranks][data-end-reason][data-plies], #verified[data-verified],
 * #moves li[data-frame][data-kind], the board's [data-bridge][data-broken], #journey-arrow[data-from][data-to],
 * .space[data-moved], body[data-ready][data-ply]; window.__replayErrors collects script errors.
 */
(function () {
  "use strict";

  var SVGNS = "http://www.w3.org/2000/svg";
  var D = JSON.parse(document.getElementById("replay-data").textContent);
  var HEADER = D.header;
  var GAME = D.game;
  var FOOTER = D.footer;
  var NAMES = { shangrila: "The Bridges of Shangri-La", shanghaien: "Shanghaien" };
  var NATION_COLOURS = {
    american: "#36539b", french: "#3d8fc4", german: "#4b4b4b", chinese: "#c0392b",
    dutch: "#e07b24", turkish: "#15977f", spanish: "#c9a10a", italian: "#2c9a4b"
  };
  var TRICK_COLOUR = "#5b3d7a";
  var TRICK_NAMES = { adjust: "die \u00b11", both: "add both dice", reroll: "roll again" };
  var INCIDENT_NAMES = {
    refusal: "refused", strike: "strike", disconnect: "disconnected", reconnect: "reconnected",
    forfeit: "forfeit", resumed: "resumed"
  };

  // ------------------------------------------------------------------------------ small helpers

  function put(e, attrs, children) {
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined) return;
        if (k === "text") e.textContent = String(v);
        else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, String(v));
      });
    }
    (children || []).forEach(function add(c) {
      if (c === null || c === undefined || c === false) return;
      if (Array.isArray(c)) c.forEach(add);
      else e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    });
    return e;
  }
  function h(tag, attrs) {
    return put(document.createElement(tag), attrs, Array.prototype.slice.call(arguments, 2));
  }
  function s(tag, attrs) {
    return put(document.createElementNS(SVGNS, tag), attrs, Array.prototype.slice.call(arguments, 2));
  }
  function clear(e) {
    while (e.firstChild) e.removeChild(e.firstChild);
    return e;
  }
  function byId(id) {
    return document.getElementById(id);
  }
  function clone(v) {
    return v === null || typeof v !== "object" ? v : JSON.parse(JSON.stringify(v));
  }
  function plural(n, one, many) {
    return n + " " + (n === 1 ? one : many || one + "s");
  }
  function seconds(ms) {
    if (ms === null || ms === undefined) return "";
    if (ms < 1000) return (ms < 10 ? ms.toFixed(1) : Math.round(ms)) + " ms";
    return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
  }
  function textOn(hex) {
    var n = parseInt(hex.slice(1), 16);
    var r = n >> 16, g = (n >> 8) & 255, b = n & 255;
    return 0.299 * r + 0.587 * g + 0.114 * b > 160 ? "#2a251f" : "#ffffff";
  }
  function darker(hex) {
    var n = parseInt(hex.slice(1), 16);
    var f = function (x) { return Math.round(x * 0.7).toString(16).padStart(2, "0"); };
    return "#" + f(n >> 16) + f((n >> 8) & 255) + f(n & 255);
  }
  function when(iso) {  // in UTC and labelled, as the CLI and the ladder pages show times
    if (!iso) return "";
    var t = /(Z|[+-]\d{2}:?\d{2})$/.test(iso) ? new Date(iso) : null;
    if (!t || isNaN(t.getTime())) return iso;
    return t.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }

  // ------------------------------------------------------------------------------ the frames

  /* The first frame whole, each later one a patch on the one before: [path, value] sets, [path] deletes. */
  function applyPatch(root, ops) {
    ops.forEach(function (op) {
      var path = op[0];
      if (path.length === 0) { root = clone(op[1]); return; }
      var target = root;
      for (var i = 0; i < path.length - 1; i++) target = target[path[i]];
      var key = path[path.length - 1];
      if (op.length === 1) delete target[key];
      else target[key] = clone(op[1]);
    });
    return root;
  }
  var FRAMES = [D.frames[0]];
  for (var i = 1; i < D.frames.length; i++) FRAMES.push(applyPatch(clone(FRAMES[i - 1]), D.frames[i]));
  var LAST = FRAMES.length - 1;
  var FIRST_VIEW = FRAMES[0].view;
  var N = GAME.num_players;
  var FORFEITED = {};
  D.incidents.forEach(function (x) { if (x.kind === "forfeit") FORFEITED[x.seat] = x.ply; });

  /* Seat colours come with the data (arena/colours.py: the rule the ladder page uses too). */
  function seatColour(seat) {
    return (D.seat_colours && D.seat_colours[seat]) || "#888888";
  }
  function seatName(seat) {
    var x = HEADER.seats[seat];
    return x ? x.bot_name : "seat " + seat;
  }
  function colourName(seat) {
    return GAME.family === "shangrila" && FIRST_VIEW.colours ? FIRST_VIEW.colours[seat] : "seat " + seat;
  }
  function chip(seat) {
    if (seat < 0) return h("span", { "class": "chip chance", title: "chance" });
    var e = h("span", { "class": "chip", title: seatName(seat) + " (seat " + seat + (GAME.family === "shangrila" ? ", " + colourName(seat) : "") + ")" });
    e.style.background = seatColour(seat);
    return e;
  }
  /* The seat's number, beside its bot's name wherever seats are listed: one bot may sit in several seats. */
  function seatTag(seat) {
    return h("span", { "class": "seat-no", text: "seat " + seat });
  }
  /* A table's seat cell: chip, name (cut with an ellipsis when long) and the seat number, never cut. */
  function nameCell(seat) {
    return h("span", { "class": "name-cell" }, chip(seat), h("span", { "class": "nm", text: seatName(seat) }), seatTag(seat));
  }
  function who(seat) {
    return h("span", null, chip(seat), " ", seat < 0 ? "chance" : [seatName(seat), " ", seatTag(seat)]);
  }
  document.documentElement.style.setProperty("--seat0", seatColour(0));
  document.documentElement.style.setProperty("--seat1", seatColour(1));

  var DISCIPLINES = FIRST_VIEW.disciplines || [];
  function abbr(d) {
    var name = DISCIPLINES[d] || "?";
    return name.charAt(0).toUpperCase() + name.charAt(1);
  }

  // ------------------------------------------------------------------------------ header and footer

  function drawHeader() {
    var family = NAMES[GAME.family] || GAME.game_id;
    var players = GAME.family === "shangrila" ? " \u00b7 " + N + " players" : "";
    byId("game-title").textContent = family + players;
    var tc = HEADER.time_control || {};
    var control = seconds(tc.move_ms) + " a move" + (tc.bank_ms ? " + " + seconds(tc.bank_ms) + " bank" : "") +
      (tc.first_move_ms ? " (first move " + seconds(tc.first_move_ms) + ")" : "");
    put(byId("match-meta"), null, [
      h("span", { text: HEADER.match_id }),
      h("span", { text: when(HEADER.started_at) }),
      h("span", { text: HEADER.rated ? "rated" : "unrated" }),
      h("span", { text: "time control " + control }),
      h("span", { text: "engine v" + HEADER.engine_version })
    ]);
    var seats = byId("seats");
    HEADER.seats.forEach(function (x) {
      seats.appendChild(h("li", { "data-seat": x.seat, "class": x.seat in FORFEITED ? "forfeited" : null },
        chip(x.seat), h("span", { text: x.bot_name }),
        x.bot_version ? h("span", { "class": "version", text: x.bot_version }) : null,
        h("span", { "class": "seat-no", text: (GAME.family === "shangrila" ? colourName(x.seat) + " \u00b7 " : "") + "seat " + x.seat })));
    });
  }

  function drawFooter() {
    var box = byId("result");
    var v = D.verified;
    var verified = h("span", { id: "verified", "data-verified": v.ok ? "true" : "false",
      title: v.ok ? "replayed through the engines: seed, every deal and roll, every action and the result check"
        : "line " + v.line + ": " + v.message,
      text: v.ok ? "\u2713 verified with the engines" : "\u2717 does not verify: line " + v.line + ": " + v.message });
    if (!FOOTER) {
      put(box, { "data-end-reason": "unfinished", "data-plies": LAST }, [
        h("span", { "class": "end", text: "Unfinished: no footer yet (" + plural(LAST, "ply", "plies") + ")" }), verified]);
      return;
    }
    var unit = GAME.family === "shangrila" ? "masters" : "points";
    var ends = { completed: "Completed", forfeit: "Ended by forfeit", aborted: "Aborted" };
    var order = FOOTER.ranks.map(function (r, seat) { return seat; });
    order.sort(function (a, b) { return FOOTER.ranks[a] - FOOTER.ranks[b] || a - b; });
    var standings = h("ol", { id: "standings" }, order.map(function (seat) {
      var out = FOOTER.forfeited.indexOf(seat) >= 0;
      // An aborted match places nobody (its ranks are 0): say so rather than print "#0".
      var ranked = FOOTER.end_reason !== "aborted" && FOOTER.ranks[seat] >= 1;
      return h("li", { "data-seat": seat, "data-rank": FOOTER.ranks[seat], "data-score": FOOTER.scores[seat] },
        h("span", { "class": "rank" + (ranked ? "" : " none"), text: ranked ? "#" + FOOTER.ranks[seat] : "no rank",
          title: ranked ? "place " + FOOTER.ranks[seat] : "the match was aborted: it ranks nobody" }),
        chip(seat), h("span", { text: seatName(seat) }), seatTag(seat),
        h("b", { text: FOOTER.scores[seat] }), h("span", { "class": "detail", text: unit }),
        out ? h("span", { "class": "badge", text: "forfeited" }) : null);
    }));
    put(box, {
      "data-end-reason": FOOTER.end_reason, "data-plies": FOOTER.plies,
      "data-scores": JSON.stringify(FOOTER.scores), "data-ranks": JSON.stringify(FOOTER.ranks)
    }, [
      h("span", { "class": "end", text: (ends[FOOTER.end_reason] || FOOTER.end_reason) + " after " + plural(FOOTER.plies, "ply", "plies") }),
      standings,
      FOOTER.detail ? h("span", { "class": "detail", text: FOOTER.detail }) : null,
      h("span", { "class": "seed" }, "seed ", h("code", { text: FOOTER.seed })),
      verified
    ]);
  }

  // ------------------------------------------------------------------------------ the move list

  var moveRows = [];   // by frame: the row of the ply that led to it (frame 0: the start row)
  var incidentRows = [];

  function incidentText(x) {
    var name = seatName(x.seat);
    switch (x.kind) {
      case "refusal":
        return name + " sent " + (x.action !== undefined ? "\u201c" + x.action + "\u201d" : "an action") + " (" + x.code + ")" +
          (x.reason ? ": " + x.reason : "");
      case "strike":
        return name + ": strike " + x.strikes + " (" + x.reason + ")";
      case "disconnect":
        return name + " lost its connection";
      case "reconnect":
        return name + " is back";
      case "forfeit":
        return name + " forfeits (" + x.reason + ")";
      case "resumed":
        return "another referee took the match over from here";
      default:
        return x.kind;
    }
  }

  function drawMoves() {
    var list = byId("moves");
    var byPly = {};
    D.incidents.forEach(function (x) { (byPly[x.ply] = byPly[x.ply] || []).push(x); });
    var addIncidents = function (p) {
      (byPly[p] || []).forEach(function (x) {
        var label = INCIDENT_NAMES[x.kind] || x.kind;
        if (x.kind === "strike") label += " " + x.strikes;
        var row = h("li", { "class": "incident", "data-kind": x.kind, "data-frame": p, "data-seat": x.seat,
          title: incidentText(x) },
          h("span", { "class": "n", text: p }), x.seat !== undefined ? chip(x.seat) : h("span"),
          h("span", { "class": "act" }, h("span", { "class": "badge", text: label }), incidentText(x)));
        incidentRows.push(row);
        list.appendChild(row);
      });
    };
    var start = h("li", { "class": "start", "data-frame": 0, "data-kind": "start" },
      h("span", { "class": "n" }), h("span"), h("span", { "class": "act", text: "start of the match" }));
    moveRows.push(start);
    list.appendChild(start);
    D.moves.forEach(function (m, k) {
      addIncidents(k);
      var classes = "ply" + (m.actor < 0 ? " chance" : "") + (m.fallback ? " fallback" : "");
      var row = h("li", { "class": classes, "data-frame": k + 1, "data-ply": m.ply, "data-kind": m.actor < 0 ? "chance" : "ply",
        title: m.actor < 0 ? "chance" : seatName(m.actor) + (m.think_ms !== undefined ? ", thought " + seconds(m.think_ms) : "") +
          (m.bank_ms !== undefined ? ", time bank left " + seconds(m.bank_ms) : "") },
        h("span", { "class": "n", text: m.ply }), chip(m.actor),
        h("span", { "class": "act", title: m.action }, m.fallback ? h("span", { "class": "badge soft", text: "fallback" }) : null, m.action),
        h("span", { "class": "t", text: m.actor < 0 ? "" : m.fallback ? "timeout" : seconds(m.think_ms) }),
        h("span", { "class": "bank", text: m.actor < 0 ? "" : seconds(m.bank_ms) }));
      moveRows.push(row);
      list.appendChild(row);
    });
    addIncidents(D.moves.length);
    list.addEventListener("click", function (e) {
      var row = e.target.closest("li[data-frame]");
      if (row) { stop(); go(Number(row.getAttribute("data-frame"))); }
    });
  }

  function showInList(k) {
    moveRows.forEach(function (r, i) { r.classList.toggle("current", i === k); });
    incidentRows.forEach(function (r) { r.classList.toggle("here", Number(r.getAttribute("data-frame")) === k); });
    var list = byId("moves");
    var row = moveRows[k];
    var top = row.offsetTop, bottom = top + row.offsetHeight;
    if (top < list.scrollTop + 4) list.scrollTop = Math.max(0, top - 40);
    else if (bottom > list.scrollTop + list.clientHeight - 4) list.scrollTop = bottom - list.clientHeight + 40;
  }

  // ------------------------------------------------------------------------------ status panel

  function drawStatus(k) {
    var f = FRAMES[k];
    var v = f.view;
    var m = k > 0 ? D.moves[k - 1] : null;
    var toMove = v.to_move;
    var phase = v.phase || "";
    var turn;
    if (toMove === -2) turn = h("span", { text: "Game over" });
    else if (toMove === -1) turn = h("span", null, chip(-1), " chance (" + (GAME.family === "shanghaien" ? "the referee deals or rolls" : "chance") + ")");
    else turn = h("span", null, h("span", { "class": "label", text: "to move " }), who(toMove));
    var last = m ? h("span", null, h("span", { "class": "label", text: "last " }), m.actor >= 0 ? who(m.actor) : who(-1), " ",
      h("code", { text: m.action }))
      : h("span", { "class": "label", text: "before the first move" });
    var scores = h("div", { id: "scores", "data-scores": JSON.stringify(f.scores) },
      f.scores.map(function (x, seat) {
        return h("span", { "class": "score", "data-seat": seat }, chip(seat), h("span", { text: seatName(seat) }), seatTag(seat), h("b", { text: x }));
      }));
    var extra = GAME.family === "shangrila" && v.stones ? " \u00b7 " + plural(v.stones.length - (D.board.closed || []).length, "Stone") : "";
    put(clear(byId("status")), null, [
      h("div", { "class": "status-line" },
        h("span", { id: "ply-shown", "data-ply": k, "data-plies": LAST, text: k + " / " + LAST + " plies" }),
        h("span", { "class": "phase", text: phase + extra })),
      h("div", { id: "to-move" }, turn),
      h("div", { id: "last-move" }, last),
      scores
    ]);
  }

  // ------------------------------------------------------------------------------ Shangri-La

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

  // ------------------------------------------------------------------------------ Shanghaien

  var PIPS = { 1: [[0, 0]], 2: [[-1, -1], [1, 1]], 3: [[-1, -1], [0, 0], [1, 1]], 4: [[-1, -1], [1, -1], [-1, 1], [1, 1]],
    5: [[-1, -1], [1, -1], [0, 0], [-1, 1], [1, 1]], 6: [[-1, -1], [1, -1], [-1, 0], [1, 0], [-1, 1], [1, 1]] };

  function die(value, cls, colour) {
    var svg = s("svg", { "class": "die " + (cls || ""), viewBox: "0 0 40 40", "data-value": value });
    var r = s("rect", { x: 2, y: 2, width: 36, height: 36, rx: 7 });
    if (colour) { r.setAttribute("style", "fill:" + colour + ";stroke:" + darker(colour)); }
    svg.appendChild(r);
    (PIPS[value] || []).forEach(function (p) {
      var c = s("circle", { cx: 20 + p[0] * 10, cy: 20 + p[1] * 10, r: 3.8 });
      if (colour) c.setAttribute("style", "fill:" + textOn(colour));
      svg.appendChild(c);
    });
    svg.appendChild(s("title", { text: value ? "die showing " + value : "die" }));
    return svg;
  }

  function cardFace(text) {
    var dash = text.lastIndexOf("-");
    var head = text.slice(0, dash), tail = text.slice(dash + 1);
    if (head === "trick") return { trick: tail, colour: TRICK_COLOUR };
    return { nation: head, value: tail, colour: NATION_COLOURS[head] || "#777" };
  }

  function drawShanghaien(k) {
    var v = FRAMES[k].view;
    var m = k > 0 ? D.moves[k - 1] : null;
    var rounds = (D.deck && D.deck.rounds) || 8;
    var orient = v.orientation === "fwd" ? "die v goes on card v" : v.orientation === "rev" ? "die v goes on card 7\u2212v" : "not chosen yet";
    var top = h("div", { "class": "sh-top" },
      h("span", { "class": "round", text: "Round " + v.round + " / " + rounds }),
      h("span", { "class": "phase", text: v.phase }),
      h("span", { "class": "orient" }, h("span", { "class": "label", text: "opened by " }), who(v.starter)),
      v.phase === "over" ? null : h("span", { "class": "orient", id: "orientation", "data-orientation": v.orientation || "" },
        h("span", { "class": "label", text: "orientation " }), h("b", { text: v.orientation || "\u2013" }), " (" + orient + ")"),
      h("span", { "class": "rolled", id: "rolled", "data-dice": v.rolled.join(",") },
        v.rolled.length ? ["rolled", v.rolled.map(function (x) { return die(x); })] : "no dice rolled"));
    var shanghai = m && m.shanghai;
    var takers = shanghai ? whoTook(shanghai) : [];
    var tavernCards = v.tavern;
    var tavern = h("div", { "class": "tavern", id: "tavern" });
    for (var pos = 1; pos <= 6; pos++) {
      var t = tavernCards[pos - 1];
      var was = shanghai ? FRAMES[k - 1].view.tavern[pos - 1] : null;
      if (!t && was) {
        tavern.appendChild(cardBox(pos, was, takers[pos - 1]));
        continue;
      }
      if (!t) {
        tavern.appendChild(h("div", { "class": "card empty", "data-position": pos },
          h("div", { "class": "pos" }, h("span", { text: "#" + pos })),
          h("div", { "class": "face" }, h("span", { "class": "label", text: "not dealt yet" }))));
        continue;
      }
      tavern.appendChild(cardBox(pos, t, undefined));
    }
    var crews = k === LAST && D.scoring ? scoreSheet(v)
      : h("div", { "class": "crews" }, [0, 1].map(function (seat) { return crewPanel(v, seat); }));
    var deckLeft = 0;
    Object.keys(v.deck_left).forEach(function (c) { deckLeft += v.deck_left[c]; });
    var deck = h("div", { "class": "deck", text: "deck: " + plural(deckLeft, "card") + " left" +
      (v.out_of_game.length ? " \u00b7 out of the game: " + v.out_of_game.join(", ") : "") });
    return h("div", { "class": "sh", id: "shanghaien" }, top, tavern, crews, deck);
  }

  /* One tavern card with the dice on it; ``taker`` (after a Shanghai): the seat that took it, or -1 when it
     left the game. */
  function cardBox(pos, t, taker) {
    var f = cardFace(t.card);
    var band = h("div", { "class": "band" });
    band.style.background = f.colour;
    var face = f.trick
      ? h("div", { "class": "face" }, h("span", { "class": "label", text: "dirty trick" }), h("span", { "class": "trick-name", text: TRICK_NAMES[f.trick] || f.trick }))
      : h("div", { "class": "face" }, h("span", { "class": "nation", text: f.nation }), h("span", { "class": "value", text: f.value }));
    if (f.trick) { face.style.background = f.colour; face.firstChild.style.color = "#e9dcf5"; }
    else face.querySelector(".value").style.color = f.colour;
    var on = h("div", { "class": "on" }, [0, 1].map(function (seat) {
      var n = t.dice[seat];
      var row = h("div", { "data-seat": seat, "data-dice": n });
      for (var j = 0; j < n; j++) row.appendChild(die(t.die_value || 0, "small seat", seatColour(seat)));
      return row;
    }));
    var result = taker === undefined ? null : h("div", { "class": "taker", "data-taken-by": taker,
      title: taker >= 0 ? "taken by " + seatName(taker) + " (seat " + taker + ")" : "out of the game" },
      taker >= 0 ? [h("span", { text: "\u2192\u00a0" }), who(taker)] : h("span", { text: "discarded", title: "out of the game" }));
    var cls = "card" + (f.trick ? " trick" : "") + (taker === undefined ? "" : taker >= 0 ? " gone taken-" + taker : " gone lost");
    return h("div", { "class": cls, "data-position": pos, "data-card": t.card },
      band,
      h("div", { "class": "pos" }, h("span", { text: "#" + pos }), t.die_value ? die(t.die_value, "small") : h("span", { text: taker === undefined ? "?" : "" })),
      face, on, result);
  }

  /* Which seat took each card of the tavern a Shanghai closed (-1: it left the game), from the cards each took. */
  function whoTook(S) {
    var pools = S.taken.map(function (cards) { return cards.slice(); });
    return S.tavern.map(function (card) {
      for (var seat = 0; seat < pools.length; seat++) {
        var i = pools[seat].indexOf(card);
        if (i >= 0) { pools[seat].splice(i, 1); return seat; }
      }
      return -1;
    });
  }

  /* A crew's cards of one nation: its sailors, then its wild sailors (worth 2). */
  function nationCards(c, n) {
    var cards = c.sailors.filter(function (x) { return cardFace(x).nation === n; }).map(function (x) {
      var e = h("span", { "class": "mini", text: cardFace(x).value, title: x });
      e.style.background = NATION_COLOURS[n] || "#777";
      return e;
    });
    c.wild.forEach(function (w) {
      if (w[1] === n) cards.push(h("span", { "class": "mini wild", text: "2", title: "wild sailor (" + w[0] + " card)" }));
    });
    return cards;
  }
  function nationName(n) {
    var dot = h("span", { "class": "chip" });
    dot.style.background = NATION_COLOURS[n] || "#777";
    return h("span", { "class": "nname" }, dot, n);
  }

  /* The engine's score sheet of the last position (D.scoring: ShanghaienState.score_sheet()), nation by
     nation: both crews' cards and totals side by side, and the points each seat gets for it, so the
     points add up in front of the reader. The page computes none of it. */
  function scoreSheet(v) {
    var S = D.scoring;
    var seats = [0, 1];
    var pts = function (seat, n, won) {
      return h("td", { "class": "pts" + (won ? " won" : ""), "data-seat": seat, text: won ? "+" + n : "0" });
    };
    var rows = S.nations.filter(function (x) { return x.totals[0] || x.totals[1]; }).map(function (x) {
      return h("tr", { "data-nation": x.nation, "data-scored-by": x.seat, "data-points": x.points,
        title: x.seat >= 0 ? x.nation + ": " + seatName(x.seat) + " scores " + x.points : x.nation + ": nobody scores" },
        h("td", null, nationName(x.nation)),
        seats.map(function (seat) {
          return h("td", { "class": "crew-col", "data-seat": seat }, h("span", { "class": "cards" }, nationCards(v.crews[seat], x.nation)),
            h("b", { "class": "total", text: x.totals[seat] }));
        }),
        seats.map(function (seat) { return pts(seat, x.points, x.seat === seat); }));
    });
    var tricks = h("tr", { "data-nation": "tricks" }, h("td", { text: "dirty tricks" }),
      seats.map(function (seat) {
        return h("td", { "class": "crew-col", "data-seat": seat }, h("span", { "class": "label", text: "unplayed " }),
          h("b", { "class": "total", text: S.tricks[seat] }));
      }),
      seats.map(function (seat) { return pts(seat, S.tricks[seat], S.tricks[seat] > 0); }));
    var total = h("tr", { "class": "sum" }, h("td", { colspan: 3, text: "points" }),
      seats.map(function (seat) { return h("td", { "class": "pts", "data-seat": seat, text: S.points[seat] }); }));
    var over = v.phase === "over";
    return h("div", { "class": "score-sheet", id: "final-scoring", "data-points": JSON.stringify(S.points) },
      h("h3", { text: over ? "Final scoring" : "Scoring as the crews stood when the match ended" }),
      h("table", null,
        h("thead", null, h("tr", null, h("th", { text: "nation" }),
          seats.map(function (seat) { return h("th", { "class": "crew-col" }, who(seat), h("span", { "class": "label", text: " crew" })); }),
          seats.map(function (seat) { return h("th", { "class": "pts", title: seatName(seat) + "'s points" }, chip(seat), " points"); }))),
        h("tbody", null, rows, tricks, total)),
      h("p", { "class": "label", text: "Both crews hold a nation: the stronger scores the weaker one's total (equal: nobody). " +
        "One crew alone: its own total. An unplayed dirty trick: 1 point." }));
  }

  function crewPanel(v, seat) {
    var c = v.crews[seat];
    var supply = h("span", { "class": "row" });
    for (var j = 0; j < 6; j++) {
      var box = h("span", { "class": "pip-box", title: j < c.dice_in_supply ? "die in supply" : "die placed this round" });
      if (j < c.dice_in_supply) box.style.background = seatColour(seat);
      supply.appendChild(box);
    }
    var tricks = Object.keys(c.tricks).filter(function (kind) { return c.tricks[kind] > 0; }).map(function (kind) {
      return h("span", { "class": "trick-badge", "data-trick": kind, text: (TRICK_NAMES[kind] || kind) + " \u00d7" + c.tricks[kind] });
    });
    var nations = (D.deck && D.deck.nations) || Object.keys(NATION_COLOURS);
    var rows = nations.filter(function (n) { return c.strength[n]; }).map(function (n) {
      return h("div", { "class": "nation-row", "data-nation": n },
        nationName(n), h("span", { "class": "cards" }, nationCards(c, n)),
        h("span", { "class": "strength", text: c.strength[n] }));
    });
    return h("div", { "class": "crew" + (v.to_move === seat ? " to-move" : ""), "data-seat": seat },
      h("h3", null, chip(seat), seatName(seat), seatTag(seat), h("span", { "class": "points", id: "points-" + seat, text: v.points[seat] },
        h("small", { text: "points" }))),
      h("div", { "class": "row" }, h("span", { "class": "label", text: "dice" }), supply,
        c.trick_used_this_round ? h("span", { "class": "badge soft", text: "trick used" }) : null),
      h("div", { "class": "row" }, h("span", { "class": "label", text: "tricks" }),
        tricks.length ? tricks : h("span", { "class": "label", text: "none" })),
      rows.length ? rows : h("div", { "class": "label", text: "no sailors yet" }));
  }

  function drawShanghaienPlayers(k) {
    var v = FRAMES[k].view;
    var table = h("table", { id: "crew-table" },
      h("thead", null, h("tr", null, h("th", { text: "seat" }), h("th", { text: "dice" }), h("th", { text: "sailors" }),
        h("th", { text: "tricks" }), h("th", { "class": "score-col", title: "points if the game ended now (H9): not the sum of the row", text: "points" }))),
      h("tbody", null, [0, 1].map(function (seat) {
        var c = v.crews[seat];
        var held = 0;
        Object.keys(c.tricks).forEach(function (x) { held += c.tricks[x]; });
        return h("tr", { "data-seat": seat, "class": v.to_move === seat ? "to-move" : null },
          h("td", { "class": "name", title: seatName(seat) + " (seat " + seat + ")" }, nameCell(seat)),
          h("td", { text: c.dice_in_supply }), h("td", { text: c.sailors.length + c.wild.length }),
          h("td", { text: held }), h("td", { "class": "total", text: v.points[seat] }));
      })));
    put(clear(byId("players")), null, [table]);
  }

  function shanghaienEvent(m) {
    var S = m.shanghai;
    if (!S) return null;
    return h("div", { id: "shanghai-info" },
      h("h3", null, chip(m.actor), " Shanghai! called by " + seatName(m.actor)),
      h("ul", null,
        S.taken.map(function (cards, seat) {
          return h("li", { "data-seat": seat }, chip(seat), " " + seatName(seat) + " takes " + (cards.length ? cards.join(", ") : "nothing"));
        }),
        S.gone.length ? h("li", { text: "out of the game: " + S.gone.join(", ") }) : null));
  }

  // ------------------------------------------------------------------------------ any other game

  function drawText(k) {
    return h("pre", { "class": "text-board", text: FRAMES[k].text || "" });
  }

  // ------------------------------------------------------------------------------ navigation

  var current = -1;
  var timer = null;
  var slider = byId("slider");
  slider.max = String(LAST);

  function drawEvent(k) {
    var box = clear(byId("event-box"));
    var m = k > 0 ? D.moves[k - 1] : null;
    if (m) {
      var detail = GAME.family === "shangrila" ? shangrilaEvent(m) : GAME.family === "shanghaien" ? shanghaienEvent(m) : null;
      if (detail) box.appendChild(detail);
      if (m.fallback) box.appendChild(h("div", { "class": "incident-note", text: "The referee played this move for " + seatName(m.actor) + " (the documented fallback)." }));
    }
    var here = D.incidents.filter(function (x) { return x.ply === k; });
    if (here.length) {
      box.appendChild(h("ul", { "class": "incident-note" }, here.map(function (x) {
        return h("li", { "data-kind": x.kind }, h("span", { "class": "badge", text: INCIDENT_NAMES[x.kind] || x.kind }), incidentText(x));
      })));
    }
    if (k === LAST && FOOTER) {
      box.appendChild(h("div", null, h("b", { text: "Final position. " }), "Result below."));
    }
  }

  function go(k) {
    k = Math.max(0, Math.min(LAST, Math.round(Number(k)) || 0));
    current = k;
    var board = clear(byId("board"));
    if (GAME.family === "shangrila") { board.appendChild(drawShangrila(k)); placeJourneyLabel(); drawShangrilaPlayers(k); }
    else if (GAME.family === "shanghaien") { board.appendChild(drawShanghaien(k)); drawShanghaienPlayers(k); }
    else { board.appendChild(drawText(k)); clear(byId("players")).appendChild(h("span", { "class": "label", text: "scores: " + FRAMES[k].scores.join(", ") })); }
    drawStatus(k);
    drawEvent(k);
    showInList(k);
    slider.value = String(k);
    byId("btn-first").disabled = byId("btn-prev").disabled = k === 0;
    byId("btn-last").disabled = byId("btn-next").disabled = k === LAST;
    document.body.setAttribute("data-ply", String(k));
    try { history.replaceState(null, "", "#" + k); } catch (e) { /* a file: URL in a strict browser */ }
  }

  function stop() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    byId("btn-play").setAttribute("data-playing", "false");
    byId("btn-play").setAttribute("aria-label", "play");
  }
  function play() {
    stop();
    if (current >= LAST) go(0);
    var rate = Number(byId("speed").value) || 4;
    timer = setInterval(function () {
      if (current >= LAST) stop(); else go(current + 1);
    }, 1000 / rate);
    byId("btn-play").setAttribute("data-playing", "true");
    byId("btn-play").setAttribute("aria-label", "pause");
  }
  function toggle() {
    if (timer === null) play(); else stop();
  }

  byId("btn-first").addEventListener("click", function () { stop(); go(0); });
  byId("btn-prev").addEventListener("click", function () { stop(); go(current - 1); });
  byId("btn-next").addEventListener("click", function () { stop(); go(current + 1); });
  byId("btn-last").addEventListener("click", function () { stop(); go(LAST); });
  byId("btn-play").addEventListener("click", toggle);
  byId("speed").addEventListener("change", function () { if (timer !== null) play(); });
  slider.addEventListener("input", function () { stop(); go(slider.value); });
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var tag = e.target && e.target.tagName;
    if (tag === "SELECT" && (e.key === "ArrowUp" || e.key === "ArrowDown")) return;
    var moves = { ArrowLeft: -1, ArrowRight: 1 };
    if (e.key in moves) { stop(); go(current + moves[e.key]); }
    else if (e.key === "Home") { stop(); go(0); }
    else if (e.key === "End") { stop(); go(LAST); }
    else if (e.key === " " && tag !== "BUTTON") toggle();
    else return;
    e.preventDefault();
  });

  // ------------------------------------------------------------------------------ start

  drawHeader();
  drawFooter();
  drawMoves();
  if (GAME.family === "shangrila") shangrilaLegend();
  if (D.replay_error) {
    var banner = byId("replay-error");
    banner.textContent = "The replay stops early: " + D.replay_error;
    banner.hidden = false;
  }
  var wanted = /^#(\d+)$/.exec(location.hash);
  go(wanted ? Number(wanted[1]) : 0);
  window.addEventListener("hashchange", function () {
    var asked = /^#(\d+)$/.exec(location.hash);
    if (asked && Number(asked[1]) !== current) { stop(); go(Number(asked[1])); }
  });
  window.__replay = { go: go, frames: FRAMES.length, plies: LAST, current: function () { return current; } };
  window.__replayReadyMs = performance.now();
  document.body.setAttribute("data-ready", "true");
})();
