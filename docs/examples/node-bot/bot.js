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
const token = process.env.ARENA_BOT_TOKEN;
const maxMatches = process.env.ARENA_MATCHES ? Number(process.env.ARENA_MATCHES) : Infinity;
if (!server || !token) {
  console.error('bot.js: set ARENA_SERVER (the referee host:port) and ARENA_BOT_TOKEN');
  process.exit(2);
}
if (!(maxMatches > 0)) {
  console.error(`bot.js: ARENA_MATCHES must be a positive number, not ${process.env.ARENA_MATCHES}`);
  process.exit(2);
}

const protoDir = process.env.ARENA_PROTO_DIR || path.resolve(__dirname, '..', '..', '..', 'proto');
const definition = protoLoader.loadSync('arena/v1/bot.proto', {
  includeDirs: [protoDir],
  keepCase: true, // field names as in the .proto: match_id, turn_id, legal_actions
  longs: String, // uint64 turn_id arrives as a decimal string and goes back unchanged: no precision lost
  enums: String, // RefusalCode, EndReason, SeatStatus as their names
  defaults: true, // absent fields get their proto3 defaults
  oneofs: true, // message.message names the field of the oneof that is set
});
const arena = grpc.loadPackageDefinition(definition).arena.v1;
const client = new arena.BotService(server, grpc.credentials.createInsecure());

let call = null; // the open Play stream
let ended = 0; // MatchEnded messages so far (one per seat: a bot may sit in several seats of a match)
let stopping = false;
let backoffMs = 100;
const turns = new Map(); // "match_id/seat" -> {turn, tried}: the open decision of each seat

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
  const { turn } = entry;
  const view = turn.view_json ? JSON.parse(turn.view_json) : null;
  const action = chooseAction(turn, view, entry.tried);
  entry.tried.add(action);
  call.write({ action: { match_id: turn.match_id, seat: turn.seat, turn_id: turn.turn_id, action } });
}

function onMessage(message) {
  switch (message.message) {
    case 'welcome':
      backoffMs = 100;
      log(`connected to ${server} (session ${message.welcome.session_id})`);
      break;
    case 'match_started': {
      const m = message.match_started;
      log(`match ${m.match_id} (${m.game_id}), seat ${m.seat} of ${m.bot_names.join(', ')}`);
      break;
    }
    case 'turn': {
      const turn = message.turn;
      const entry = { turn, tried: new Set() };
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

function connect() {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  const stream = client.Play(metadata);
  call = stream;
  stream.on('data', onMessage);
  stream.on('error', () => {}); // the 'status' event below says how the stream ended
  stream.on('status', (status) => {
    if (stream !== call) return;
    call = null;
    if (stopping) {
      process.exit(0);
    } else if (FATAL.has(status.code)) {
      log(`the referee refused the bot: ${status.details} (code ${status.code})`);
      process.exit(1);
    } else {
      log(`stream ended (${status.details || status.code}); reconnecting in ${backoffMs} ms`);
      setTimeout(connect, backoffMs * (0.5 + Math.random()));
      backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
    }
  });
  stream.write({
    hello: { bot_name: BOT_NAME, bot_version: BOT_VERSION, sdk_version: SDK_VERSION, match_ids: [] },
  });
}

// Close the stream (the referee then ends it, and 'status' exits 0); exit anyway if that takes long.
function stop(why) {
  if (stopping) return;
  stopping = true;
  log(`${why}: exiting`);
  if (call) call.end();
  else process.exit(0);
  setTimeout(() => process.exit(0), 2000).unref();
}

process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
connect();
