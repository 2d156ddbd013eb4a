#!/usr/bin/env bash
# Back up the arena's Redis (a consistent RDB snapshot) and the transcript archive, into DEST.
#   REDIS_URL=redis://:PASSWORD@HOST:6379/0 deploy/backup-redis.sh DEST [ARCHIVE_DIR]
#   REDIS_URL=redis+sentinel://:PASSWORD@SENTINEL:26379[,SENTINEL:26379...]/SERVICE[/DB][?sentinel_password=P] \
#       [BACKUP_FROM=replica|primary] deploy/backup-redis.sh DEST [ARCHIVE_DIR]
# (passwords as in deploy/: letters and digits, not URL-encoded; needs redis-cli, from redis-tools)
# A plain URL: REDIS_DIR is Redis's data folder as this shell sees it (default: what CONFIG GET dir answers,
# right when this runs on Redis's own machine or in its container). Steps (docs/backup.md explains each):
#   1. BGSAVE, and wait until it is done and succeeded (LASTSAVE moves, rdb_last_bgsave_status:ok);
#   2. copy dump.rdb (Redis writes it to a temporary file and renames it: the copy is never half a file);
#   3. then copy the archive folder (after the snapshot: a transcript archived in between is in the files);
#   4. write MANIFEST: time, Redis version, keys, the snapshot's sha256.
# A Sentinel URL (a primary with replicas, docs/deploy.md): the sentinels name the servers; the snapshot
# comes from a replica in sync (BACKUP_FROM=replica, the default: the primary does not fork for it), else
# from the primary, over the network (redis-cli --rdb: a full sync's snapshot, consistent as BGSAVE's), so
# no data folder is needed; its keys are counted by loading it in a temporary redis-server on loopback.
set -euo pipefail
dest=${1:?usage: REDIS_URL=... $0 DEST [ARCHIVE_DIR]}
archive=${2:-}
: "${REDIS_URL:?set REDIS_URL (redis://:PASSWORD@HOST:PORT/0 or redis+sentinel://...)}"
# redis-cli's own -u sends an empty user name with the password (WRONGPASS): parse the URL here.
url_re='^redis://(([^:@]*):([^@]*)@)?([^:/@]+)(:([0-9]+))?(/([0-9]+))?$'
sentinel_re='^redis\+sentinel://(([^:@]*):([^@]*)@)?([^/@]+)/([^/?]+)(/([0-9]+))?(\?sentinel_password=([^&]*))?$'
if [[ $REDIS_URL =~ $sentinel_re ]]; then
    user=${BASH_REMATCH[2]} password=${BASH_REMATCH[3]} sentinels=${BASH_REMATCH[4]} service=${BASH_REMATCH[5]}
    db=${BASH_REMATCH[7]:-0} sentinel_password=${BASH_REMATCH[9]}
elif [[ $REDIS_URL =~ $url_re ]]; then
    user=${BASH_REMATCH[2]} password=${BASH_REMATCH[3]} host=${BASH_REMATCH[4]}
    port=${BASH_REMATCH[6]:-6379} db=${BASH_REMATCH[8]:-0} sentinels=
else
    echo "backup: REDIS_URL is not redis://[:PASSWORD@]HOST[:PORT][/DB] or redis+sentinel://[:PASSWORD@]HOST:PORT,.../SERVICE[/DB]" >&2
    exit 2
