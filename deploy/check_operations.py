#!/usr/bin/env python3
"""The deployment's operating rules, checked on the shipped files (no cluster, no Docker engine):

- a pod is given longer to stop than it takes to drain (worker: grace > --drain-s, in k8s and Compose);
- every Deployment with two or more replicas has a PodDisruptionBudget selecting it; the gateway runs
  two or more replicas, spread over nodes;
- every container has CPU and memory requests and limits (k8s) and every Compose service limits;
- images are tagged with the project's version (never dev/latest) and the base image is pinned by digest;
- the worker autoscalers (components/keda, components/hpa) target the worker Deployment, and KEDA reads
  the queue's real streams and consumer group (arena/keys.py) through the sentinels, with the Redis Secret
  the pods use;
- the Redis set (redis, sentinel StatefulSets) runs 3 of each, one per node (required anti-affinity).

Prints one line per problem and exits 1, or prints what it checked and exits 0. Needs PyYAML."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "deploy" / "k8s"
sys.path.insert(0, str(ROOT))
from arena import keys  # noqa: E402  (standard library only: no redis needed here)

DEFAULT_DRAIN_S = 30.0  # arena worker --drain-s's default (arena/cli/services.py)
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
REDIS_TRIGGERS = ("redis-streams", "redis-sentinel-streams")
SENTINEL_SERVICE = "arena"  # the name the sentinels monitor the primary by (deploy/redis-sentinel.sh)


def priorities() -> list[str]:
    """The queue's priorities: the values of ``Priority`` in arena/service/queue.py (read, not imported:
    importing it needs redis-py, which a validator's Python may lack)."""
    tree = ast.parse((ROOT / "arena" / "service" / "queue.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Priority")
    return [
        n.value.value
        for n in cls.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
    ]


def version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def k8s_docs(folder: Path = K8S) -> dict[str, list[dict[str, Any]]]:
    """The base's resources (kustomization.yaml's list), and each component's, by where they come from."""
    out: dict[str, list[dict[str, Any]]] = {"base": []}
    for name in yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]:
        out["base"] += load(folder / name)
    for comp in sorted((folder / "components").glob("*/kustomization.yaml")):
        out[comp.parent.name] = [d for name in yaml.safe_load(comp.read_text())["resources"]
                                 for d in load(comp.parent / name)]  # fmt: skip
    return out


def _flag(args: list[str], flag: str, default: float) -> float:
    return float(args[args.index(flag) + 1]) if flag in args else default


