#!/usr/bin/env bash
# Back up the arena's Redis (a consistent RDB snapshot) and the transcript archive, into DEST.
#   REDIS_URL=redis://:PASSWORD@HOST:6379/0 deploy/backup-redis.sh DEST [ARCHIVE_DIR]
# (the password as in deploy/: letters and digits, not URL-encoded; needs redis-cli, from redis-tools)
# REDIS_DIR: Redis's data folder as this shell sees it (default: what CONFIG GET dir answers, right when
# this runs on Redis's own machine or in its container). Steps (docs/backup.md explains each):
#   1. BGSAVE, and wait until it is done and succeeded (LASTSAVE moves, rdb_last_bgsave_status:ok);
#   2. copy dump.rdb (Redis writes it to a temporary file and renames it: the copy is never half a file);
#   3. then copy the archive folder (after the snapshot: a transcript archived in between is in the files);
#   4. write MANIFEST: time, Redis version, keys, the snapshot's sha256.
set -euo pipefail
dest=${1:?usage: REDIS_URL=... $0 DEST [ARCHIVE_DIR]}
archive=${2:-}
: "${REDIS_URL:?set REDIS_URL (redis://:PASSWORD@HOST:PORT/0)}"
# redis-cli's own -u sends an empty user name with the password (WRONGPASS): parse the URL here.
url_re='^redis://(([^:@]*):([^@]*)@)?([^:/@]+)(:([0-9]+))?(/([0-9]+))?$'
[[ $REDIS_URL =~ $url_re ]] || { echo "backup: REDIS_URL is not redis://[:PASSWORD@]HOST[:PORT][/DB]" >&2; exit 2; }
user=${BASH_REMATCH[2]} password=${BASH_REMATCH[3]} host=${BASH_REMATCH[4]}
port=${BASH_REMATCH[6]:-6379} db=${BASH_REMATCH[8]:-0}
cli() { REDISCLI_AUTH=$password redis-cli -h "$host" -p "$port" -n "$db" ${user:+--user "$user"} "$@"; }
waited() {  # waited WHAT: give up after 10 minutes
    [ "$SECONDS" -lt 600 ] || { echo "backup: gave up waiting for $1" >&2; exit 1; }
    sleep 0.2
}
info() { cli INFO persistence | tr -d '\r' | sed -n "s/^$1://p"; }

mkdir -p "$dest"
dir=${REDIS_DIR:-$(cli CONFIG GET dir | sed -n 2p)}
file=$(cli CONFIG GET dbfilename | sed -n 2p)
before=$(cli LASTSAVE)
while [ "$(cli LASTSAVE)" = "$(date +%s)" ]; do waited "a new second"; done  # LASTSAVE counts seconds
until cli BGSAVE | grep -q "started"; do waited "BGSAVE (another save is running?)"; done
while [ "$(info rdb_bgsave_in_progress)" != 0 ] || [ "$(cli LASTSAVE)" = "$before" ]; do waited "the snapshot"; done
[ "$(info rdb_last_bgsave_status)" = ok ] || { echo "backup: BGSAVE failed (see Redis's log)" >&2; exit 1; }

cp "$dir/$file" "$dest/dump.rdb"
if [ -n "$archive" ]; then
    mkdir -p "$dest/archive"
    cp -a "$archive/." "$dest/archive/"
fi
{
    echo "time: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "redis: $(cli INFO server | tr -d '\r' | sed -n 's/^redis_version://p')"
    echo "keys: $(cli DBSIZE)"
    echo "dump.rdb sha256: $(sha256sum "$dest/dump.rdb" | cut -d' ' -f1)"
    [ -n "$archive" ] && echo "archive files: $(find "$dest/archive" -type f | wc -l)"
} >"$dest/MANIFEST"
echo "backup: $dest ($(sed -n 's/^keys: //p' "$dest/MANIFEST") keys)"
