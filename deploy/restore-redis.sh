#!/usr/bin/env bash
# Restore a backup made by deploy/backup-redis.sh into an EMPTY Redis data folder (Redis stopped).
#   deploy/restore-redis.sh BACKUP DATA_DIR [ARCHIVE_DIR]
# Steps (docs/backup.md explains each):
#   1. check the snapshot against the MANIFEST's sha256; copy it in as dump.rdb;
#   2. load it in a temporary redis-server on a loopback port, AOF off, and compare the key count;
#   3. turn AOF on there: Redis writes a fresh AOF of the whole dataset; wait until it is done;
#   4. shut it down (saving the RDB too): DATA_DIR now holds dump.rdb and appendonlydir/, and the usual
#      Redis (deploy/redis.conf, appendonly yes) starts from them;
#   5. copy the transcript archive back.
set -euo pipefail
backup=${1:?usage: $0 BACKUP DATA_DIR [ARCHIVE_DIR]}
data=${2:?usage: $0 BACKUP DATA_DIR [ARCHIVE_DIR]}
archive=${3:-}
mkdir -p "$data"
if [ -e "$data/dump.rdb" ] || [ -e "$data/appendonlydir" ]; then
    echo "restore: $data already holds Redis data; restore into an empty folder" >&2
    exit 2
fi
want=$(sed -n 's/^dump.rdb sha256: //p' "$backup/MANIFEST")
[ "$(sha256sum "$backup/dump.rdb" | cut -d' ' -f1)" = "$want" ] \
    || { echo "restore: $backup/dump.rdb does not match its MANIFEST" >&2; exit 1; }
cp "$backup/dump.rdb" "$data/dump.rdb"

port=${RESTORE_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
redis-server --port "$port" --bind 127.0.0.1 --dir "$data" --dbfilename dump.rdb --appendonly no --save "" \
    --daemonize no --logfile "$data/restore.log" &
pid=$!
cli() { redis-cli -p "$port" "$@"; }
until cli PING 2>/dev/null | grep -q PONG; do
    kill -0 "$pid" 2>/dev/null || { echo "restore: redis-server did not start (see $data/restore.log)" >&2; exit 1; }
    sleep 0.2
done
keys=$(cli DBSIZE)
want_keys=$(sed -n 's/^keys: //p' "$backup/MANIFEST")
[ "$keys" = "$want_keys" ] || { echo "restore: $keys keys loaded, the backup had $want_keys" >&2; kill "$pid"; exit 1; }
cli CONFIG SET appendonly yes >/dev/null
aof() { cli INFO persistence | tr -d '\r' | sed -n "s/^$1://p"; }
while [ "$(aof aof_rewrite_in_progress)" != 0 ] || [ "$(aof aof_rewrite_scheduled)" != 0 ]; do sleep 0.2; done
[ "$(aof aof_last_bgrewrite_status)" = ok ] || { echo "restore: writing the AOF failed" >&2; kill "$pid"; exit 1; }
cli SHUTDOWN SAVE >/dev/null 2>&1 || true
wait "$pid" || true
rm -f "$data/restore.log"
if [ -n "$archive" ] && [ -d "$backup/archive" ]; then
    mkdir -p "$archive"
    cp -a "$backup/archive/." "$archive/"
fi
echo "restore: $keys keys in $data (dump.rdb and appendonlydir/); start Redis on it as usual"
