"""The deployment's operating rules (deploy/check_operations.py) hold on the shipped files, and each rule
catches the mistake it is for; deploy/validate.sh passes with every validator CI installs."""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from tests.helpers import in_ci

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("check_operations", ROOT / "deploy" / "check_operations.py")
assert spec is not None and spec.loader is not None
ops: Any = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ops)


def test_the_shipped_files_follow_the_rules() -> None:
    assert ops.problems() == []


def _workload(docs: dict[str, Any], name: str) -> dict[str, Any]:
    return next(d for d in docs["base"] if d["kind"] in ("Deployment", "StatefulSet") and d["metadata"]["name"] == name)


def _pod(docs: dict[str, Any], name: str) -> dict[str, Any]:
    pod: dict[str, Any] = _workload(docs, name)["spec"]["template"]["spec"]
    return pod


def _one(docs: dict[str, Any], where: str, kind: str) -> dict[str, Any]:
    return next(x for x in docs[where] if x["kind"] == kind)


def _drop_worker_pdb(docs: dict[str, Any]) -> None:
    docs["base"] = [x for x in docs["base"] if (x["kind"], x["metadata"]["name"]) != ("PodDisruptionBudget", "worker")]


def _worker_args(docs: dict[str, Any]) -> list[str]:
    args: list[str] = _workload(docs, "worker")["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


K8S_MISTAKES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("grace equals the drain",
     lambda d: _pod(d, "worker").update(terminationGracePeriodSeconds=30),
     "terminationGracePeriodSeconds 30 leaves under 10 s after the 30 s drain"),
    ("a longer drain", lambda d: _worker_args(d).__setitem__(_worker_args(d).index("--drain-s") + 1, "60"),
     "after the 60 s drain"),
    ("one gateway", lambda d: _workload(d, "gateway")["spec"].update(replicas=1), "gateway: 1 replica(s)"),
    ("gateways on one node", lambda d: _pod(d, "gateway").pop("topologySpreadConstraints"), "not spread over nodes"),
    ("gateway stops at once",
     lambda d: _pod(d, "gateway")["containers"][0].pop("lifecycle"),
     "k8s gateway: no preStop sleep"),
    ("no PDB for the workers",
     _drop_worker_pdb,
     "worker: 2 replicas and no PodDisruptionBudget"),
    ("no memory limit",
     lambda d: _pod(d, "redis")["containers"][0]["resources"]["limits"].pop("memory"),
     "redis/redis: no limits for memory"),
    ("KEDA on a wrong stream",
     lambda d: _one(d, "keda", "ScaledObject")["spec"]["triggers"][0]["metadata"].update(stream="arena:queue"),
     "components/keda: scales on streams"),
    ("KEDA with another group",
     lambda d: _one(d, "keda", "ScaledObject")["spec"]["triggers"][1]["metadata"].update(consumerGroup="ladder"),
     "consumer group 'ladder'"),
    ("KEDA shut out of Redis",
     lambda d: d.update(keda=[x for x in d["keda"] if x["kind"] != "NetworkPolicy"]),
     "components/keda: no NetworkPolicy admits the keda namespace to Redis's 6379"),
    ("HPA on the gateway",
     lambda d: _one(d, "hpa", "HorizontalPodAutoscaler")["spec"]["scaleTargetRef"].update(name="gateway"),
     "components/hpa: HorizontalPodAutoscaler scales 'gateway'"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "mistake", "problem"), K8S_MISTAKES, ids=[m[0] for m in K8S_MISTAKES])
def test_each_kubernetes_rule_catches_its_mistake(
    what: str, mistake: Callable[[dict[str, Any]], None], problem: str
) -> None:
    docs = copy.deepcopy(ops.k8s_docs())
    mistake(docs)
    found = ops.k8s_problems(docs)
    assert any(problem in p for p in found), found


def test_compose_and_dockerfile_rules_catch_their_mistakes() -> None:
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    assert ops.compose_problems(compose) == []
    broken = copy.deepcopy(compose)
    broken["x-arena"]["image"] = "shangri-arena:dev"
    broken["services"]["worker"]["stop_grace_period"] = "30s"
    del broken["services"]["ladder"]["mem_limit"]
    found = ops.compose_problems(broken)
    assert any("does not default to the project's version" in p for p in found), found
    assert any("compose worker: stop_grace_period 30 s" in p for p in found), found
    assert any("compose ladder: no mem_limit/cpus" in p for p in found), found
    text = (ROOT / "deploy" / "Dockerfile").read_text()
    assert ops.dockerfile_problems(text) == []
    unpinned = text.replace("@sha256:", "-latest-was:")
    assert ops.dockerfile_problems(unpinned) == [
        f"Dockerfile: FROM {line.split('=', 1)[1]} is not pinned by digest"
        for line in unpinned.splitlines() if line.startswith("ARG PYTHON_IMAGE=")
    ] * 2  # fmt: skip


def test_validate_sh_passes_with_every_validator_installed() -> None:
    """CI installs the validators (.ci/run: ARENA_DEPLOY_TOOLS); elsewhere, what is on PATH runs."""
    tools = os.environ.get("ARENA_DEPLOY_TOOLS", "")
    env = {**os.environ, "TOOLS": tools}
    done = subprocess.run(["bash", str(ROOT / "deploy" / "validate.sh")], capture_output=True, text=True, env=env,
                          timeout=300, check=False)  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "FAIL" not in out, out
    assert "PASS  operations:" in out and "PASS  public setup:" in out, out
    if in_ci():
        for name in ("yamllint", "compose-spec schema", "kubernetes-validate", "shellcheck", "hadolint", "nginx"):
            assert f"SKIP  {name}" not in out, out
