#!/usr/bin/env bash
# A small private CA for the arena's internal hop (the gateway relaying bots' Play streams to the
# workers; the ladder's listener) and one certificate signed by it, shared by every worker and the
# ladder. Workers are dialled by pod IP or container id, so the gateway checks the certificate for the
# name worker.arena.internal (ARENA_TLS_SERVER_NAME), not for the address it dials.
#
#   deploy/make-internal-ca.sh                   # writes deploy/certs/
#   deploy/make-internal-ca.sh --out DIR         # elsewhere
#   deploy/make-internal-ca.sh --gateway NAME    # also a gateway certificate for NAME (a DNS name or an
#                                                # IPv4 address) from the same CA: a trial without a
#                                                # public certificate; clients then need
#                                                # --tls-ca DIR/ca/ca.crt
#
# Writes (never into the image: .dockerignore keeps deploy/ out of the build context):
#   DIR/ca/ca.crt                  the CA's certificate: the gateway's ARENA_TLS_CA, the healthchecks'
#   DIR/internal/tls.crt, tls.key  the workers' and the ladder's certificate (worker.arena.internal,
#                                  ladder.arena.internal) and key
#   DIR/internal-ca.key            the CA's private key: mounted nowhere; keep it to issue again
#   DIR/gateway/tls.crt, tls.key   with --gateway only (otherwise the public certificate goes there)
# Each folder is mounted whole by the containers that need it (Compose), or goes into a Secret.
# A second run keeps the CA and issues new certificates (the gateway trusts them at once: same CA).
# Keys are mode 0600. Run as root, it hands them to uid 10001, the containers' user; otherwise it
# prints the chown to run. DAYS (default 825) sets the certificates' lifetime; the CA's is 10 years.
set -euo pipefail

out="$(cd "$(dirname "$0")" && pwd)/certs"
gateway=""
days="${DAYS:-825}"
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="${2:?--out needs a folder}"; shift 2 ;;
        --gateway) gateway="${2:?--gateway needs a name}"; shift 2 ;;
        -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
        *) echo "make-internal-ca.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
command -v openssl >/dev/null || { echo "make-internal-ca.sh: needs openssl" >&2; exit 1; }

umask 077
mkdir -p "$out/ca"
chmod 0755 "$out" "$out/ca"  # the containers' user must reach the files; the keys stay 0600
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ca_key="$out/internal-ca.key"
ca_crt="$out/ca/ca.crt"
if [ -s "$ca_key" ] && [ -s "$ca_crt" ]; then
    echo "using the CA in $ca_crt"
else
    cat >"$work/ca.cnf" <<'CNF'
[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
CNF
    openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -days 3650 \
        -config "$work/ca.cnf" -extensions ca -subj "/CN=arena internal CA" \
        -keyout "$ca_key" -out "$ca_crt" 2>/dev/null
    chmod 0644 "$ca_crt"
    echo "made a CA: $ca_crt (its key: $ca_key)"
fi

issue() {  # issue DIR SAN CN: a server certificate for SAN, signed by the CA, as DIR/tls.crt and DIR/tls.key
    local dir=$1 san=$2 cn=$3
    mkdir -p "$dir"
    chmod 0755 "$dir"
    cat >"$work/leaf.ext" <<EXT
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = $san
EXT
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
        -subj "/CN=$cn" -keyout "$dir/tls.key" -out "$work/leaf.csr" 2>/dev/null \
        || { echo "make-internal-ca.sh: cannot write $dir/tls.key (owned by uid 10001? run with sudo)" >&2; exit 1; }
    openssl x509 -req -in "$work/leaf.csr" -CA "$ca_crt" -CAkey "$ca_key" -CAcreateserial \
        -CAserial "$work/ca.srl" -sha256 -days "$days" -extfile "$work/leaf.ext" -out "$dir/tls.crt" 2>/dev/null
    chmod 0644 "$dir/tls.crt"
    openssl verify -CAfile "$ca_crt" "$dir/tls.crt" >/dev/null
    echo "issued $dir/tls.crt for $san ($days days)"
}

issue "$out/internal" "DNS:worker.arena.internal, DNS:ladder.arena.internal" "worker.arena.internal"
keys=("$out/internal/tls.key")
if [ -n "$gateway" ]; then
    case "$gateway" in
        *[!0-9.]*) san="DNS:$gateway" ;;
        *) san="IP:$gateway" ;;
    esac
    issue "$out/gateway" "$san" "$gateway"
    keys+=("$out/gateway/tls.key")
fi

if [ "$(id -u)" = 0 ]; then
    chown 10001:10001 "${keys[@]}"
    echo "keys handed to uid 10001 (the containers' user)"
else
    echo "the containers run as uid 10001: for Compose, sudo chown 10001 ${keys[*]}"
fi
