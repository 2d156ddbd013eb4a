"""The public setup's rules, checked on the deploy files (run by deploy/validate.sh and by the tests).

Only the gateway is exposed; no example secret would start; TLS and the Redis password are wired into
every process that needs them; NetworkPolicies let only the gateway reach the workers and only arena
pods reach Redis. Plain text checks where PyYAML is missing, parsed YAML where it is present.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DEPLOY = Path(__file__).resolve().parent


def problems() -> list[str]:
    out = []
    compose = (DEPLOY / "compose.yaml").read_text()
    services = re.split(r"\n  (?=[a-z]+:\n)", compose.split("\nservices:\n", 1)[1].split("\nnetworks:\n")[0])
    for block in services:
        name = block.split(":", 1)[0].strip()
        if re.search(r"^\s+ports:", block, re.M) and name != "gateway":
            out.append(f"compose: {name} publishes a port; only the gateway may")
    if "ARENA_TLS_CERT" not in compose or "--requirepass" not in compose or "REDIS_PASSWORD" not in compose:
        out.append("compose: the gateway's TLS or Redis's password is not wired")
    if (DEPLOY / "compose.external-bots.yaml").exists():
        out.append("compose.external-bots.yaml exists: bots reach only the gateway")
    for path in [*DEPLOY.glob("*.example"), *DEPLOY.glob("*.yaml"), *DEPLOY.glob("k8s/*.yaml")]:
        if re.search(r"(?i)change-?me", path.read_text()):
            out.append(f"{path.name}: holds the example secret 'change-me'")
    k8s = {p.name: p.read_text() for p in (DEPLOY / "k8s").glob("*.yaml")}
    for name, text in k8s.items():
        if name != "gateway.yaml" and re.search(r"type:\s*(LoadBalancer|NodePort)", text):
            out.append(f"k8s/{name}: exposes a Service; only the gateway may")
        if "hostPort" in text:
            out.append(f"k8s/{name}: uses a hostPort")
    if not re.search(r"type:\s*LoadBalancer", k8s["gateway.yaml"]):
        out.append("k8s/gateway.yaml: the gateway is not exposed")
    for name in ("gateway.yaml", "worker.yaml"):
        if "ARENA_TLS_CERT" not in k8s[name] or "ARENA_TLS_KEY" not in k8s[name]:
            out.append(f"k8s/{name}: no TLS certificate")
    if "ARENA_TLS_CA" not in k8s["gateway.yaml"]:
        out.append("k8s/gateway.yaml: the gateway does not verify the workers")
    for name in ("gateway.yaml", "worker.yaml", "ladder.yaml"):
        if "$(REDIS_PASSWORD)@redis" not in k8s[name]:
            out.append(f"k8s/{name}: ARENA_REDIS_URL carries no password")
    if "--requirepass" not in k8s["redis.yaml"]:
        out.append("k8s/redis.yaml: Redis takes no password")
    policies = k8s.get("networkpolicy.yaml", "")
    wanted = ("default-deny-ingress", "gateway-from-anywhere", "worker-from-gateway-only", "redis-from-arena-only")
    for policy in wanted:
        if f"name: {policy}" not in policies:
            out.append(f"k8s/networkpolicy.yaml: no {policy}")
    try:
        import yaml
    except ImportError:
        return out
    for doc in yaml.safe_load_all(policies):
        if doc and doc["metadata"]["name"] == "worker-from-gateway-only":
            froms = doc["spec"]["ingress"][0]["from"]
            if froms != [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "gateway"}}}]:
                out.append("k8s/networkpolicy.yaml: workers accept more than the gateway")
    return out


if __name__ == "__main__":
    found = problems()
    for p in found:
        print(f"  {p}")
    sys.exit(1 if found else 0)
