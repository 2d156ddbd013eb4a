#!/bin/sh
# Start one Redis server of the replicated set (deploy/compose.yaml's redis-N, deploy/k8s/redis.yaml's pods):
# the primary the sentinels name now, or a replica of it. A server that finds no sentinel answering (the
# set's first start, or a restore: docs/backup.md) is the primary if it is REDIS_FIRST, else its replica.
#   REDIS_SELF=redis-1:6379 REDIS_FIRST=redis-0:6379 SENTINELS=sentinel-0:26379,... deploy/redis-server.sh [ARGS]
# Environment: REDIS_PASSWORD (every server's, and what replicas authenticate with), REDIS_WEB_PASSWORD (the
# website's read-only user), SENTINEL_PASSWORD, SENTINEL_SERVICE (default arena), REDIS_CONF (default the
# image's /usr/local/etc/redis/redis.conf, which is deploy/redis.conf), REDIS_RUN_DIR (default /data: where
# the copy Redis runs from goes); ARGS go to redis-server last.
# Every server refuses writes without a replica that acknowledged in the last 10 s (min-replicas-*:
# deploy/redis.conf explains), and announces REDIS_SELF's host, so sentinels and clients name it by it.
set -eu
for var in REDIS_PASSWORD REDIS_WEB_PASSWORD SENTINEL_PASSWORD; do
    eval "value=\${$var:-}"
    [ -n "$value" ] || { echo "redis-server.sh: $var is empty: the Secret holds no password" >&2; exit 1; }
done
self=${REDIS_SELF:?set REDIS_SELF (HOST:PORT)} first=${REDIS_FIRST:?set REDIS_FIRST (HOST:PORT)}
service=${SENTINEL_SERVICE:-arena}
primary=""
for s in $(echo "${SENTINELS:?set SENTINELS (HOST:PORT,...)}" | tr ',' ' '); do
    answer=$(REDISCLI_AUTH=$SENTINEL_PASSWORD timeout 3 redis-cli --no-auth-warning -h "${s%:*}" -p "${s##*:}" \
        SENTINEL get-master-addr-by-name "$service" 2>/dev/null | tr '\n' ':' | sed 's/:$//') || answer=""
    case "$answer" in
        *ERR* | *NOAUTH* | *WRONGPASS* | "" | ":") ;;
        *:*) primary=$answer; break ;;
    esac
done
if [ -z "$primary" ]; then primary=$first; fi
if [ "$primary" = "$self" ]; then
    set -- "$@"
    echo "redis-server.sh: $self starts as the primary" >&2
else
    set -- "$@" --replicaof "${primary%:*}" "${primary##*:}"
    echo "redis-server.sh: $self starts as a replica of $primary" >&2
fi
# A fresh copy of the configuration at every start, in a folder Redis may write: a sentinel makes the servers
# CONFIG REWRITE theirs in a failover, and what it wrote (role, users, passwords) must not outlive this start,
# where the role is decided again above.
run=${REDIS_RUN_DIR:-/data}
cp "${REDIS_CONF:-/usr/local/etc/redis/redis.conf}" "$run/redis.conf"
exec redis-server "$run/redis.conf" --port "${self##*:}" \
    --requirepass "$REDIS_PASSWORD" --masterauth "$REDIS_PASSWORD" \
    --min-replicas-to-write 1 --min-replicas-max-lag 10 \
    --replica-announce-ip "${self%:*}" --replica-announce-port "${self##*:}" \
    --user web on ">$REDIS_WEB_PASSWORD" '~arena:*' resetchannels -@all +@read -@dangerous +@connection \
    +evalsha_ro +eval_ro \
    "$@"
