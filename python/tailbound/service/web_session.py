"""Browser sessions: a signed, expiring cookie in place of the ``Authorization`` header
(docs/service.md, "Web pages").

An operator signs in on ``/ui/login`` with an API token; the server answers with the cookie
:data:`COOKIE`, ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page sends
it) and ``Secure`` over HTTPS. Its value is ``payload.signature``: the payload is the token's
database id, its scope, the expiry (Unix time, :data:`SESSION_S` after sign-in) and a random CSRF
secret, as URL-safe base64 of compact JSON; the signature is HMAC-SHA256 of the payload under the
server's secret (:func:`load_secret`). The cookie holds no token: each request verifies the
signature and the expiry, then reads the token's row, so a revoked token's sessions end at once
and a session never has more than its token's scope (:func:`principal_of`).

CSRF: every form of the pages carries the session's CSRF secret in a hidden field, and a request
changing state is refused unless that field equals the cookie's (:func:`csrf_matches`); the API
accepts the cookie too, and then asks the same secret in the ``X-CSRF-Token`` header of every
request but ``GET``/``HEAD``/``OPTIONS``. The sign-in form itself is protected by a double-submit
nonce (:data:`LOGIN_COOKIE`), so no other site can sign a browser in under its own token.

The server's secret: ``TAILBOUND_SESSION_SECRET`` (at least 32 characters) when set, else 32
random bytes generated once and kept in ``<data>/session.key`` (mode 0600; the data folder lies
beside an SQLite database by default). Servers sharing one database must share the secret: the
same variable, or the same data folder. Replacing the secret ends every session.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.requests import Request

from tailbound.errors import ConfigError
from tailbound.service.db import TokenRow
from tailbound.service.problems import Problem
from tailbound.service.tokens import PREFIX, Principal, digest

#: The session cookie's name.
COOKIE = "tb_session"
#: The sign-in form's double-submit nonce cookie.
LOGIN_COOKIE = "tb_login"
#: A session's lifetime (s): a working day.
SESSION_S = 8 * 3600
#: The environment variable holding the server's secret.
SECRET_ENV = "TAILBOUND_SESSION_SECRET"
#: The secret's file in the data folder when the variable is not set.
SECRET_FILE = "session.key"
#: The shortest secret accepted from the environment (characters).
MIN_SECRET_CHARS = 32
#: The header carrying the CSRF secret on API requests authenticated by the cookie.
CSRF_HEADER = "x-csrf-token"
#: Methods that change nothing, which need no CSRF secret.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def load_secret(data: Path, environ: dict[str, str] | None = None) -> bytes:
    """The server's signing secret: ``TAILBOUND_SESSION_SECRET``, else ``<data>/session.key``,
    created (32 random bytes, mode 0600) when missing. A variable shorter than
    :data:`MIN_SECRET_CHARS` is a :class:`ConfigError` naming it."""
    env = os.environ if environ is None else environ
    given = env.get(SECRET_ENV)
    if given is not None:
        if len(given) < MIN_SECRET_CHARS:
            raise ConfigError(
                None,
                f"expected at least {MIN_SECRET_CHARS} characters, got {len(given)}",
                field=SECRET_ENV,
            )
        return given.encode()
    path = data / SECRET_FILE
    data.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
            f.flush()
            os.fsync(f.fileno())
    for _ in range(50):  # another server may be writing it this instant
        key = path.read_bytes()
        if len(key) == 32:
            return key
        time.sleep(0.01)
    raise ConfigError(path, f"expected 32 bytes, found {len(key)}")


@dataclass(frozen=True)
class SessionData:
    """What a session cookie carries: the token's row id and scope, the expiry (Unix time, s)
    and the session's CSRF secret."""

    token_id: int
    scope: str
    expires: float
    csrf: str


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Signer:
    """Signs and verifies session cookies and sign-in nonces under one secret."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _mac(self, purpose: str, payload: str) -> str:
        msg = f"{purpose}\n{payload}".encode()
        return _b64(hmac.new(self._secret, msg, hashlib.sha256).digest())

    def issue(self, token_id: int, scope: str, *, now: float | None = None) -> tuple[str, str]:
        """A new session's cookie value and its CSRF secret."""
        t = time.time() if now is None else now
        csrf = secrets.token_urlsafe(24)
        body = {"t": token_id, "s": scope, "e": int(t + SESSION_S), "c": csrf}
        payload = _b64(json.dumps(body, separators=(",", ":")).encode())
        return f"{payload}.{self._mac('session', payload)}", csrf

    def read(self, value: str | None, *, now: float | None = None) -> SessionData | None:
        """The session of a cookie value, or None when it is missing, forged or expired."""
        if not value or value.count(".") != 1:
            return None
        payload, mac = value.split(".")
        if not hmac.compare_digest(mac, self._mac("session", payload)):
            return None
        try:
            body = json.loads(_unb64(payload))
            data = SessionData(int(body["t"]), str(body["s"]), float(body["e"]), str(body["c"]))
        except (ValueError, KeyError, TypeError):
            return None
        if data.expires <= (time.time() if now is None else now):
            return None
        return data

    def login_nonce(self) -> str:
        """A fresh sign-in nonce (the cookie and the form's hidden field both carry it)."""
        nonce = secrets.token_urlsafe(24)
        return f"{nonce}.{self._mac('login', nonce)}"

    def login_nonce_ok(self, cookie: str | None, field: str | None) -> bool:
        """Whether the sign-in form's nonce is the cookie's and this server signed it."""
        if not cookie or not field or not hmac.compare_digest(cookie, field):
            return False
        nonce, _, mac = cookie.partition(".")
        return hmac.compare_digest(mac, self._mac("login", nonce))


def csrf_matches(session: SessionData, given: str | None) -> bool:
    """Whether ``given`` (a form field or header) is the session's CSRF secret."""
    return given is not None and hmac.compare_digest(session.csrf, given)


def principal_of(db: Session, session: SessionData) -> Principal | None:
    """The principal of a verified session: its token's, while the token is active and has the
    scope the session was issued with; None otherwise (revoked, deleted, changed)."""
    row = db.get(TokenRow, session.token_id)
    if row is None or row.revoked_at is not None or row.scope != session.scope:
        return None
    return Principal(row.name, row.scope, row.host)


def token_row(db: Session, token: str) -> TokenRow | None:
    """The active row of API token ``token`` (for signing in), or None."""
    if not token.startswith(PREFIX):
        return None
    row = db.scalar(select(TokenRow).where(TokenRow.sha256 == digest(token)))
    return None if row is None or row.revoked_at is not None else row


def cookie_principal(
    signer: Signer, sessions: sessionmaker[Session], request: Request
) -> Principal | None:
    """The principal of an API request carrying the session cookie (and no token), or None.
    A request that changes state must carry the session's CSRF secret in ``X-CSRF-Token``
    (403 otherwise: a form on another site could post with the cookie)."""
    session = signer.read(request.cookies.get(COOKIE))
    if session is None:
        return None
    with sessions() as db:
        who = principal_of(db, session)
    if who is None:
        return None
    if request.method not in SAFE_METHODS and not csrf_matches(
        session, request.headers.get(CSRF_HEADER)
    ):
        raise Problem(
            403, "a request signed in by cookie needs its CSRF token (X-CSRF-Token)", CSRF_HEADER
        )
    return who
