"""Credentials never leave the process: masking URLs and DSNs, and ``${VAR}`` expansion.

:func:`mask_secrets` hides every credential in any text (an error message, a
report field, a header line):

- the password of a URL's userinfo: ``postgresql://eval:***@db/shop``;
- secret query parameters of a URL: ``?password=***``, ``pwd=``, ``passwd=``,
  ``secret``, ``token``, ``key``, ``sig``, ... (any parameter whose name says so);
- libpq connection-string keywords: ``host=db password=***``;
- every password this process has seen in a URL or expanded from the
  environment, wherever it appears (a driver may echo part of a connection
  string in its own words).

:func:`expand_env` expands ``${VAR}`` and ``${VAR:-default}``. A value that
lands in a URL's userinfo or query string is percent-encoded, so a password
such as ``p@ss/w#rd`` works unchanged and is masked like any other; a value in
the host, port or path (and any value in a plain file path) is used as is.

Import-light on purpose (the plugin imports it at start-up): SQLAlchemy is
imported only when a URL is parsed.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Iterable
from urllib.parse import quote, unquote

MASK = "***"

#: Shortest literal secret masked wherever it appears (shorter ones are masked in URLs and DSNs only,
#: since masking e.g. every "ab" in a message would make it unreadable).
MIN_LITERAL_SECRET = 4

_SECRET_EXACT = frozenset({"pwd", "pass", "pw", "key", "sig", "auth", "secret", "token", "passphrase"})
_SECRET_PARTS = ("password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "access_key",
                 "accesskey", "private_key", "privatekey", "credential", "passphrase", "sslkey", "signature")

# A URL: scheme://rest, up to white space or a quoting/bracketing character.
_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://(?P<rest>[^\s'\"<>`]*)")
# A key=value pair in a query string (inside a URL).
_QUERY_PAIR = re.compile(r"(?P<lead>[?&;])(?P<key>[^=&;#?]+)=(?P<value>[^&;#]*)")
# A libpq-style keyword=value (conninfo strings, "PGPASSWORD=...", "password: ..." is left alone).
_DSN_PAIR = re.compile(
    r"(?P<key>(?<![\w.\-])[A-Za-z_][\w.\-]*)(?P<eq>\s*=\s*)(?P<value>'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?|[^\s'\",;&]+)"
)
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

_literal_secrets: set[str] = set()


def is_secret_key(name: str) -> bool:
    """Does a parameter or keyword of this name hold a credential?"""
    key = name.strip().lower()
    if key in _SECRET_EXACT or key.endswith(("password", "passwd", "_pwd", "_key", "-key", "_token", "_secret")):
        return True
    return any(part in key for part in _SECRET_PARTS)


def register_secret(value: str | None) -> None:
    """Remember a credential so :func:`mask_secrets` hides it wherever it appears."""
    if value and len(value) >= MIN_LITERAL_SECRET:
        _literal_secrets.add(value)
        encoded = quote(value, safe="")
        if encoded != value:
            _literal_secrets.add(encoded)


def mask_secrets(text: str, extra: Iterable[str | None] = ()) -> str:
    """``text`` with every credential replaced by ``***`` (see the module docstring)."""
    if not isinstance(text, str) or not text:
        return text
    if "://" in text:
        text = _URL.sub(_mask_url_match, text)
    if "=" in text:
        text = _DSN_PAIR.sub(_mask_dsn_pair, text)
    secrets = set(_literal_secrets)
    for value in extra:
        if value:
            secrets.add(value)
            secrets.add(quote(value, safe=""))
    for secret in sorted(secrets, key=len, reverse=True):
        if secret and secret != MASK and secret in text:
            text = text.replace(secret, MASK)
    return text


#: url -> (how many secrets were known, the masked url): a case's report names its database, and the cases of a
#: suite share one URL. Secrets are only ever added, so an entry stays right until a new one is registered.
_masked_urls: dict[str, tuple[int, str]] = {}


def mask_url(url: str) -> str:
    """A database URL for display: its password and secret parameters hidden."""
    register_url_secrets(url)
    known = len(_literal_secrets)
    cached = _masked_urls.get(url)
    if cached is not None and cached[0] == known:
        return cached[1]
    masked = mask_secrets(url)
    if len(_masked_urls) >= 1024:
        _masked_urls.clear()
    _masked_urls[url] = (known, masked)
    return masked


def parse_url(url: str) -> Any:
    """SQLAlchemy's reading of a database URL (``sqlalchemy.engine.URL``, through ``make_url``), None for a text
    that is not one."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url)
    except Exception:  # noqa: BLE001 - ArgumentError, a bad port's ValueError, ...: not a URL
        return None


