"""The public setup's rules, checked on the deploy files (run by deploy/validate.sh and by the tests).

    python3 deploy/check_public.py          # prints each broken rule; exit 1 if any, else 0

Rules: only the gateway is exposed (Compose publishes no other port but the website's on loopback, for a
reverse proxy on the host, and the optional Play proxy's 8443, which passes BotService/Play only, ends TLS
with the public certificate, never mounts the workers' key and reads Redis as the read-only user ``web``;
Kubernetes has no other LoadBalancer/NodePort Service, no host ports, and the
website's Ingress is an optional component); no example secret would start (no ``change-me``,
empty placeholders only); TLS is wired into every gRPC listener and the gateway verifies the workers;
Redis is three servers and three sentinels started by deploy/redis-server.sh and deploy/redis-sentinel.sh
(Kubernetes runs identical copies), which refuse an empty password and give every server the password,
``min-replicas-to-write`` and the read-only user ``web``, and the sentinels a password of their own; every
ARENA_REDIS_URL is the Sentinel URL with both passwords, and the website connects as ``web`` with its own;
the NetworkPolicies admit the world to the gateway's port only, the gateway alone to the workers' bot
port, arena pods (and the set itself) alone to Redis and the sentinels, the ingress controller's namespace
alone to the website, monitoring namespaces alone to the metrics ports; the pods keep their security
context, resources and probes.

With PyYAML the files are parsed and every rule is checked on the structure; without it (the project
does not depend on it) a text check of each rule runs instead and a note says so on stderr.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

DEPLOY = Path(__file__).resolve().parent
ROOT = DEPLOY.parent
K8S = DEPLOY / "k8s"
APPS = ("gateway", "worker", "ladder")  # the arena's own processes
WEB = "web"  # the website: reads Redis as the ACL user web (no write), behind an ingress
SET = ("redis", "sentinel")  # the Redis set's pods: servers and sentinels, which reach each other
SERVER_SCRIPT, SENTINEL_SCRIPT = "redis-server.sh", "redis-sentinel.sh"
SENTINELS = {"compose": "sentinel-0:26379,sentinel-1:26379,sentinel-2:26379",
             "k8s": "sentinel-0.sentinel:26379,sentinel-1.sentinel:26379,sentinel-2.sentinel:26379"}  # fmt: skip
WEB_RULES = re.compile(r"""--user web on ">\$REDIS_WEB_PASSWORD" '~arena:\*' resetchannels -@all \+@read""")
WRITE = re.compile(r"\+@(all|write|admin)|\+(set|del|eval|evalsha)\b|allcommands|~\*")
INTERNAL_NAME = "worker.arena.internal"  # the name on the workers' shared certificate (make-internal-ca.sh)
PLAY_PROXY = "play-proxy"  # nginx for BotService/Play only (Compose profile play-proxy): publishes 8443 alone
WEAK = re.compile(r"(?i)change-?me")


# ---- rules on the text: always run -------------------------------------------------------------------

# Without PyYAML the NetworkPolicies are compared with these reviewed specs (comments and spacing aside);
# with it, what they admit is worked out rule by rule instead (policy_problems), so these need updating
# only with a policy change checked where PyYAML is missing.
PINNED_POLICIES = {
    "default-deny-ingress": 'podSelector: {} policyTypes: ["Ingress"]',
    "gateway-from-anywhere": "podSelector: matchLabels: app.kubernetes.io/name: gateway "
    'policyTypes: ["Ingress"] ingress: - ports: - port: 50051 protocol: TCP',
    "worker-from-gateway-only": "podSelector: matchLabels: app.kubernetes.io/name: worker "
    'policyTypes: ["Ingress"] ingress: - from: - podSelector: matchLabels: app.kubernetes.io/name: gateway '
    "ports: - port: 50061 protocol: TCP",
    "redis-from-arena-only": "podSelector: matchLabels: app.kubernetes.io/name: redis "
    'policyTypes: ["Ingress"] ingress: - from: - podSelector: matchExpressions: - key: app.kubernetes.io/name '
    'operator: In values: ["gateway", "worker", "ladder", "web", "redis", "sentinel"] ports: - port: 6379 '
    "protocol: TCP",
    "sentinel-from-arena-only": "podSelector: matchLabels: app.kubernetes.io/name: sentinel "
    'policyTypes: ["Ingress"] ingress: - from: - podSelector: matchExpressions: - key: app.kubernetes.io/name '
    'operator: In values: ["gateway", "worker", "ladder", "web", "redis", "sentinel"] ports: - port: 26379 '
    "protocol: TCP",
    "metrics-from-monitoring": "podSelector: matchExpressions: - key: app.kubernetes.io/name operator: In "
    'values: ["gateway", "worker", "ladder", "web"] policyTypes: ["Ingress"] ingress: - from: - namespaceSelector: '
    'matchLabels: arena.io/monitoring: "true" ports: - port: 9100 protocol: TCP - port: 9101 protocol: TCP '
    "- port: 9102 protocol: TCP - port: 9103 protocol: TCP",
    "web-from-ingress-only": "podSelector: matchLabels: app.kubernetes.io/name: web "
    'policyTypes: ["Ingress"] ingress: - from: - namespaceSelector: matchLabels: arena.io/ingress: "true" '
    "ports: - port: 8080 protocol: TCP",
}


def _squash(text: str) -> str:
    """YAML text without comments, its whitespace runs made single spaces."""
    return " ".join(re.sub(r"(^|\s)#.*$", "", text, flags=re.M).split())


def _documents(text: str) -> list[str]:
    return [d for d in re.split(r"^---\s*$", text, flags=re.M) if d.strip()]


def script_problems(server_text: str | None = None, sentinel_text: str | None = None) -> list[str]:
    """The Redis set's start scripts (Compose runs deploy/'s, Kubernetes identical copies in deploy/k8s/):
    no empty password starts anything; every server takes the password, authenticates to its primary,
    refuses writes without a replica, and has the user ``web`` reading ``arena:*`` only; the sentinels take
    their own password. ``*_text``: a script's text instead of the file's (the tests' broken copies)."""
    out = []
    for script in (SERVER_SCRIPT, SENTINEL_SCRIPT):
        copy = K8S / script
        if not copy.exists() or copy.read_bytes() != (DEPLOY / script).read_bytes():
            out.append(f"k8s/{script} differs from deploy/{script} (cp deploy/{script} deploy/k8s/)")
    server = _squash(server_text if server_text is not None else (DEPLOY / SERVER_SCRIPT).read_text())
    sentinel = _squash(sentinel_text if sentinel_text is not None else (DEPLOY / SENTINEL_SCRIPT).read_text())
    if "for var in REDIS_PASSWORD REDIS_WEB_PASSWORD SENTINEL_PASSWORD; do" not in server or "exit 1" not in server:
        out.append(f"{SERVER_SCRIPT}: a server would start with an empty password")
    for must in ('--requirepass "$REDIS_PASSWORD"', '--masterauth "$REDIS_PASSWORD"', "--min-replicas-to-write 1"):
        if must not in server:
            out.append(f"{SERVER_SCRIPT}: no {must}")
    web = WEB_RULES.search(server)
    if not web:
        out.append(f"{SERVER_SCRIPT}: no read-only user web (--user web on \">$REDIS_WEB_PASSWORD\" '~arena:*' ...)")
    elif WRITE.search(server[web.start() :].split('"$@"')[0]):
        out.append(f"{SERVER_SCRIPT}: the user web may write or reach every key")
    if "for var in REDIS_PASSWORD SENTINEL_PASSWORD; do" not in sentinel:
        out.append(f"{SENTINEL_SCRIPT}: a sentinel would start with an empty password")
    if 'requirepass "$SENTINEL_PASSWORD"' not in sentinel or 'auth-pass $service "$REDIS_PASSWORD"' not in sentinel:
        out.append(f"{SENTINEL_SCRIPT}: the sentinels take no password, or do not authenticate to the servers")
    return out


def text_problems() -> tuple[list[str], list[str]]:
    """Every rule as text; and, apart, the NetworkPolicies compared with the pinned ones."""
    out = []
    files = [p for p in DEPLOY.rglob("*") if p.is_file() and "certs" not in p.relative_to(DEPLOY).parts]
    for path in [*files, ROOT / "docs" / "deploy.md"]:
        text = path.read_text(errors="replace")
        name = path.relative_to(ROOT)
        if path.name != "check_public.py" and WEAK.search(text):
            out.append(f"{name}: holds the example secret 'change-me'")
        if path.name != "check_public.py" and "external-bots" in text:
            out.append(f"{name}: mentions compose.external-bots.yaml, which is gone (bots reach only the gateway)")
    if (DEPLOY / "compose.external-bots.yaml").exists():
        out.append("deploy/compose.external-bots.yaml exists: bots reach only the gateway")

    for line in (DEPLOY / "arena.env.example").read_text().splitlines():
        if re.match(r"^\s*[A-Z_]+\s*=\s*\S", line):
            out.append(f"deploy/arena.env.example: {line.split('=')[0]} has a value; placeholders must be empty")
    for doc in re.split(r"^---$", (K8S / "secret.example.yaml").read_text(), flags=re.M):
        data = re.search(r"^stringData:\n((?:[ #].*\n?)*)", doc, re.M)
        for m in re.finditer(r"^\s+(\w+):\s*(.*?)\s*(#.*)?$", data.group(1) if data else "", re.M):
            if m.group(2) not in ('""', "''", ""):
                out.append(f"deploy/k8s/secret.example.yaml: {m.group(1)} has a value; placeholders must be empty")

    out += script_problems()
    compose = (DEPLOY / "compose.yaml").read_text()
    blocks = re.split(r"\n  (?=[a-z][\w-]*:\n)", compose.split("\nservices:\n", 1)[1].split("\nnetworks:\n")[0])
    services = {b.split(":", 1)[0].strip(): b for b in blocks}
    for name, block in services.items():
        if re.search(r"^\s+ports:", block, re.M) and name not in ("gateway", WEB, PLAY_PROXY):
            out.append(f"compose: {name} publishes a port; only the gateway may")
        if name == WEB and re.search(r'^\s+- "?(?!127\.0\.0\.1:)[\d.:]+"?\s*$', block.split("ports:")[-1], re.M):
            out.append("compose: web publishes a port beyond loopback; its reverse proxy does that")
        if "network_mode" in block:
            out.append(f"compose: {name} sets network_mode")
    if "gateway" not in services or not re.search(r'ports:\s*\n\s*- "?\d+:50051"?', services["gateway"]):
        out.append("compose: the gateway does not publish its port 50051")
    for var in ("ARENA_TLS_CERT", "ARENA_TLS_KEY", "ARENA_TLS_CA", "ARENA_TLS_SERVER_NAME"):
        if var not in services.get("gateway", ""):
            out.append(f"compose: the gateway has no {var}")
    if "ARENA_TLS_CERT" not in compose.split("\nservices:\n")[0]:
        out.append("compose: the workers and the ladder have no TLS certificate")
    redis_shared = compose.split("\nx-redis:", 1)[-1].split("\nx-sentinel:")[0]
    for var in ("REDIS_PASSWORD", "REDIS_WEB_PASSWORD", "SENTINEL_PASSWORD"):
        if f"{var}: ${{{var}:?" not in redis_shared:
            out.append(f"compose: the Redis servers' {var} may be empty (${{{var}:?...}})")
    if f'entrypoint: ["sh", "/usr/local/bin/{SERVER_SCRIPT}"]' not in redis_shared:
        out.append(f"compose: the Redis servers do not start with {SERVER_SCRIPT}")
    for i in range(3):
        if f"./{SERVER_SCRIPT}:/usr/local/bin/{SERVER_SCRIPT}:ro" not in services.get(f"redis-{i}", ""):
            out.append(f"compose: no redis-{i} running deploy/{SERVER_SCRIPT} (three servers: a primary, two replicas)")
        if "<<: *sentinel" not in services.get(f"sentinel-{i}", ""):
            out.append(f"compose: no sentinel-{i} (three sentinels fail the set over)")
    url = (r"ARENA_REDIS_URL: >-\n\s+redis\+sentinel://:\$\{REDIS_PASSWORD:\?[^}]*\}@" + re.escape(SENTINELS["compose"])
           + r"/arena/\d+\?sentinel_password=\$\{SENTINEL_PASSWORD:\?")  # fmt: skip
    if not re.search(url, compose):
        out.append("compose: ARENA_REDIS_URL is not the Sentinel URL with both passwords")
    if "redis+sentinel://web:${REDIS_WEB_PASSWORD:?" not in services.get(WEB, ""):
        out.append("compose: web does not connect as Redis's read-only user web")
    if "ARENA_ADMIN_TOKEN" in services.get(WEB, "") or "REDIS_PASSWORD:" in services.get(WEB, ""):
        out.append("compose: web gets the admin token or Redis's main password")
    for name in ("gateway", "worker"):
        if "ARENA_ADMIN_TOKEN: ${ARENA_ADMIN_TOKEN:?" not in services.get(name, ""):
            out.append(f"compose: {name}: an empty ARENA_ADMIN_TOKEN would start")
    shared = compose.split("\nx-arena:", 1)[-1].split("\nservices:\n")[0]  # what every arena service gets
    if "ARENA_ADMIN_TOKEN" in _squash(services.get("ladder", "") + shared):
        out.append("compose: the ladder gets the admin token it does not use")
    if "- ./certs/gateway:/run/certs/gateway:ro" not in services.get("gateway", ""):
        out.append("compose: the gateway's certificate folder is not mounted")
    if "- ./certs/internal:/run/certs/internal:ro" not in shared or "- ./certs/ca:/run/certs/ca:ro" not in shared:
        out.append("compose: the internal certificate's folders are not mounted")
    if "./certs/internal" in services.get("gateway", ""):
        out.append("compose: the gateway mounts the workers' key")

    k8s = {p.name: p.read_text() for p in K8S.glob("*.yaml")}
    for name, text in k8s.items():
        if name != "gateway.yaml" and re.search(r"type:\s*(LoadBalancer|NodePort)", text):
            out.append(f"k8s/{name}: exposes a Service; only the gateway may")
        if re.search(r"^\s*(nodePort:|hostPort:|hostNetwork:\s*true|kind:\s*Ingress\b)", text, re.M):
            out.append(f"k8s/{name}: NodePort, hostPort, hostNetwork or an Ingress: only the gateway's Service")
    if not re.search(r"type:\s*LoadBalancer", k8s["gateway.yaml"]):
        out.append("k8s/gateway.yaml: the gateway is not exposed")
    if not re.search(r"kind: Service\n(.*\n)*?spec:\n  clusterIP: None", k8s["worker.yaml"]):
        out.append("k8s/worker.yaml: the workers' Service is not headless")
    wants = {
        "gateway.yaml": ("ARENA_TLS_CERT", "ARENA_TLS_KEY", "ARENA_TLS_CA", "ARENA_TLS_SERVER_NAME",
                         "arena-gateway-tls", "arena-internal-tls"),
        "worker.yaml": ("ARENA_TLS_CERT", "ARENA_TLS_KEY", "arena-internal-tls"),
        "ladder.yaml": ("ARENA_TLS_CERT", "ARENA_TLS_KEY", "arena-internal-tls"),
    }  # fmt: skip
    for name, words in wants.items():
        out += [f"k8s/{name}: no {w}" for w in words if w not in k8s[name]]
        if f"redis+sentinel://:$(REDIS_PASSWORD)@{SENTINELS['k8s']}/" not in k8s[name] or \
                "sentinel_password=$(SENTINEL_PASSWORD)" not in k8s[name]:  # fmt: skip
            out.append(f"k8s/{name}: ARENA_REDIS_URL is not the Sentinel URL with both passwords")
        for var in ("REDIS_PASSWORD", "SENTINEL_PASSWORD"):
            if k8s[name].find(f"- name: {var}") > k8s[name].find("- name: ARENA_REDIS_URL"):
                out.append(f"k8s/{name}: {var} comes after ARENA_REDIS_URL, so $(...) is not expanded")
    if "arena-gateway-tls" in k8s["worker.yaml"] + k8s["ladder.yaml"]:
        out.append("k8s: a worker or the ladder mounts the gateway's public certificate")
    if not re.search(r"ports:\n\s+- name: grpc\n\s+port: 443\n\s+targetPort: grpc\n", k8s["gateway.yaml"]):
        out.append("k8s/gateway.yaml: the Service does not publish 443 -> grpc")
    web = k8s.get("web.yaml", "")
    if "redis+sentinel://web:$(REDIS_WEB_PASSWORD)@" not in web or "key: web-password" not in web:
        out.append("k8s/web.yaml: the website does not connect as Redis's read-only user web")
    if "arena-admin" in web or "key: password" in web:
        out.append("k8s/web.yaml: the website gets the admin token or Redis's main password")
    if "key: web-password" not in k8s["redis.yaml"]:
        out.append("k8s/redis.yaml: Redis has no read-only user web from the Secret arena-redis's web-password")
    if f"/opt/redis/{SERVER_SCRIPT}" not in k8s["redis.yaml"]:
        out.append(f"k8s/redis.yaml: the servers do not start with {SERVER_SCRIPT}")
    if f"/opt/redis/{SENTINEL_SCRIPT}" not in k8s.get("sentinel.yaml", "") or \
            "key: sentinel-password" not in k8s.get("sentinel.yaml", ""):  # fmt: skip
        out.append(f"k8s/sentinel.yaml: no sentinels started with {SENTINEL_SCRIPT} and their password")
    for name in ("gateway.yaml", "worker.yaml", "ladder.yaml", "redis.yaml", "sentinel.yaml", "web.yaml"):
        containers = len(re.findall(r"^\s+image:", k8s[name], re.M))
        for must in ("readOnlyRootFilesystem: true", "allowPrivilegeEscalation: false", 'drop: ["ALL"]',
                     "runAsNonRoot: true", "readinessProbe:", "livenessProbe:", "limits:"):  # fmt: skip
            if k8s[name].count(must) < containers:
                out.append(f"k8s/{name}: a container has no {must}")
    if "arena-redis" not in k8s["redis.yaml"]:
        out.append("k8s/redis.yaml: Redis takes no password from the Secret arena-redis")
    kustomization = k8s["kustomization.yaml"]
    if "secret.example.yaml" in kustomization.split("resources:", 1)[1].split("images:")[0]:
        out.append("k8s/kustomization.yaml: deploys secret.example.yaml")
    if "- networkpolicy.yaml" not in kustomization:
        out.append("k8s/kustomization.yaml: does not deploy networkpolicy.yaml")
    policies = k8s.get("networkpolicy.yaml", "")
    wanted = ("default-deny-ingress", "gateway-from-anywhere", "worker-from-gateway-only", "redis-from-arena-only",
              "sentinel-from-arena-only", "metrics-from-monitoring", "web-from-ingress-only")  # fmt: skip
    out += [f"k8s/networkpolicy.yaml: no {p}" for p in wanted if f"name: {p}" not in policies]
    pinned = []
    for doc in _documents(policies):
        name = re.search(r"^  name: (\S+)", doc, re.M)
        spec = _squash(doc.split("\nspec:", 1)[-1])
        if not name or PINNED_POLICIES.get(name.group(1)) != spec:
            which = name.group(1) if name else "a policy"
            pinned.append(f"k8s/networkpolicy.yaml: {which} differs from the reviewed one (PINNED_POLICIES here; "
                          "with PyYAML it is checked rule by rule)")  # fmt: skip
    return out, pinned


# ---- rules on the structure: with PyYAML -------------------------------------------------------------


def compose_problems(doc: dict[str, Any]) -> list[str]:
    out = []
    services: dict[str, Any] = doc["services"]
    for name, svc in services.items():
        loopback = name == WEB and all(str(p).startswith("127.0.0.1:") for p in svc.get("ports", []))
        play = name == PLAY_PROXY and [str(p) for p in svc.get("ports", [])] == ["8443:8443"]
        if svc.get("ports") and name != "gateway" and not loopback and not play:
            out.append(f"compose: {name} publishes ports {svc['ports']}; only the gateway may (web: on loopback, "
                       "play-proxy: 8443)")  # fmt: skip
        if svc.get("network_mode"):
            out.append(f"compose: {name} sets network_mode {svc['network_mode']}")
    if [str(p).rsplit(":", 1)[-1] for p in services["gateway"].get("ports", [])] != ["50051"]:
        out.append("compose: the gateway must publish exactly its gRPC port 50051")

    def env(name: str) -> dict[str, str]:
        return {k: str(v) for k, v in (services[name].get("environment") or {}).items()}

    def mounted(name: str, path: str) -> bool:
        targets = [str(v).split(":")[1] for v in services[name].get("volumes", [])]
        return any(path == t or path.startswith(t.rstrip("/") + "/") for t in targets)

    sentinel_url = (
        r"@" + re.escape(SENTINELS["compose"]) + r"/arena/\d+\?sentinel_password=\$\{SENTINEL_PASSWORD:\?[^}]+\}$"
    )
    url = re.compile(r"^redis\+sentinel://:\$\{REDIS_PASSWORD:\?[^}]+\}" + sentinel_url)
    for name in APPS:
        e = env(name)
        if not url.match(e.get("ARENA_REDIS_URL", "")):
            out.append(f"compose: {name}'s ARENA_REDIS_URL is not the Sentinel URL with ${{REDIS_PASSWORD:?...}} and "
                       "${SENTINEL_PASSWORD:?...}")  # fmt: skip
        for var in ("ARENA_TLS_CERT", "ARENA_TLS_KEY", *(("ARENA_TLS_CA",) if name == "gateway" else ())):
            if not e.get(var):
                out.append(f"compose: {name} has no {var}")
            elif not mounted(name, e[var]):
                out.append(f"compose: {name}'s {var} {e[var]} is in no mounted folder")
    for name in ("gateway", "worker"):
        if not env(name).get("ARENA_ADMIN_TOKEN", "").startswith("${ARENA_ADMIN_TOKEN:?"):
            out.append(f"compose: {name}'s ARENA_ADMIN_TOKEN must be ${{ARENA_ADMIN_TOKEN:?...}} (never empty)")
    if "ARENA_ADMIN_TOKEN" in env("ladder"):
        out.append("compose: the ladder gets the admin token it does not use")
    if env("gateway").get("ARENA_TLS_SERVER_NAME") != INTERNAL_NAME:
        out.append(f"compose: the gateway does not check the workers' certificate for {INTERNAL_NAME}")
    if any(str(v).startswith("./certs/internal") for v in services["gateway"].get("volumes", [])):
        out.append("compose: the gateway mounts the workers' key")
    if env("gateway").get("ARENA_TLS_CERT") == env("worker").get("ARENA_TLS_CERT"):
        out.append("compose: the gateway serves the internal certificate instead of the public one")
    servers = [n for n, svc in services.items() if SERVER_SCRIPT in " ".join(map(str, svc.get("entrypoint") or []))]
    sentinels = [n for n, svc in services.items() if SENTINEL_SCRIPT in " ".join(map(str, svc.get("entrypoint") or []))]
    if len(servers) < 3 or len(sentinels) < 3:
        out.append(f"compose: {len(servers)} Redis servers and {len(sentinels)} sentinels; the set is 3 and 3")
    for name in servers:
        e = env(name)
        for var in ("REDIS_PASSWORD", "REDIS_WEB_PASSWORD", "SENTINEL_PASSWORD"):
            if not e.get(var, "").startswith(f"${{{var}:?"):
                out.append(f"compose: {name}'s {var} may be empty (${{{var}:?...}})")
        if not any(str(v).startswith(f"./{SERVER_SCRIPT}:") for v in services[name].get("volumes", [])):
            out.append(f"compose: {name} does not mount deploy/{SERVER_SCRIPT}")
        if services[name].get("ports"):
            out.append(f"compose: Redis server {name} publishes a port")
    for name in sentinels:
        e = env(name)
        for var in ("SENTINEL_PASSWORD", "REDIS_PASSWORD"):
            if not e.get(var, "").startswith(f"${{{var}:?"):
                out.append(f"compose: {name}'s {var} may be empty (${{{var}:?...}})")
    web_url = env(WEB).get("ARENA_REDIS_URL", "") if WEB in services else ""
    if not re.match(r"^redis\+sentinel://web:\$\{REDIS_WEB_PASSWORD:\?[^}]+\}" + sentinel_url, web_url):
        out.append("compose: web's ARENA_REDIS_URL is not the read-only user web's")
    if WEB in services and {"ARENA_ADMIN_TOKEN", "ARENA_TLS_KEY"} & set(env(WEB)):
        out.append("compose: web gets the admin token or the internal key")
    if PLAY_PROXY in services:
        proxy = env(PLAY_PROXY)
        web_user = r"^redis\+sentinel://web:\$\{REDIS_WEB_PASSWORD:\?[^}]+\}" + sentinel_url
        if not re.match(web_user, proxy.get("ARENA_REDIS_URL", "")):
            out.append("compose: play-proxy's ARENA_REDIS_URL is not the read-only user web's")
        volumes = [str(v) for v in services[PLAY_PROXY].get("volumes", [])]
        if "ARENA_ADMIN_TOKEN" in proxy or any("certs/internal" in v for v in volumes):
            out.append("compose: play-proxy gets the admin token or the workers' key")
        if proxy.get("ARENA_TLS_CERT") != env("gateway").get("ARENA_TLS_CERT") or not proxy.get("ARENA_TLS_CA"):
            out.append("compose: play-proxy does not end TLS with the public certificate or verify the workers")
    for name in ("worker", "ladder"):
        test = " ".join(str(t) for t in services[name].get("healthcheck", {}).get("test", []))
        if "--tls-ca" not in test:
            out.append(f"compose: {name}'s healthcheck does not speak TLS to its TLS port")
    return out


def _selected(selector: dict[str, Any] | None, everyone: set[str]) -> set[str]:
    """The pods (by app.kubernetes.io/name) a podSelector picks in the namespace."""
    if not selector:
        return set(everyone)
    picked = set(everyone)
    labels = selector.get("matchLabels") or {}
    if "app.kubernetes.io/name" in labels:
        picked &= {labels["app.kubernetes.io/name"]}
    for expr in selector.get("matchExpressions") or []:
        if expr["key"] == "app.kubernetes.io/name" and expr["operator"] == "In":
            picked &= set(expr["values"])
        else:
            raise ValueError(f"unsupported selector {expr}")
    return picked


def policy_problems(policies: list[dict[str, Any]], everyone: set[str]) -> list[str]:
    """What the NetworkPolicies admit, rule by rule: (pod, port) <- source, against the rules above."""
    out = []
    ports = {"gateway": {50051, 9100}, "worker": {50061, 9101}, "ladder": {50071, 9102}, "redis": {6379},
             "sentinel": {26379}, WEB: {8080, 9103}}  # fmt: skip
    metrics = {9100, 9101, 9102, 9103}
    if not any(
        p["spec"].get("podSelector") == {} and "Ingress" in p["spec"].get("policyTypes", []) and
        not p["spec"].get("ingress") for p in policies
    ):  # fmt: skip
        out.append("k8s/networkpolicy.yaml: no default deny of ingress for every pod of the namespace")
    admitted: set[tuple[str, int]] = set()
    for p in policies:
        name = p["metadata"]["name"]
        pods = _selected(p["spec"].get("podSelector"), everyone)
        for rule in p["spec"].get("ingress") or []:
            if not rule.get("ports"):
                out.append(f"k8s/networkpolicy.yaml: {name} admits every port")
                continue
            rule_ports = {int(x["port"]) for x in rule["ports"]}
            sources = rule.get("from")
            for pod in pods:
                for port in rule_ports & ports.get(pod, set()):
                    admitted.add((pod, port))
                    where = f"{name}: {pod}:{port}"
                    if sources is None:  # from anywhere
                        if (pod, port) != ("gateway", 50051):
                            out.append(f"k8s/networkpolicy.yaml: {where} is admitted from anywhere")
                        continue
                    for src in sources:
                        if "ipBlock" in src:
                            out.append(f"k8s/networkpolicy.yaml: {where} admits an ipBlock")
                        elif "namespaceSelector" in src:
                            ingress = src["namespaceSelector"] == {"matchLabels": {"arena.io/ingress": "true"}}
                            if (pod, port) == (WEB, 8080) and not ingress:
                                out.append(f"k8s/networkpolicy.yaml: {where} admits more than the ingress namespace")
                            elif port not in metrics and (pod, port) != (WEB, 8080):
                                out.append(f"k8s/networkpolicy.yaml: {where} admits other namespaces")
                        else:
                            peers = _selected(src.get("podSelector"), everyone)
                            arena_and_set = {*APPS, WEB, *SET}
                            allowed = {"worker": {"gateway"}, "redis": arena_and_set, "sentinel": arena_and_set,
                                       WEB: set()}.get(pod, set(everyone))  # fmt: skip
                            if (pod == "ladder" and port == 50071) or not peers <= allowed:
                                out.append(f"k8s/networkpolicy.yaml: {where} admits {sorted(peers)}")
    for need in [("gateway", 50051), ("worker", 50061), ("redis", 6379), ("sentinel", 26379), ("gateway", 9100),
                 ("worker", 9101)]:  # fmt: skip
        if need not in admitted:
            out.append(f"k8s/networkpolicy.yaml: nothing admits {need[0]}:{need[1]} (the arena would not work)")
    return out


def k8s_problems(docs: list[dict[str, Any]]) -> list[str]:
    out = []
    by_kind: dict[str, dict[str, dict[str, Any]]] = {}
    for d in docs:
        by_kind.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
    services = by_kind.get("Service", {})
    for name, svc in services.items():
        kind = svc["spec"].get("type", "ClusterIP")
        if name == "gateway":
            if kind != "LoadBalancer":
                out.append("k8s: the gateway's Service is not a LoadBalancer")
            elif [(p["port"], p["targetPort"]) for p in svc["spec"]["ports"]] != [(443, "grpc")]:
                out.append("k8s: the gateway's Service must publish 443 -> grpc only")
        elif kind != "ClusterIP":
            out.append(f"k8s: Service {name} is {kind}; only the gateway is exposed")
        if any("nodePort" in p for p in svc["spec"].get("ports", [])):
            out.append(f"k8s: Service {name} sets a nodePort")
    if services.get("worker", {}).get("spec", {}).get("clusterIP") != "None":
        out.append("k8s: the workers' Service is not headless")
    if "ladder" in services:
        out.append("k8s: the ladder has a Service; its gRPC port stays internal to its pod")
    if by_kind.get("Ingress"):
        out.append("k8s: an Ingress; the gateway's LoadBalancer is the one way in")

    workloads = {**by_kind.get("Deployment", {}), **by_kind.get("StatefulSet", {})}
    everyone = {w["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] for w in workloads.values()}
    for name, w in workloads.items():
        pod = w["spec"]["template"]["spec"]
        if pod.get("hostNetwork") or pod.get("hostPID"):
            out.append(f"k8s: {name} uses the host's network or PIDs")
        if not pod.get("securityContext", {}).get("runAsNonRoot"):
            out.append(f"k8s: {name} may run as root")
        for c in pod["containers"]:
            sc = c.get("securityContext", {})
            if sc.get("allowPrivilegeEscalation") is not False or not sc.get("readOnlyRootFilesystem") or \
                    sc.get("capabilities", {}).get("drop") != ["ALL"]:  # fmt: skip
                out.append(f"k8s: {name}'s container lost its security context")
            res = c.get("resources", {})
            if not res.get("requests") or not res.get("limits"):
                out.append(f"k8s: {name}'s container has no requests and limits")
            if not c.get("readinessProbe") or not c.get("livenessProbe"):
                out.append(f"k8s: {name}'s container has no readiness or liveness probe")
            if any("hostPort" in p for p in c.get("ports", [])):
                out.append(f"k8s: {name} uses a hostPort")

    def container(name: str) -> dict[str, Any]:
        return dict(workloads[name]["spec"]["template"]["spec"]["containers"][0])

    def secret_at(name: str, path: str) -> str | None:
        """The Secret mounted where ``path`` lies in ``name``'s container (None: not a Secret's file)."""
        volumes = {v["name"]: v for v in workloads[name]["spec"]["template"]["spec"].get("volumes", [])}
        for m in container(name).get("volumeMounts", []):
            if path.startswith(m["mountPath"].rstrip("/") + "/"):
                secret = volumes[m["name"]].get("secret", {})
                items = [i["path"] for i in secret.get("items", [])]
                file = path[len(m["mountPath"].rstrip("/")) + 1 :]
                return str(secret["secretName"]) if secret and (not items or file in items) else None
        return None

    tls = {
        "gateway": {"ARENA_TLS_CERT": "arena-gateway-tls", "ARENA_TLS_KEY": "arena-gateway-tls",
                    "ARENA_TLS_CA": "arena-internal-tls"},
        "worker": {"ARENA_TLS_CERT": "arena-internal-tls", "ARENA_TLS_KEY": "arena-internal-tls"},
        "ladder": {"ARENA_TLS_CERT": "arena-internal-tls", "ARENA_TLS_KEY": "arena-internal-tls"},
    }  # fmt: skip
    for name in APPS:
        env = container(name).get("env", [])
        names = [e["name"] for e in env]
        values = {e["name"]: e for e in env}
        password = values.get("REDIS_PASSWORD", {}).get("valueFrom", {}).get("secretKeyRef", {})
        if password != {"name": "arena-redis", "key": "password"}:
            out.append(f"k8s: {name}'s REDIS_PASSWORD is not the Secret arena-redis's password")
        sentinel = values.get("SENTINEL_PASSWORD", {}).get("valueFrom", {}).get("secretKeyRef", {})
        if sentinel != {"name": "arena-redis", "key": "sentinel-password"}:
            out.append(f"k8s: {name}'s SENTINEL_PASSWORD is not the Secret arena-redis's sentinel-password")
        url = str(values.get("ARENA_REDIS_URL", {}).get("value", ""))
        if not url.startswith(f"redis+sentinel://:$(REDIS_PASSWORD)@{SENTINELS['k8s']}/") or \
                not url.endswith("?sentinel_password=$(SENTINEL_PASSWORD)"):  # fmt: skip
            out.append(f"k8s: {name}'s ARENA_REDIS_URL is not the Sentinel URL with $(REDIS_PASSWORD) and "
                       "$(SENTINEL_PASSWORD)")  # fmt: skip
        for var in ("REDIS_PASSWORD", "SENTINEL_PASSWORD"):
            if var in names and "ARENA_REDIS_URL" in names and names.index(var) > names.index("ARENA_REDIS_URL"):
                out.append(f"k8s: {name} defines {var} after ARENA_REDIS_URL, so $(...) is not expanded")
        for var, secret in tls[name].items():
            path = str(values.get(var, {}).get("value", ""))
            if not path:
                out.append(f"k8s: {name} has no {var}")
            elif secret_at(name, path) != secret:
                out.append(f"k8s: {name}'s {var} {path} is not a file of the Secret {secret}")
        admin = [e for e in container(name).get("envFrom", []) if e.get("secretRef", {}).get("name") == "arena-admin"]
        if bool(admin) != (name != "ladder"):
            out.append(f"k8s: {name} {'lacks' if name != 'ladder' else 'gets'} the Secret arena-admin")
    gateway_env = {e["name"]: e.get("value") for e in container("gateway").get("env", [])}
    if gateway_env.get("ARENA_TLS_SERVER_NAME") != INTERNAL_NAME:
        out.append(f"k8s: the gateway does not check the workers' certificate for {INTERNAL_NAME}")
    if WEB in workloads:
        web_env = {e["name"]: e for e in container(WEB).get("env", [])}
        ref = web_env.get("REDIS_WEB_PASSWORD", {}).get("valueFrom", {}).get("secretKeyRef", {})
        if ref != {"name": "arena-redis", "key": "web-password"}:
            out.append("k8s: web's REDIS_WEB_PASSWORD is not the Secret arena-redis's web-password")
        web_url = str(web_env.get("ARENA_REDIS_URL", {}).get("value", ""))
        if not web_url.startswith(f"redis+sentinel://web:$(REDIS_WEB_PASSWORD)@{SENTINELS['k8s']}/"):
            out.append("k8s: web does not connect as Redis's read-only user web")
        if container(WEB).get("envFrom") and any("secretRef" in e for e in container(WEB)["envFrom"]):
            out.append("k8s: web gets a Secret's every key (the admin token?)")
    for name, script, secrets in (("redis", SERVER_SCRIPT, {"REDIS_PASSWORD": "password",
                                  "REDIS_WEB_PASSWORD": "web-password", "SENTINEL_PASSWORD": "sentinel-password"}),
                                  ("sentinel", SENTINEL_SCRIPT, {"SENTINEL_PASSWORD": "sentinel-password",
                                   "REDIS_PASSWORD": "password"})):  # fmt: skip
        if name not in workloads:
            out.append(f"k8s: no {name} StatefulSet (the Redis set: three servers, three sentinels)")
            continue
        c = container(name)
        line = " ".join([*c.get("command", []), *c.get("args", [])])
        refs = {e["name"]: e.get("valueFrom", {}).get("secretKeyRef") for e in c.get("env", [])}
        for var, key in secrets.items():
            if refs.get(var) != {"name": "arena-redis", "key": key}:
                out.append(f"k8s: {name}'s {var} is not the Secret arena-redis's {key}")
        volumes = {v["name"]: v for v in workloads[name]["spec"]["template"]["spec"].get("volumes", [])}
        mounted = {m["mountPath"]: volumes.get(m["name"], {}) for m in c.get("volumeMounts", [])}
        if f"/opt/redis/{script}" not in line or mounted.get("/opt/redis", {}).get("configMap", {}).get("name") != \
                "redis-scripts":  # fmt: skip
            out.append(f"k8s: {name} does not run {script} from the ConfigMap redis-scripts")
    return out + policy_problems(list(by_kind.get("NetworkPolicy", {}).values()), everyone)


def structured_problems(yaml: Any) -> list[str]:
    out = compose_problems(yaml.safe_load((DEPLOY / "compose.yaml").read_text()))
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    resources = kustomization["resources"]
    if "secret.example.yaml" in resources or "networkpolicy.yaml" not in resources:
        out.append("k8s/kustomization.yaml: must deploy networkpolicy.yaml and never secret.example.yaml")
    docs = [d for r in resources for d in yaml.safe_load_all((K8S / r).read_text()) if d]
    out += k8s_problems(docs)
    for secret in yaml.safe_load_all((K8S / "secret.example.yaml").read_text()):
        for key, value in (secret.get("stringData") or {}).items():
            if value:
                out.append(f"k8s/secret.example.yaml: {secret['metadata']['name']}.{key} has a value")
    if INTERNAL_NAME not in (DEPLOY / "make-internal-ca.sh").read_text():
        out.append(f"make-internal-ca.sh: issues no certificate for {INTERNAL_NAME}")
    return out


def problems() -> list[str]:
    out, pinned = text_problems()
    try:
        import yaml
    except ImportError:
        print("check_public: PyYAML is not installed: text checks only", file=sys.stderr)
        return out + pinned
    try:
        out += structured_problems(yaml)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        out.append(f"the deploy files are not shaped as this check expects: {type(e).__name__}: {e}")
    return list(dict.fromkeys(out))


if __name__ == "__main__":
    found = problems()
    for p in found:
        print(f"  {p}")
    sys.exit(1 if found else 0)
