/* The replay page's script.
 *
 * It draws the frames the arena embedded in #replay-data: every position of the match as the engines
 * replayed it from the transcript (arena/replay/frames.py). It applies no rule of any game: what a
 * move changed comes with the data, read from the engine's positions before and after it.
 *
 * What is drawn of a game comes from the game's drawing (arena/replay/drawing.py), whose script part
 * runs before this one and sets window.__replayDrawing = function (R) { return hooks; }: R is this
 * script's helpers and data (below), the hooks (all optional) are
 *   title        the game's name in the header (default: the game id)
 *   unit         what the final scores count (default "points")
 *   chance       what a chance node is, in the status line (default "chance")
 *   colourName   function (seat): the colour the game gives a seat, shown beside its number
 *   phaseExtra   function (view): text after the phase in the status line
 *   draw         function (k, board): draw frame k into #board, and #players (default: the text picture)
 *   event        function (move): what the move did, for the event box (or null)
 *   legend       function (): fill #legend once
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
  function chip(seat) {
    if (seat < 0) return h("span", { "class": "chip chance", title: "chance" });
    var e = h("span", { "class": "chip", title: seatName(seat) + " (seat " + seat + (G.colourName ? ", " + G.colourName(seat) : "") + ")" });
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

  // ------------------------------------------------------------------------------ the game's drawing

  function drawText(k, board) {  // a game without a drawing of its own: the engine's text picture
    board.appendChild(h("pre", { "class": "text-board", text: FRAMES[k].text || "" }));
    clear(byId("players")).appendChild(h("span", { "class": "label", text: "scores: " + FRAMES[k].scores.join(", ") }));
  }
  var R = {
    D: D, HEADER: HEADER, GAME: GAME, FOOTER: FOOTER, FRAMES: FRAMES, LAST: LAST, FIRST_VIEW: FIRST_VIEW, N: N,
    put: put, h: h, s: s, clear: clear, byId: byId, plural: plural, seconds: seconds, textOn: textOn, darker: darker,
    seatColour: seatColour, seatName: seatName, chip: chip, seatTag: seatTag, nameCell: nameCell, who: who
  };
  var G = window.__replayDrawing ? window.__replayDrawing(R) : {};

  // ------------------------------------------------------------------------------ header and footer

  function drawHeader() {
    byId("game-title").textContent = G.title || GAME.game_id;
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
        h("span", { "class": "seat-no", text: (G.colourName ? G.colourName(x.seat) + " \u00b7 " : "") + "seat " + x.seat })));
    });
  }

  function drawFooter() {
    var box = byId("result");
    var v = D.verified;
    var verified = h("span", { id: "verified", "data-verified": v.ok ? "true" : "false",
      title: v.ok ? "replayed through the engines: seed, every deal and roll, every action and the result check"
        : "line " + v.line + ": " + v.message,
      text: v.ok ? "\u2713 verified with the engines" : "\u2717 does not verify: line " + v.line + ": " + v.message });
    if (!FOOTER && D.live) {
      verified.setAttribute("data-verified", "pending");
      verified.textContent = "verified with the engines when it ends";
      put(box, { "data-end-reason": "live", "data-plies": LAST }, [
        h("span", { "class": "end", text: "Live: " + plural(LAST, "ply", "plies") + " so far" }), verified]);
      return;
    }
    if (!FOOTER) {
      put(box, { "data-end-reason": "unfinished", "data-plies": LAST }, [
        h("span", { "class": "end", text: "Unfinished: no footer yet (" + plural(LAST, "ply", "plies") + ")" }), verified]);
      return;
    }
    var unit = G.unit || "points";
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

  function incidentRow(x) {
    var label = INCIDENT_NAMES[x.kind] || x.kind;
    if (x.kind === "strike") label += " " + x.strikes;
    var row = h("li", { "class": "incident", "data-kind": x.kind, "data-frame": x.ply, "data-seat": x.seat,
      title: incidentText(x) },
      h("span", { "class": "n", text: x.ply }), x.seat !== undefined ? chip(x.seat) : h("span"),
      h("span", { "class": "act" }, h("span", { "class": "badge", text: label }), incidentText(x)));
    incidentRows.push(row);
    return row;
  }

  function noteOf(m) {  // the bot's own note on its move: only in its owner's copy of a transcript
    return h("span", { "class": "bot-note", title: seatName(m.actor) + "'s note" }, h("bdi", { text: m.note }));
  }

  function moveRow(m, k) {  // the row of move k, which leads to frame k + 1
    var classes = "ply" + (m.actor < 0 ? " chance" : "") + (m.fallback ? " fallback" : "");
    var row = h("li", { "class": classes, "data-frame": k + 1, "data-ply": m.ply, "data-kind": m.actor < 0 ? "chance" : "ply",
      title: m.actor < 0 ? "chance" : seatName(m.actor) + (m.think_ms !== undefined ? ", thought " + seconds(m.think_ms) : "") +
        (m.bank_ms !== undefined ? ", time bank left " + seconds(m.bank_ms) : "") },
      h("span", { "class": "n", text: m.ply }), chip(m.actor),
      h("span", { "class": "act", title: m.action }, m.fallback ? h("span", { "class": "badge soft", text: "fallback" }) : null, m.action),
      h("span", { "class": "t", text: m.actor < 0 ? "" : m.fallback ? "timeout" : seconds(m.think_ms) }),
      h("span", { "class": "bank", text: m.actor < 0 ? "" : seconds(m.bank_ms) }),
      m.note ? noteOf(m) : null);
    moveRows.push(row);
    return row;
  }

  function drawMoves() {
    var list = byId("moves");
    var byPly = {};
    D.incidents.forEach(function (x) { (byPly[x.ply] = byPly[x.ply] || []).push(x); });
    var addIncidents = function (p) {
      (byPly[p] || []).forEach(function (x) { list.appendChild(incidentRow(x)); });
    };
    var start = h("li", { "class": "start", "data-frame": 0, "data-kind": "start" },
      h("span", { "class": "n" }), h("span"), h("span", { "class": "act", text: "start of the match" }));
    moveRows.push(start);
    list.appendChild(start);
    D.moves.forEach(function (m, k) {
      addIncidents(k);
      list.appendChild(moveRow(m, k));
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
    else if (toMove === -1) turn = h("span", null, chip(-1), " chance (" + (G.chance || "chance") + ")");
    else turn = h("span", null, h("span", { "class": "label", text: "to move " }), who(toMove));
    var last = m ? h("span", null, h("span", { "class": "label", text: "last " }), m.actor >= 0 ? who(m.actor) : who(-1), " ",
      h("code", { text: m.action }))
      : h("span", { "class": "label", text: "before the first move" });
    var scores = h("div", { id: "scores", "data-scores": JSON.stringify(f.scores) },
      f.scores.map(function (x, seat) {
        return h("span", { "class": "score", "data-seat": seat }, chip(seat), h("span", { text: seatName(seat) }), seatTag(seat), h("b", { text: x }));
      }));
    var extra = G.phaseExtra ? G.phaseExtra(v) : "";
    put(clear(byId("status")), null, [
      h("div", { "class": "status-line" },
        h("span", { id: "ply-shown", "data-ply": k, "data-plies": LAST, text: k + " / " + LAST + " plies" }),
        h("span", { "class": "phase", text: phase + extra })),
      h("div", { id: "to-move" }, turn),
      h("div", { id: "last-move" }, last),
      scores
    ]);
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
      var detail = G.event ? G.event(m) : null;
      if (detail) box.appendChild(detail);
      if (m.note) box.appendChild(h("div", { "class": "bot-note", id: "event-note" }, h("b", { text: seatName(m.actor) + "'s note: " }), noteOf(m)));
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
    (G.draw || drawText)(k, board);
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

  // ------------------------------------------------------------------------------ live

  /* A running match on the arena's website: D.live names its Server-Sent Events stream, which sends,
   * for each transcript line after the D.live.from first, what the line adds to the data. The frames
   * are made by the server (arena/replay/frames.py LiveReplay, the same code as for a whole
   * transcript); this only appends them, as apply_update there does. The viewer follows the newest
   * position unless a person has stepped back, and shows the result when the footer comes. */
  function setLive(state, text) {
    var badge = byId("live-status");
    if (!badge) return;
    badge.setAttribute("data-state", state);
    badge.textContent = text;
  }

  function applyUpdate(u) {
    if (u.frame) {
      FRAMES.push(applyPatch(clone(FRAMES[LAST]), u.frame));
      D.moves.push(u.move);
      LAST = FRAMES.length - 1;
      R.LAST = LAST;
      slider.max = String(LAST);
      byId("moves").appendChild(moveRow(u.move, LAST - 1));
    }
    if (u.incident) {
      var x = u.incident;
      D.incidents.push(x);
      if (x.kind === "forfeit") {
        FORFEITED[x.seat] = x.ply;
        var li = document.querySelector('#seats li[data-seat="' + x.seat + '"]');
        if (li) li.classList.add("forfeited");
      }
      byId("moves").appendChild(incidentRow(x));
    }
    if (u.footer) {
      FOOTER = D.footer = R.FOOTER = u.footer;
      if (u.verified) D.verified = u.verified;
      Object.keys(u.extra || {}).forEach(function (k) { D[k] = u.extra[k]; });
    }
    if (u.replay_error) {
      D.replay_error = u.replay_error;
      var banner = byId("replay-error");
      banner.textContent = "The replay stops early: " + D.replay_error;
      banner.hidden = false;
    }
  }

  function follow() {
    var seen = D.live.from;
    var stream = new EventSource(D.live.url + "?from=" + encodeURIComponent(String(seen)));
    setLive("live", "\u25cf live");
    stream.onmessage = function (e) {
      var m = JSON.parse(e.data);
      if (m.n <= seen) return;
      seen = m.n;
      var atEnd = current === LAST;
      applyUpdate(m.update || {});
      clear(byId("result"));
      drawFooter();
      go(atEnd ? LAST : current);
      setLive("live", "\u25cf live");
      document.body.setAttribute("data-lines", String(seen));
    };
    stream.addEventListener("end", function () {
      stream.close();
      setLive("ended", FOOTER ? "finished" : "ended");
      document.body.setAttribute("data-live", "ended");
    });
    stream.onerror = function () {  // the browser reconnects by itself, from the last line it has
      if (stream.readyState !== EventSource.CLOSED) setLive("reconnecting", "reconnecting\u2026");
    };
    document.body.setAttribute("data-live", "following");
  }

  // ------------------------------------------------------------------------------ start

  drawHeader();
  drawFooter();
  drawMoves();
  if (G.legend) G.legend();
  if (D.replay_error) {
    var banner = byId("replay-error");
    banner.textContent = "The replay stops early: " + D.replay_error;
    banner.hidden = false;
  }
  var wanted = /^#(\d+)$/.exec(location.hash);
  go(wanted ? Number(wanted[1]) : D.live && !FOOTER ? LAST : 0);  // live: the newest position
  window.addEventListener("hashchange", function () {
    var asked = /^#(\d+)$/.exec(location.hash);
    if (asked && Number(asked[1]) !== current) { stop(); go(Number(asked[1])); }
  });
  if (D.live && !FOOTER) follow();
  window.__replay = { go: go, frames: FRAMES.length, plies: LAST, current: function () { return current; } };
  window.__replayReadyMs = performance.now();
  document.body.setAttribute("data-ready", "true");
})();
