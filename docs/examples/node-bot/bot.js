#!/usr/bin/env node
// A starter bot for shangri-arena in Node.js: it plays a random legal action in every game.
//
// It speaks the bot protocol itself (proto/arena/v1/bot.proto, docs/protocol.md): one bidirectional
// stream, BotService/Play, on the referee given in ARENA_SERVER, with the token of ARENA_BOT_TOKEN in the
// call's metadata ("authorization: Bearer <token>"). It sends Hello, answers every Turn with a
// SubmitAction quoting the turn's match, seat and turn_id, and counts MatchEnded messages: after
// ARENA_MATCHES of them (if set) it closes the stream and exits 0. SIGTERM also ends it with status 0.
// A lost connection is retried with back-off; the referee gives the seat back with the current turn.
//
// On an arena, set ARENA_GATEWAY (host:port; ARENA_TLS_CA: the CA file to verify it, else plaintext)
// instead of ARENA_SERVER: the bot opens its session there (ArenaService/OpenSession) and plays each match
// where its MatchAssigned says: through the gateway (referee_address empty: one stream per match, naming
// it), or on referee_address, with the x-arena-route metadata when the assignment has a route (the
// arena's Play proxy): one stream per worker. A match that moves to another worker is assigned again
// with its new route, and the bot follows it there (docs/protocol.md).
//
// The .proto files are read at run time from the repository's proto/ folder (or ARENA_PROTO_DIR).
//
//   npm ci
//   arena play --cmd "node docs/examples/node-bot/bot.js" --vs random --game shanghaien --games 4
'use strict';

const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const BOT_NAME = 'node-random';
const BOT_VERSION = '1.0.0';
const SDK_VERSION = 'node-example-1';
const MAX_BACKOFF_MS = 5000;
// Refusal codes after which another answer to the same turn may still be taken (docs/protocol.md).
const RETRY_CODES = new Set(['REFUSAL_CODE_SYNTAX', 'REFUSAL_CODE_ILLEGAL']);
// Stream endings that reconnecting will not mend: a bad token, a refused Hello, a seat not ours.
const FATAL = new Set([grpc.status.UNAUTHENTICATED, grpc.status.INVALID_ARGUMENT, grpc.status.PERMISSION_DENIED]);

const server = process.env.ARENA_SERVER;
const gateway = process.env.ARENA_GATEWAY;
const token = process.env.ARENA_BOT_TOKEN;
const maxMatches = process.env.ARENA_MATCHES ? Number(process.env.ARENA_MATCHES) : Infinity;
if (!(server || gateway) || !token) {
  console.error('bot.js: set ARENA_SERVER (the referee host:port) or ARENA_GATEWAY (an arena), and ARENA_BOT_TOKEN');
  process.exit(2);
}
if (!(maxMatches > 0)) {
  console.error(`bot.js: ARENA_MATCHES must be a positive number, not ${process.env.ARENA_MATCHES}`);
  process.exit(2);
}

const protoDir = process.env.ARENA_PROTO_DIR || path.resolve(__dirname, '..', '..', '..', 'proto');
const definition = protoLoader.loadSync(['arena/v1/bot.proto', 'arena/v1/arena.proto'], {
  includeDirs: [protoDir],
  keepCase: true, // field names as in the .proto: match_id, turn_id, legal_actions
  longs: String, // uint64 turn_id arrives as a decimal string and goes back unchanged: no precision lost
  enums: String, // RefusalCode, EndReason, SeatStatus as their names
  defaults: true, // absent fields get their proto3 defaults
  oneofs: true, // message.message names the field of the oneof that is set
});
const arena = grpc.loadPackageDefinition(definition).arena.v1;
const credentials = process.env.ARENA_TLS_CA
  ? grpc.credentials.createSsl(require('node:fs').readFileSync(process.env.ARENA_TLS_CA))
  : grpc.credentials.createInsecure();
const clients = new Map(); // address -> BotService client (one connection each)

let ended = 0; // MatchEnded messages so far (one per seat: a bot may sit in several seats of a match)
let stopping = false;
const streams = new Map(); // "address#route#match" -> its Play stream's state (one, without a gateway)
const where = new Map(); // match id -> the key of the stream playing it (session mode)
const endedMatches = new Set();
const turns = new Map(); // "match_id/seat" -> {turn, tried, stream}: the open decision of each seat

function log(text) {
  console.error(`${new Date().toISOString()} ${BOT_NAME}: ${text}`);
}

// The bot's decision. `view` is the seat's view (Turn.view_json parsed; its fields per game are in
// docs/protocol.md); this one ignores it and picks any legal action not refused yet in this turn.
function chooseAction(turn, view, tried) {
  void view;
  const fresh = turn.legal_actions.filter((a) => !tried.has(a));
  const pool = fresh.length > 0 ? fresh : turn.legal_actions;
  return pool[Math.floor(Math.random() * pool.length)];
}

function answer(entry) {
  const { turn, stream } = entry;
  const view = turn.view_json ? JSON.parse(turn.view_json) : null;
  const action = chooseAction(turn, view, entry.tried);
  entry.tried.add(action);
  if (stream.call) stream.call.write({ action: { match_id: turn.match_id, seat: turn.seat, turn_id: turn.turn_id, action } });
}

