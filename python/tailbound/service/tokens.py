"""API tokens: random, stored hashed, each with one scope (docs/service.md, "Authentication").

A token is ``tb_`` followed by 32 random bytes in URL-safe base64 (256 bits from
:func:`secrets.token_urlsafe`); the database keeps only its SHA-256, so a copy of the database
does not give access. A plain hash suffices (no salt, no slow hash): the secret is random and
long, not a password a dictionary could guess.

Scopes:

- ``read``: every ``GET`` of the API (clusters, tenants, decisions, Plans, reports);
- ``operator``: ``read`` plus every change (clusters, traces, tenants, admissions, departures,
  tokens);
- ``agent``: bound to one host: fetch that host's part of the current Plan and post
  measurements, nothing else.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from tailbound.errors import ConfigError
from tailbound.service.db import TokenRow, now

SCOPES = ("read", "operator", "agent")
PREFIX = "tb_"


@dataclass(frozen=True)
class Principal:
    """Who a request's token says it is."""

    name: str
    scope: str
    host: str | None = None

    def may(self, scope: str) -> bool:
        """Whether this principal may act with ``scope`` (``operator`` includes ``read``)."""
        return self.scope == scope or (self.scope == "operator" and scope == "read")


def digest(token: str) -> str:
    """The SHA-256 (hex) the database keeps for ``token``."""
    return hashlib.sha256(token.encode()).hexdigest()


def create(session: Session, name: str, scope: str, host: str | None = None) -> str:
    """Create a token named ``name`` (unique) with ``scope``; returns the token, shown once.
    An ``agent`` token needs the ``host`` it serves; other scopes take none."""
    if scope not in SCOPES:
        raise ConfigError(
            None, f"unknown scope {scope!r} (known: {', '.join(SCOPES)})", field="scope"
        )
    if (scope == "agent") != (host is not None):
        raise ConfigError(None, "an agent token needs --host, other scopes none", field="host")
    if not name or len(name) > 200:
        raise ConfigError(None, "expected a name of 1 to 200 characters", field="name")
    if session.scalar(select(TokenRow).where(TokenRow.name == name)) is not None:
        raise ConfigError(None, f"a token named {name!r} exists", field="name")
    token = PREFIX + secrets.token_urlsafe(32)
    session.add(TokenRow(name=name, sha256=digest(token), scope=scope, host=host))
    return token


def revoke(session: Session, name: str) -> bool:
    """Revoke the token named ``name``; whether it was active."""
    row = session.scalar(select(TokenRow).where(TokenRow.name == name))
    if row is None or row.revoked_at is not None:
        return False
    row.revoked_at = now()
    return True


def authenticate(session: Session, token: str) -> Principal | None:
    """The principal of an active ``token``, or None."""
    if not token.startswith(PREFIX):
        return None
    row = session.scalar(select(TokenRow).where(TokenRow.sha256 == digest(token)))
    if row is None or row.revoked_at is not None:
        return None
    return Principal(row.name, row.scope, row.host)


def listing(session: Session) -> list[dict[str, object]]:
    """Every token's name, scope, host and dates (never the token)."""
    rows = session.scalars(select(TokenRow).order_by(TokenRow.id))
    return [
        {
            "name": r.name,
            "scope": r.scope,
            "host": r.host,
            "created_at": r.created_at.isoformat(),
            "revoked_at": None if r.revoked_at is None else r.revoked_at.isoformat(),
        }
        for r in rows
    ]
