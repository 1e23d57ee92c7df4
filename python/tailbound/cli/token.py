"""``tailbound token``: create, revoke and list the control plane's API tokens, on its database
directly (docs/service.md, "Authentication")."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tailbound.cli.exitcodes import Exit, epilog
from tailbound.cli.serve import env


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "token",
        help="create, revoke or list the control plane's API tokens",
        description=(
            "Tokens are random and stored hashed; a new token is printed once. Scopes: read "
            "(every GET), operator (read and every change), agent (one host's part of the Plan "
            "and its measurements; needs --host)."
        ),
        epilog=epilog(None),
    )
    parser.add_argument("action", choices=("create", "revoke", "list"))
    parser.add_argument("--db", default=env("DB", None), help="the server's SQLAlchemy URL")
    parser.add_argument("--name", help="the token's name (create, revoke)")
    parser.add_argument("--scope", choices=("read", "operator", "agent"), help="create: its scope")
    parser.add_argument("--host", help="create: the host an agent token serves")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tailbound.errors import ConfigError
    from tailbound.service import tokens
    from tailbound.service.db import make_engine, sessions
    from tailbound.service.migrate import upgrade

    if not args.db:
        raise ConfigError(None, "--db (or TAILBOUND_DB) is required")
    if args.action != "list" and not args.name:
        raise ConfigError(None, f"token {args.action} needs --name")
    upgrade(args.db)
    engine = make_engine(args.db)
    try:
        make = sessions(engine)
        if args.action == "create":
            if args.scope is None:
                raise ConfigError(None, "token create needs --scope")
            with make.begin() as s:
                print(tokens.create(s, args.name, args.scope, args.host))
            return Exit.OK
        if args.action == "revoke":
            with make.begin() as s:
                if not tokens.revoke(s, args.name):
                    raise ConfigError(None, f"no active token {args.name!r}", field="--name")
            print(f"revoked {args.name}")
            return Exit.OK
        with make() as s:
            print(json.dumps(tokens.listing(s), indent=1))
        return Exit.OK
    finally:
        engine.dispose()