function onMessage(stream, message) {
  switch (message.message) {
    case 'welcome':
      stream.backoffMs = 100;
      log(`connected to ${stream.address}${stream.route ? ` (route ${stream.route})` : ''} (session ${message.welcome.session_id})`);
      break;
    case 'match_started': {
      const m = message.match_started;
      log(`match ${m.match_id} (${m.game_id}), seat ${m.seat} of ${m.bot_names.join(', ')}`);
      break;
    }
    case 'turn': {
      const turn = message.turn;
      const entry = { turn, tried: new Set(), stream };
      turns.set(`${turn.match_id}/${turn.seat}`, entry);
      answer(entry);
      break;
    }
    case 'refused': {
      const r = message.refused;
      log(`action ${JSON.stringify(r.action)} refused in ${r.match_id}: ${r.code} ${r.reason}`);
      const entry = turns.get(`${r.match_id}/${r.seat}`);
      if (entry && entry.turn.turn_id === r.turn_id && RETRY_CODES.has(r.code) && r.remaining_ms > 0) {
        answer(entry);
      }
      break;
    }
    case 'match_ended': {
      const result = message.match_ended.result;
      for (const seat of result.seats) turns.delete(`${result.match_id}/${seat.seat}`);
      if (gateway && endedMatches.has(result.match_id)) break; // told again after a move: counted already
      endedMatches.add(result.match_id);
      if (gateway) release(result.match_id);
      ended += 1;
      const ranks = result.seats.map((s) => `${s.bot_name}: rank ${s.rank}, score ${s.score}`).join('; ');
      log(`match ${result.match_id} ended (${result.end_reason}): ${ranks}`);
      if (ended >= maxMatches) stop('played its matches');
      break;
    }
    default:
      break;
  }
}

function clientFor(address) {
  if (!clients.has(address)) clients.set(address, new arena.BotService(address, credentials));
  return clients.get(address);
}

// A Play stream to `address` (with `route` through the arena's Play proxy), for `matchIds` (empty: every
// match of the token there); it reconnects with back-off until it is closed or the bot stops.
function openStream(key, address, route, matchIds) {
  const stream = { key, address, route, matchIds, call: null, closed: false, backoffMs: 100 };
  streams.set(key, stream);
  connect(stream);
  return stream;
}

function closeStream(stream) {
  stream.closed = true;
  streams.delete(stream.key);
  if (stream.call) stream.call.end();
}

function connect(stream) {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  if (stream.route) metadata.set('x-arena-route', stream.route);
  const call = clientFor(stream.address).Play(metadata);
  stream.call = call;
  call.on('data', (message) => onMessage(stream, message));
  call.on('error', () => {}); // the 'status' event below says how the stream ended
  call.on('status', (status) => {
    if (stream.call !== call) return;
    stream.call = null;
    if (stopping && [...streams.values()].every((s) => s.call === null)) {
      process.exit(0);
    } else if (stopping || stream.closed) {
      streams.delete(stream.key);
    } else if (FATAL.has(status.code)) {
      log(`the referee refused the bot: ${status.details} (code ${status.code})`);
      if (!gateway) process.exit(1);
      closeStream(stream); // that match is not ours (any more): the others play on
    } else if (gateway && status.code === grpc.status.OK && stream.matchIds.length > 0) {
      streams.delete(stream.key); // through the gateway: its match ended
    } else {
      log(`stream ended (${status.details || status.code}); reconnecting in ${stream.backoffMs} ms`);
      setTimeout(() => { if (!stream.closed && !stopping) connect(stream); }, stream.backoffMs * (0.5 + Math.random()));
      stream.backoffMs = Math.min(MAX_BACKOFF_MS, stream.backoffMs * 2);
    }
  });
  call.write({
    hello: { bot_name: BOT_NAME, bot_version: BOT_VERSION, sdk_version: SDK_VERSION, match_ids: stream.matchIds },
  });
}

// Session mode: where each match is played, from its MatchAssigned (again when it moves).
function assigned(a) {
  if (endedMatches.has(a.match_id)) return;
  const address = a.referee_address || gateway;
  const matchIds = a.referee_address ? [] : [a.match_id];
  const key = `${address}#${a.route}#${matchIds.join(',')}`;
  const before = where.get(a.match_id);
  where.set(a.match_id, key);
  if (!streams.has(key)) openStream(key, address, a.route, matchIds);
  if (before && before !== key) {
    log(`match ${a.match_id} moved: playing it on ${address}${a.route ? ` (route ${a.route})` : ''}`);
    release(a.match_id, before);
  }
}

// A stream none of whose matches is still played on it is closed, a moment later (a next match there
// may be announced meanwhile).
function release(matchId, key = where.get(matchId)) {
  if (where.get(matchId) === key) where.delete(matchId);
  setTimeout(() => {
    const stream = streams.get(key);
    if (stream && ![...where.values()].includes(key)) closeStream(stream);
  }, 3000).unref();
}

function openSession() {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  const session = new arena.ArenaService(gateway, credentials).OpenSession(
    { bot_version: BOT_VERSION, sdk_version: SDK_VERSION }, metadata);
  let backoffMs = 100;
  session.on('data', (event) => {
    if (event.event === 'welcome') {
      backoffMs = 100;
      log(`session open on ${gateway} as ${event.welcome.bot_name}`);
    } else if (event.event === 'assigned') {
      assigned(event.assigned);
    }
  });
  session.on('error', () => {});
  session.on('status', (status) => {
    if (stopping) return;
    if (FATAL.has(status.code)) {
      log(`the arena refused the session: ${status.details} (code ${status.code})`);
      process.exit(1);
    }
    log(`session lost (${status.details || status.code}); reopening in ${backoffMs} ms`);
    setTimeout(openSession, backoffMs * (0.5 + Math.random()));
    backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
  });
}

// Close the streams (the referee then ends them, and 'status' exits 0); exit anyway if that takes long.
function stop(why) {
  if (stopping) return;
  stopping = true;
  log(`${why}: exiting`);
  const open = [...streams.values()].filter((s) => s.call);
  for (const s of open) s.call.end();
  if (open.length === 0) process.exit(0);
  setTimeout(() => process.exit(0), 2000).unref();
}

process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
if (gateway) openSession();
else openStream(`${server}##`, server, '', []);
