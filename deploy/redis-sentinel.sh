#!/bin/sh
# Start one sentinel of the replicated set (deploy/compose.yaml's sentinel-N, deploy/k8s/sentinel.yaml's
# pods), watching the primary its peers name now, else REDIS_FIRST (the set's first start). It writes its
# configuration into SENTINEL_DIR (default /data), which it rewrites as it learns the set.
#   SENTINEL_SELF=sentinel-1:26379 REDIS_FIRST=redis-0:6379 SENTINELS=sentinel-0:26379,... deploy/redis-sentinel.sh
# Environment: SENTINEL_PASSWORD (clients' and the other sentinels': every listener takes a password),
# REDIS_PASSWORD (the servers'), SENTINEL_SERVICE (default arena), SENTINEL_DOWN_AFTER_MS (default 5000:
# a primary silent that long is down; a failover follows in a few seconds), SENTINEL_FAILOVER_TIMEOUT_MS
# (default 60000). A quorum of 2 of the 3 sentinels agrees that the primary is down.
set -eu
for var in REDIS_PASSWORD SENTINEL_PASSWORD; do
    eval "value=\${$var:-}"
    [ -n "$value" ] || { echo "redis-sentinel.sh: $var is empty: the Secret holds no password" >&2; exit 1; }
done
self=${SENTINEL_SELF:?set SENTINEL_SELF (HOST:PORT)} first=${REDIS_FIRST:?set REDIS_FIRST (HOST:PORT)}
service=${SENTINEL_SERVICE:-arena}
dir=${SENTINEL_DIR:-/data}
primary=""
for s in $(echo "${SENTINELS:?set SENTINELS (HOST:PORT,...)}" | tr ',' ' '); do
    [ "$s" = "$self" ] && continue
    answer=$(REDISCLI_AUTH=$SENTINEL_PASSWORD timeout 3 redis-cli --no-auth-warning -h "${s%:*}" -p "${s##*:}" \
        SENTINEL get-master-addr-by-name "$service" 2>/dev/null | tr '\n' ':' | sed 's/:$//') || answer=""
    case "$answer" in
        *ERR* | *NOAUTH* | *WRONGPASS* | "" | ":") ;;
        *:*) primary=$answer; break ;;
    esac
done
if [ -z "$primary" ]; then primary=$first; fi
mkdir -p "$dir"
cat >"$dir/sentinel.conf" <<CONF
port ${self##*:}
dir $dir
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel announce-ip ${self%:*}
sentinel announce-port ${self##*:}
requirepass "$SENTINEL_PASSWORD"
sentinel monitor $service ${primary%:*} ${primary##*:} 2
sentinel auth-pass $service "$REDIS_PASSWORD"
sentinel down-after-milliseconds $service ${SENTINEL_DOWN_AFTER_MS:-5000}
sentinel failover-timeout $service ${SENTINEL_FAILOVER_TIMEOUT_MS:-60000}
sentinel parallel-syncs $service 1
CONF
echo "redis-sentinel.sh: $self watches $service at $primary" >&2
exec redis-server "$dir/sentinel.conf" --sentinel
