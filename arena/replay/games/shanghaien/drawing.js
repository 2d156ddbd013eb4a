/* Shanghaien on the replay page (arena/replay/games/shanghaien): the tavern with its dice, both crews,
 * what a Shanghai gave out and the engine's final score sheet. The page's script
 * (arena/replay/assets/replay.js) calls this with its helpers and data and draws with the hooks it returns.
 */
window.__replayDrawing = function (R) {
  "use strict";

  var D = R.D, FRAMES = R.FRAMES;  // R.LAST grows while a live match is watched
  var h = R.h, s = R.s, put = R.put, clear = R.clear, byId = R.byId, plural = R.plural, textOn = R.textOn, darker = R.darker;
  var seatColour = R.seatColour, seatName = R.seatName, chip = R.chip, seatTag = R.seatTag, nameCell = R.nameCell, who = R.who;

  var NATION_COLOURS = {
    american: "#36539b", french: "#3d8fc4", german: "#4b4b4b", chinese: "#c0392b",
    dutch: "#e07b24", turkish: "#15977f", spanish: "#c9a10a", italian: "#2c9a4b"
  };
  var TRICK_COLOUR = "#5b3d7a";
  var TRICK_NAMES = { adjust: "die \u00b11", both: "add both dice", reroll: "roll again" };

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
    var crews = k === R.LAST && D.scoring ? scoreSheet(v)
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


  return {
    title: "Shanghaien",
    chance: "the referee deals or rolls",
    draw: function (k, board) { board.appendChild(drawShanghaien(k)); drawShanghaienPlayers(k); },
    event: shanghaienEvent
  };
};
