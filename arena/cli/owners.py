"""``arena owner``: the admin's accounts for bot authors (``create``, ``list``, ``set-max-bots``), and an
owner's own token (``rotate``, by the admin or the owner)."""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from arena.cli.common import (
    add_settings,
    client,
    console,
    emit_json,
    non_negative_int,
    positive_int,
    print_table,
    settings,
    utc,
)


def cmd_owner_create(args: argparse.Namespace) -> int:
    s = settings(args)
    with client(s, s.admin_token) as c:
        owner, token = c.create_owner(args.name, args.max_bots)
    if args.json:
        emit_json({"owner": owner, "token": token})
        return 0
    console.print(f"owner {owner.name} created (up to {owner.max_bots} bots)")
    console.print(f"owner token (shown once, give it to them over a private channel): {token}")
    return 0


def cmd_owner_list(args: argparse.Namespace) -> int:
    s = settings(args)
    with client(s, s.admin_token) as c:
        owners = c.list_owners()
    if args.json:
        emit_json(owners)
        return 0
    table = Table()
    for col in ("owner", "bots", "max bots", "created (UTC)"):
        table.add_column(col)
    for o in owners:
        table.add_row(o.name, str(o.bots), str(o.max_bots), utc(o.created_at))
    print_table(table, whole=("owner", "created (UTC)"))
    return 0


def cmd_owner_set_max_bots(args: argparse.Namespace) -> int:
    s = settings(args)
    with client(s, s.admin_token) as c:
        owner = c.set_owner_max_bots(args.name, args.max_bots)
    if args.json:
        emit_json(owner)
    else:
        console.print(f"owner {owner.name}: up to {owner.max_bots} bots (has {owner.bots})")
    return 0


def cmd_owner_rotate(args: argparse.Namespace) -> int:
    s = settings(args)
    with client(s, s.admin_token or s.owner_token) as c:
        token = c.rotate_owner_token(args.name)
    if args.json:
        emit_json({"name": args.name, "token": token})
    else:
        print(f"new owner token for {args.name}: {token}")
    return 0


def add_parser(sub: Any) -> None:
    owner = sub.add_parser("owner", help="owners: bot authors with their own tokens").add_subparsers(
        dest="owner_command", required=True
    )
    p = owner.add_parser("create", help="a new owner and its token (admin)")
    add_settings(p, "gateway", "admin_token")
    p.add_argument("name")
    p.add_argument("--max-bots", type=non_negative_int, default=0, help="bots it may register (default 10)")
    p.set_defaults(func=cmd_owner_create)
    p = owner.add_parser("list", help="every owner (admin)")
    add_settings(p, "gateway", "admin_token")
    p.set_defaults(func=cmd_owner_list)
    p = owner.add_parser("set-max-bots", help="change how many bots an owner may have (admin)")
    add_settings(p, "gateway", "admin_token")
    p.add_argument("name")
    p.add_argument("max_bots", type=positive_int, help="1 to 10,000; retired bots do not count")
    p.set_defaults(func=cmd_owner_set_max_bots)
    p = owner.add_parser("rotate", help="a new token for an owner (admin, or the owner)")
    add_settings(p, "gateway", "admin_token", "owner_token")
    p.add_argument("name")
    p.set_defaults(func=cmd_owner_rotate)