fi
if [ -n "$sentinels" ]; then  # the server to take the snapshot from, as the sentinels see the set now
    ask() {  # ask SENTINEL-ARGS...: the first sentinel that answers
        local s
        for s in ${sentinels//,/ }; do
            local h=${s%:*} p=26379
            [[ $s == *:* ]] && p=${s##*:}
            if env ${sentinel_password:+REDISCLI_AUTH="$sentinel_password"} redis-cli -h "$h" -p "$p" \
                --no-auth-warning SENTINEL "$@" 2>/dev/null; then return 0; fi
        done
        echo "backup: no sentinel of $sentinels answered" >&2
        exit 1
    }
    primary=$(ask get-master-addr-by-name "$service" | tr '\n' ' ')
    read -r host port <<<"$primary"
    [ -n "${host:-}" ] || { echo "backup: the sentinels know no primary named $service" >&2; exit 1; }
    if [ "${BACKUP_FROM:-replica}" = replica ]; then  # a replica that is up and linked (flags slave only)
        replica=$(ask replicas "$service" | tr -d '\r' | awk '
            /^ip$/ {getline; ip=$0} /^port$/ {getline; p=$0}
            /^flags$/ {getline; if ($0 == "slave") ok=1; else ok=0}
            /^master-link-status$/ {getline; if (ok && $0 == "ok" && !found) {print ip, p; found=1}}')
        [ -n "$replica" ] && read -r host port <<<"$replica"
    fi
    primary=${primary% }
    echo "backup: snapshot from $host:$port (the sentinels' primary is ${primary/ /:})" >&2
fi
cli() {
    env ${password:+REDISCLI_AUTH="$password"} redis-cli -h "$host" -p "$port" -n "$db" ${user:+--user "$user"} \
        --no-auth-warning "$@"
}
waited() {  # waited WHAT: give up after 10 minutes
    [ "$SECONDS" -lt 600 ] || { echo "backup: gave up waiting for $1" >&2; exit 1; }
    sleep 0.2
}
info() { cli INFO persistence | tr -d '\r' | sed -n "s/^$1://p"; }

mkdir -p "$dest"
if [ -n "$sentinels" ]; then
    cli --rdb "$dest/dump.rdb.part" >/dev/null
    mv "$dest/dump.rdb.part" "$dest/dump.rdb"
    # count its keys: load it in a temporary redis-server on loopback (DBSIZE on the live server moves)
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    cp "$dest/dump.rdb" "$scratch/dump.rdb"
    tport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --port "$tport" --bind 127.0.0.1 --dir "$scratch" --dbfilename dump.rdb --appendonly no --save "" \
        --daemonize no --logfile "$scratch/redis.log" &
    tpid=$!
    until redis-cli -p "$tport" PING 2>/dev/null | grep -q PONG; do
        kill -0 "$tpid" 2>/dev/null || { echo "backup: the snapshot does not load (see a redis-server log)" >&2; exit 1; }
        sleep 0.2
    done
    keys=$(redis-cli -p "$tport" -n "$db" DBSIZE)
    redis-cli -p "$tport" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    wait "$tpid" || true
else
    dir=${REDIS_DIR:-$(cli CONFIG GET dir | sed -n 2p)}
    file=$(cli CONFIG GET dbfilename | sed -n 2p)
    before=$(cli LASTSAVE)
    while [ "$(cli LASTSAVE)" = "$(date +%s)" ]; do waited "a new second"; done  # LASTSAVE counts seconds
    until cli BGSAVE | grep -q "started"; do waited "BGSAVE (another save is running?)"; done
    while [ "$(info rdb_bgsave_in_progress)" != 0 ] || [ "$(cli LASTSAVE)" = "$before" ]; do waited "the snapshot"; done
    [ "$(info rdb_last_bgsave_status)" = ok ] || { echo "backup: BGSAVE failed (see Redis's log)" >&2; exit 1; }
    cp "$dir/$file" "$dest/dump.rdb"
    keys=$(cli DBSIZE)
fi
if [ -n "$archive" ]; then
    mkdir -p "$dest/archive"
    cp -a "$archive/." "$dest/archive/"
fi
{
    echo "time: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "redis: $(cli INFO server | tr -d '\r' | sed -n 's/^redis_version://p')"
    echo "keys: $keys"
    echo "dump.rdb sha256: $(sha256sum "$dest/dump.rdb" | cut -d' ' -f1)"
    if [ -n "$archive" ]; then echo "archive files: $(find "$dest/archive" -type f | wc -l)"; fi
} >"$dest/MANIFEST"
echo "backup: $dest ($(sed -n 's/^keys: //p' "$dest/MANIFEST") keys)"