def _matches(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def k8s_problems(docs: dict[str, list[dict[str, Any]]]) -> list[str]:
    problems: list[str] = []
    base = docs["base"]
    workloads = [d for d in base if d["kind"] in ("Deployment", "StatefulSet")]
    pdbs = [d for d in base if d["kind"] == "PodDisruptionBudget"]
    for w in workloads:
        name, spec = w["metadata"]["name"], w["spec"]
        pod = spec["template"]["spec"]
        labels = spec["template"]["metadata"]["labels"]
        grace = float(pod.get("terminationGracePeriodSeconds", 30))
        for c in pod["containers"]:
            res = c.get("resources", {})
            for part in ("requests", "limits"):
                missing = {"cpu", "memory"} - set(res.get(part, {}))
                if missing:
                    problems.append(f"k8s {name}/{c['name']}: no {part} for {', '.join(sorted(missing))}")
            args = [str(a) for a in c.get("args", [])]
            if args[:1] == ["worker"]:
                drain = _flag(args, "--drain-s", DEFAULT_DRAIN_S)
                if grace < drain + 10:
                    problems.append(f"k8s {name}: terminationGracePeriodSeconds {grace:g} leaves under 10 s after "
                                    f"the {drain:g} s drain")  # fmt: skip
        replicas = int(spec.get("replicas", 1))
        if replicas >= 2 and not any(_matches(p["spec"]["selector"], labels) for p in pdbs):
            problems.append(f"k8s {name}: {replicas} replicas and no PodDisruptionBudget selecting them")
        if name in ("redis", "sentinel"):  # the Redis set: a machine lost takes one copy, one vote
            if replicas < 3:
                problems.append(f"k8s {name}: {replicas} replica(s); the Redis set needs 3 (a primary and two "
                                "replicas; a quorum of 2 of 3 sentinels)")  # fmt: skip
            anti = pod.get("affinity", {}).get("podAntiAffinity", {})
            if not any(t.get("topologyKey") == "kubernetes.io/hostname"
                       for t in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []):  # fmt: skip
                problems.append(f"k8s {name}: no required pod anti-affinity on kubernetes.io/hostname (two copies "
                                "on one machine go together)")  # fmt: skip
        if name == "gateway":
            if replicas < 2:
                problems.append(f"k8s gateway: {replicas} replica(s); the one address needs two or more")
            if not pod.get("topologySpreadConstraints") and not pod.get("affinity", {}).get("podAntiAffinity"):
                problems.append("k8s gateway: replicas are not spread over nodes")
            pre_stop = pod["containers"][0].get("lifecycle", {}).get("preStop", {})
            if pre_stop.get("exec", {}).get("command", [""])[0] != "sleep" and "sleep" not in pre_stop:
                problems.append("k8s gateway: no preStop sleep: new connections still arrive after SIGTERM")
    tag = next((i.get("newTag") for i in yaml.safe_load((K8S / "kustomization.yaml").read_text()).get("images", [])
                if i["name"] == "shangri-arena"), None)  # fmt: skip
    if str(tag) != version():
        problems.append(f"k8s kustomization: image tag {tag!r}, not the project's version {version()!r}")
    for comp, comp_docs in docs.items():
        if comp == "base":
            continue
        for d in comp_docs:
            target = d.get("spec", {}).get("scaleTargetRef", {}).get("name")
            if d["kind"] in ("ScaledObject", "HorizontalPodAutoscaler") and target != "worker":
                problems.append(f"components/{comp}: {d['kind']} scales {target!r}, not the worker Deployment")
            if d["kind"] == "ScaledObject":
                problems += _keda_problems(d, comp_docs)
    return problems


def _keda_problems(scaled: dict[str, Any], docs: list[dict[str, Any]]) -> list[str]:
    problems = []
    streams = {t["metadata"].get("stream") for t in scaled["spec"]["triggers"] if t["type"] in REDIS_TRIGGERS}
    wanted = {keys.queue(p) for p in priorities()}
    if streams != wanted:
        problems.append(f"components/keda: scales on streams {sorted(s or '' for s in streams)}, "
                        f"the queue is {sorted(wanted)}")  # fmt: skip
    auths = {d["metadata"]["name"]: d for d in docs if d["kind"] == "TriggerAuthentication"}
    for t in scaled["spec"]["triggers"]:
        if t["type"] not in REDIS_TRIGGERS:
            continue
        if t["type"] == "redis-streams" or t["metadata"].get("sentinelMaster") != SENTINEL_SERVICE:
            problems.append(f"components/keda: a Redis trigger not through the sentinels' {SENTINEL_SERVICE!r} "
                            "(a fixed address stops scaling at the first failover)")  # fmt: skip
        if t["metadata"].get("consumerGroup") != keys.CONSUMER_GROUP:
            problems.append(f"components/keda: consumer group {t['metadata'].get('consumerGroup')!r}, "
                            f"the workers' is {keys.CONSUMER_GROUP!r}")  # fmt: skip
        auth = auths.get(t.get("authenticationRef", {}).get("name", ""))
        refs = {(r["name"], r["key"]) for r in (auth or {}).get("spec", {}).get("secretTargetRef", [])}
        if not {("arena-redis", "password"), ("arena-redis", "sentinel-password")} <= refs:
            problems.append("components/keda: a Redis trigger without the arena-redis password and sentinel-password")
    for pod, port, what in (("redis", 6379, "Redis"), ("sentinel", 26379, "the sentinels")):
        if not any(_admits_keda(d, pod, port) for d in docs if d["kind"] == "NetworkPolicy"):
            problems.append(f"components/keda: no NetworkPolicy admits the keda namespace to {what}'s {port} "
                            "(the base denies it: KEDA could not read the queue)")  # fmt: skip
    return problems


def _admits_keda(policy: dict[str, Any], pod: str, port: int) -> bool:
    spec = policy["spec"]
    if spec.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/name") != pod:
        return False
    for rule in spec.get("ingress", []):
        ports = {p.get("port") for p in rule.get("ports", [])}
        spaces = [f.get("namespaceSelector", {}).get("matchLabels", {}) for f in rule.get("from", [])]
        if port in ports and any(s.get("kubernetes.io/metadata.name") == "keda" for s in spaces):
            return True
    return False


def compose_problems(doc: dict[str, Any]) -> list[str]:
    problems = []
    image = str(doc["x-arena"]["image"])
    if not image.endswith(f":-{version()}}}"):
        problems.append(f"compose: image {image!r} does not default to the project's version {version()!r}")
    for name, svc in doc["services"].items():
        if "mem_limit" not in svc or "cpus" not in svc:
            problems.append(f"compose {name}: no mem_limit/cpus")
        if "stop_grace_period" not in svc:
            problems.append(f"compose {name}: no stop_grace_period")
    worker = doc["services"]["worker"]
    command = " ".join(worker.get("command", []))
    drain = _flag(command.split(), "--drain-s", DEFAULT_DRAIN_S)
    grace = float(str(worker.get("stop_grace_period", "10s")).rstrip("s"))
    if grace < drain + 10:
        problems.append(f"compose worker: stop_grace_period {grace:g} s leaves under 10 s after the {drain:g} s drain")
    return problems


def dockerfile_problems(text: str) -> list[str]:
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    problems = []
    for base in re.findall(r"^FROM (\S+)", text, re.M):
        resolved = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), base)
        if not DIGEST.search(resolved):
            problems.append(f"Dockerfile: FROM {resolved} is not pinned by digest")
    return problems


def problems() -> list[str]:
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    return (k8s_problems(k8s_docs()) + compose_problems(compose)
            + dockerfile_problems((ROOT / "deploy" / "Dockerfile").read_text()))  # fmt: skip


def main() -> int:
    found = problems()
    for p in found:
        print(p)
    if not found:
        print("ok: grace > drain (k8s, Compose), PDBs, gateway >= 2 spread replicas, Redis set 3 + 3 one per node, "
              f"limits everywhere, images tagged {version()}, base pinned by digest, autoscalers on the worker and "
              "the queue")  # fmt: skip
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
