"""The Grafana dashboard and the Prometheus rules speak of metrics the code registers, with the labels
it gives them: a renamed family or label breaks this test, not a dashboard nobody looks at. promtool
checks and unit-tests the rules when it is installed (Debian: ``apt-get install prometheus``)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from arena import metrics
from tests.helpers import require_tool

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
RULES = DEPLOY / "prometheus" / "alerts.yml"
RULES_TEST = DEPLOY / "prometheus" / "alerts_test.yml"
DASHBOARD = DEPLOY / "grafana" / "arena-dashboard.json"

METRIC = re.compile(r"\b(arena_[a-z_]+)\b(\{[^}]*\})?")
RECORDED = re.compile(r"\b(arena:[a-z0-9_:]+)")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
LABELS = re.compile(r"([a-z_]+)\s*(?:=~|!~|!=|=)")
SUFFIXES = ("_total", "_bucket", "_count", "_sum")


def family_of(sample: str) -> str:
    for suffix in SUFFIXES:
        if sample.endswith(suffix) and sample.removesuffix(suffix) in metrics.all_family_names():
            return sample.removesuffix(suffix)
    return sample


def problems(expr: str, recorded: set[str]) -> list[str]:
    """What in ``expr`` the code does not register: a family, a label of it, a recording rule."""
    out = []
    labels = metrics.family_labels()
    used: set[str] = set()
    for m in METRIC.finditer(expr):
        family = family_of(m.group(1))
        if family not in labels:
            out.append(f"{m.group(1)} is not a registered metric")
            continue
        used |= labels[family]
        for label in LABELS.findall(m.group(2) or ""):
            if label not in labels[family]:
                out.append(f"{m.group(1)} has no label {label!r}")
    for name in RECORDED.findall(expr):
        if name not in recorded:
            out.append(f"{name} is no recording rule of alerts.yml")
    for group in GROUPING.findall(expr):
        for label in (x.strip() for x in group.split(",") if x.strip()):
            if label not in used | {"job", "instance"}:  # target labels the scrape adds
                out.append(f"grouping by {label!r}, which none of its metrics has")
    return out


def rules() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(RULES.read_text())
    return doc


def test_the_rules_file_is_well_formed_and_speaks_of_registered_metrics() -> None:
    doc = rules()
    assert set(doc) == {"groups"}
    recorded = {r["record"] for g in doc["groups"] for r in g["rules"] if "record" in r}
    alerts = set()
    for group in doc["groups"]:
        assert set(group) == {"name", "rules"} and group["rules"], group.get("name")
        for rule in group["rules"]:
            assert isinstance(rule["expr"], str) and rule["expr"].strip()
            assert not problems(rule["expr"], recorded), (rule.get("alert") or rule.get("record"), problems(
                rule["expr"], recorded))  # fmt: skip
            if "record" in rule:
                assert set(rule) == {"record", "expr"}
                assert re.fullmatch(r"arena:[a-z0-9_]+:[a-z0-9_]+", rule["record"]), rule["record"]
                continue
            assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
            assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["alert"]
            assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
            alerts.add(rule["alert"])
    # what the issue asks to be alerted on, each by the families that tell it
    wanted = {"queue backlog": "arena_queue_depth", "takeovers": "arena_matches_resumed_total",
              "forfeits": "arena:forfeits:ratio15m", "redis errors": "arena_redis_errors_total",
              "ladder lag": "arena_ladder_lag_seconds"}  # fmt: skip
    exprs = {r["alert"]: r["expr"] for g in doc["groups"] for r in g["rules"] if "alert" in r}
    for what, name in wanted.items():
        assert any(name in e for e in exprs.values()), f"no alert on {what} ({name})"
    assert len(alerts) == len(exprs)


def test_the_checker_catches_unknown_names_and_labels() -> None:
    recorded = {"arena:queue_depth:sum"}
    assert problems('sum by (priority) (arena_queue_depth{priority="ladder"})', recorded) == []
    assert problems("rate(arena_move_seconds_bucket[5m])", recorded) == []
    assert problems("arena_queue_depths", recorded) == ["arena_queue_depths is not a registered metric"]
    wrong_label = ["arena_forfeits_total has no label 'end_reason'"]
    assert problems('arena_forfeits_total{end_reason="x"}', recorded) == wrong_label
    assert problems("arena:nothing:here", recorded) == ["arena:nothing:here is no recording rule of alerts.yml"]
    assert problems("sum by (op) (arena_bot_sessions)", recorded) == ["grouping by 'op', which none of its metrics has"]


def test_the_dashboard_parses_and_its_panels_query_registered_metrics() -> None:
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 30
    assert [v["name"] for v in dash["templating"]["list"]] == ["datasource"]
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    queried: set[str] = set()
    for panel in dash["panels"]:
        assert panel["type"] in ("timeseries", "stat"), panel["title"]
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"} and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert not problems(target["expr"], set()), (panel["title"], problems(target["expr"], set()))
            queried |= {family_of(m.group(1)) for m in METRIC.finditer(target["expr"])}
    # every family a person would look for is on the dashboard
    assert metrics.all_family_names() - queried == set()


def test_promtool_checks_and_unit_tests_the_rules() -> None:
    promtool = require_tool("promtool", "apt-get install prometheus")
    for argv in ([promtool, "check", "rules", str(RULES)], [promtool, "test", "rules", str(RULES_TEST)]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
