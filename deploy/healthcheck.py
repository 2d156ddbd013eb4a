"""gRPC health check for the arena's containers (compose healthchecks; Kubernetes uses native grpc probes).

    python /opt/arena/healthcheck.py [HOST:PORT] [--service NAME] [--timeout SECONDS]
                                     [--tls-ca FILE [--tls-server-name NAME]]

Calls grpc.health.v1.Health/Check and exits 0 when the answer is SERVING, 1 otherwise (not serving,
unreachable, timeout, a certificate that does not verify). HOST:PORT defaults to 127.0.0.1 and the port
of $ARENA_LISTEN (else 50051). With --tls-ca it dials with TLS and verifies the server against that CA,
for the name --tls-server-name (the workers' and the ladder's listeners: the internal CA, e.g.
worker.arena.internal); without it, plaintext.
"""

from __future__ import annotations

import argparse
import os
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def default_target() -> str:
    listen = os.environ.get("ARENA_LISTEN", "")
    port = listen.rsplit(":", 1)[-1] if ":" in listen else "50051"
    return f"127.0.0.1:{port}"


def channel_to(target: str, ca: str | None, server_name: str | None) -> grpc.Channel:
    """A plaintext channel, or with ``ca`` a TLS one that verifies the server (for ``server_name`` when given)."""
    if not ca:
        return grpc.insecure_channel(target)
    try:
        with open(ca, "rb") as f:
            roots = f.read()
    except OSError as exc:
        sys.exit(f"unhealthy: {target}: CA file {ca}: {exc.strerror or exc}")
    options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
    return grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=roots), options=options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="gRPC health check")
    parser.add_argument("target", nargs="?", default=default_target(), help="HOST:PORT (default 127.0.0.1:50051)")
    parser.add_argument("--service", default="", help="service name to check ('' = the whole server)")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds (default 3)")
    parser.add_argument("--tls-ca", metavar="FILE", help="dial with TLS, verifying the server against this CA (PEM)")
    parser.add_argument("--tls-server-name", metavar="NAME", help="name the certificate must carry (with --tls-ca)")
    args = parser.parse_args(argv)
    if args.tls_server_name and not args.tls_ca:
        parser.error("--tls-server-name needs --tls-ca")
    try:
        with channel_to(args.target, args.tls_ca, args.tls_server_name) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = stub.Check(health_pb2.HealthCheckRequest(service=args.service), timeout=args.timeout)
    except grpc.RpcError as exc:
        print(f"unhealthy: {args.target}: {exc.code().name}: {exc.details()}", file=sys.stderr)
        return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        print(f"unhealthy: {args.target}: {status}", file=sys.stderr)
        return 1
    print(f"{args.target}: {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
