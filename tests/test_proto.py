"""The generated wire code is exactly what proto/generate.py makes from proto/: never hand-edited."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_generated_code_is_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "proto" / "generate.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_proto_follows_the_naming_rules() -> None:
    """Versioned package, *Service names, one request/response pair per RPC, *_UNSPECIFIED zero values."""
    from referee.wire import bot_pb2, match_pb2, referee_pb2

    for module in (bot_pb2, match_pb2, referee_pb2):
        fd = module.DESCRIPTOR
        assert fd.package == "arena.v1"
        for service in fd.services_by_name.values():
            assert service.name.endswith("Service")
            for method in service.methods:
                assert method.input_type.name == f"{method.name}Request"
                assert method.output_type.name == f"{method.name}Response"
        for enum in fd.enum_types_by_name.values():
            zero = enum.values_by_number[0].name
            assert zero.endswith("_UNSPECIFIED"), zero