@lru_cache(maxsize=4096)
def register_url_secrets(url: str) -> None:
    """Remember the password (and secret parameters) of a URL, read with SQLAlchemy's parser."""
    parsed = parse_url(url) if "://" in url else None
    if parsed is None:  # not a SQLAlchemy URL: the text rules still apply
        return
    if parsed.password:
        register_secret(str(parsed.password))
    written = _written_password(url)
    if written and "@" in written:  # `u:p@ss@db`: SQLAlchemy stops the password at the first '@' and takes the
        register_secret(written)    # rest for the host, which the driver then echoes ("failed to resolve host
        for piece in written.split("@")[1:]:  # 'ss@db'"): every piece after an '@' is the password's too
            register_secret(piece)
    for key, value in parsed.query.items():
        if is_secret_key(key):
            for item in (value,) if isinstance(value, str) else value:
                register_secret(unquote(item))


def _written_password(url: str) -> str | None:
    """The password as the text rules read it (up to the last '@' of the userinfo), None without one."""
    match = _URL.match(url)
    if match is None:
        return None
    rest = match.group("rest")
    at = _userinfo_end(rest)
    if at < 0:
        return None
    _user, colon, password = rest[:at].partition(":")
    return password if colon else None


def _mask_url_match(match: re.Match) -> str:
    scheme, rest = match.group("scheme"), match.group("rest")
    at = _userinfo_end(rest)
    if at >= 0:
        user, colon, _password = rest[:at].partition(":")
        rest = f"{user}{':' + MASK if colon else ''}{rest[at:]}"
    if "=" in rest:
        rest = _QUERY_PAIR.sub(_mask_query_pair, rest)
    return f"{scheme}://{rest}"


def _userinfo_end(rest: str) -> int:
    """Index of the ``@`` closing the userinfo (a password may itself hold ``@``, ``/`` or ``#``), or -1."""
    at = rest.rfind("@")
    if at < 0:
        return -1
    question = rest.find("?")
    if 0 <= question < at and "=" in rest[question:at]:  # the last '@' is in the query string (?user=a@b)
        return rest.rfind("@", 0, question)
    return at


def _mask_query_pair(match: re.Match) -> str:
    if is_secret_key(unquote(match.group("key"))) and match.group("value"):
        return f"{match.group('lead')}{match.group('key')}={MASK}"
    return match.group(0)


def _mask_dsn_pair(match: re.Match) -> str:
    key = match.group("key")
    if key.lower() in _SECRET_EXACT and match.group("eq") != "=" and "pass" not in key.lower():
        return match.group(0)  # `key = 5` in quoted SQL is not a credential; `key=5` in a conninfo may be
    if is_secret_key(key) and match.group("value") not in ("", MASK, f"'{MASK}'"):
        return f"{match.group('key')}{match.group('eq')}{MASK}"
    return match.group(0)


# --------------------------------------------------------------------------- ${VAR} expansion
def expand_env(text: str, lookup: Callable[[str], str | None], missing: Callable[[str], Exception]) -> str:
    """Expand ``${VAR}`` / ``${VAR:-default}`` in a database URL or path.

    ``lookup(name)`` gives a variable's value (``None`` or ``""`` when unset);
    ``missing(name)`` builds the exception raised for an unset variable without
    a default. Values expanded into a URL's userinfo or query string are
    percent-encoded and remembered as secrets; anything else is inserted as is.
    """
    matches = list(_ENV.finditer(text))
    if not matches:
        return text
    userinfo, query = _url_regions(text, matches)
    out: list[str] = []
    last = 0
    for match in matches:
        name, default = match.group(1), match.group(2)
        value = lookup(name)
        if not value:
            if default is None:
                raise missing(name)
            value = default
        start = match.start()
        if _inside(start, userinfo) or _inside(start, query):
            register_secret(value)
            value = quote(value, safe="")
        out.append(text[last:start])
        out.append(value)
        last = match.end()
    out.append(text[last:])
    return "".join(out)


def _url_regions(text: str, matches: list[re.Match]) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """Where the userinfo and the query string of the template URL are (None when absent)."""
    # Blank out the ${...} references so that characters inside them (a default's ':' or '/') do not count.
    template = list(text)
    for match in matches:
        template[match.start():match.end()] = "x" * (match.end() - match.start())
    blank = "".join(template)
    sep = blank.find("://")
    if sep < 0:
        return None, None
    start = sep + 3
    authority_end = len(blank)
    for ch in "/?#":
        index = blank.find(ch, start)
        if index >= 0:
            authority_end = min(authority_end, index)
    at = blank.rfind("@", start, authority_end)
    userinfo = (start, at) if at >= 0 else None
    question = blank.find("?", start)
    query = (question, len(blank)) if question >= 0 else None
    return userinfo, query


def _inside(position: int, region: tuple[int, int] | None) -> bool:
    return region is not None and region[0] <= position < region[1]
