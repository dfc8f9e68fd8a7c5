"""The team store's URL: masked wherever it is shown, and completed for the driver.

A URL or libpq key=value string may carry a password (in the user info, `?password=`, `?sslpassword=`, or
`password=`), and so may the environment (PGPASSWORD). `mask_url` hides every one of them; `secrets_of`
lists them, raw and percent-decoded, so that a driver's message quoting one is scrubbed (`scrub`) before it
reaches a log or a person. `conninfo` adds what the URL leaves unsaid. PostgreSQL's driver only.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any
from urllib.parse import unquote

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

# Secrets a URL or conninfo string may carry (libpq's parameter names).
_SECRET_PARAMS = frozenset({"password", "sslpassword"})
_CONNINFO_SECRET = re.compile(r"(\b(?:ssl)?password\s*=\s*)('(?:\\.|[^'\\])*'|\S+)", re.IGNORECASE)
MASK = "***"
MIN_SCRUBBED_SECRET = 4  # shorter "passwords" would scrub ordinary words out of messages


def mask_url(url: str) -> str:
    """The store's URL fit for a message or a log: any password (user info, ?password=, ?sslpassword=, or
    password= in a key=value string) replaced by ***."""
    return scrub(_mask_fields(url), secrets_of(url))


def _mask_fields(url: str) -> str:
    if "://" not in url:
        return _CONNINFO_SECRET.sub(lambda match: match.group(1) + MASK, url)
    scheme, rest = url.split("://", 1)
    before_query, mark, query = rest.partition("?")
    head, hash_mark, fragment = (before_query, "", "") if mark else before_query.partition("#")
    # The last "@" before the query ends the user info (an unencoded "@" or "/" in a password stays masked;
    # an unencoded "?" is caught by the scrub of what libpq itself reads as the password).
    user_info, at, hosts = head.rpartition("@")
    if at and ":" in user_info:
        head = f"{user_info.split(':', 1)[0]}:{MASK}@{hosts}"
    masked = f"{scheme}://{head}{hash_mark}{fragment}"
    if mark:
        masked += "?" + _mask_query(query)
    return masked


def _mask_query(query: str) -> str:
    params = query.split("&")
    for index, param in enumerate(params):
        name, equals, _value = param.partition("=")
        if equals and unquote(name).strip().lower() in _SECRET_PARAMS:
            params[index] = f"{name}={MASK}"
    return "&".join(params)


def secrets_of(url: str) -> set[str]:
    """Every password the URL (or the environment) could hand the driver, raw and percent-decoded."""
    found = {os.environ.get("PGPASSWORD", "")}
    if "://" in url:
        rest = url.split("://", 1)[1]
        before_query, _, query = rest.partition("?")
        user_info, at, _hosts = before_query.rpartition("@")
        if at and ":" in user_info:
            found.add(user_info.split(":", 1)[1])
        for param in query.split("&"):
            name, _, value = param.partition("=")
            if unquote(name).strip().lower() in _SECRET_PARAMS:
                found.add(value)
    else:
        found.update(match.group(2).strip("'") for match in _CONNINFO_SECRET.finditer(url))
    try:  # what libpq reads as the passwords, however the URL spells them
        parsed = conninfo_to_dict(url)
    except psycopg.Error:
        parsed = {}
    found.update(str(parsed.get(name, "")) for name in _SECRET_PARAMS)
    found |= {unquote(secret) for secret in found}
    return {secret for secret in found if len(secret) >= MIN_SCRUBBED_SECRET}


def scrub(text: str, secrets: set[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def conninfo(url: str, timeout_s: float) -> str:
    """The URL, plus what it leaves unsaid: a connect timeout (libpq counts whole seconds, at least 2) and an
    application name the store's operators see in pg_stat_activity. Anything the URL says wins."""
    given = conninfo_to_dict(url)
    extra: dict[str, Any] = {}
    if "connect_timeout" not in given:
        extra["connect_timeout"] = max(2, math.ceil(timeout_s))
    if "application_name" not in given:
        extra["application_name"] = "live-memory"
    return make_conninfo(url, **extra)
