"""The source database of a reconciliation, opened from a URL, its credentials never shown.

URLs (``--source`` of ``lakecdc quality check``):

- ``postgresql://`` / ``postgres://`` URL or a libpq DSN (``host=db dbname=shop user=me``): psycopg 3;
- ``mysql://`` / ``mariadb://user@host:3306/db``: PyMySQL;
- ``mssql://`` / ``sqlserver://user@host:1433/db``: pymssql;
  ``mssql+pyodbc://user@host:1433/db?driver=ODBC+Driver+18+for+SQL+Server&TrustServerCertificate=yes``:
  pyodbc (the Microsoft ODBC driver; every query parameter becomes a connection-string keyword);
- ``oracle://user@host:1521/SERVICE``: python-oracledb (thin mode; the path is the service name).

The password is the URL's, or ``password`` (``--source-password``), which wins: a literal or an
``env:NAME`` / ``file:PATH`` reference (``lakecdc.config.secret.Secret``, as the capture
configuration's ``database.password``); a URL password may be such a reference too. A resolved
password is registered with ``lakecdc.config.redact``, so logs mask it, and no error repeats the
URL unmasked or the driver's message unredacted.

Opening the connection is a driver call per kind (``DRIVERS``); ``LAKECDC_QUALITY_SOURCE_FACTORY=
module:callable`` names another one, called with the parsed ``SourceUrl`` (the tests answer from
recorded result sets through it, as the capture's ``LAKECDC_SQLSERVER_CONNECTION_FACTORY``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlparse

from lakecdc.audit.tables import AuditError
from lakecdc.config.redact import MASK, ConnectionString, redact
from lakecdc.config.secret import Secret

FACTORY_ENV = "LAKECDC_QUALITY_SOURCE_FACTORY"
#: URL scheme -> (kind, reconciliation dialect, default port)
SCHEMES: dict[str, tuple[str, str, int]] = {
    "postgresql": ("postgres", "postgres", 5432), "postgres": ("postgres", "postgres", 5432),
    "mysql": ("mysql", "mysql", 3306), "mariadb": ("mysql", "mysql", 3306),
    "mssql": ("pymssql", "sqlserver", 1433), "sqlserver": ("pymssql", "sqlserver", 1433),
    "mssql+pyodbc": ("pyodbc", "sqlserver", 1433), "sqlserver+pyodbc": ("pyodbc", "sqlserver", 1433),
    "oracle": ("oracledb", "oracle", 1521),
}


class SourceConnectError(AuditError):
    """The source database cannot be opened (the message shows the URL masked)."""


@dataclass(frozen=True)
class SourceUrl:
    kind: str  # postgres (psycopg), mysql (PyMySQL), pymssql, pyodbc, oracledb
    dialect: str  # the reconciliation dialect: postgres, mysql, sqlserver, oracle
    host: str
    port: int
    user: str
    database: str
    password: Secret | None = None
    options: dict[str, str] = field(default_factory=dict)  # the URL's query parameters
    dsn: str | None = None  # a libpq DSN given as is
    scheme: str = ""  # as given: mssql, sqlserver+pyodbc, ...

    def masked(self) -> str:
        if self.dsn is not None:
            return redact(str.__str__(self.dsn))
        secret = f":{MASK}" if self.password else ""
        return f"{self.scheme}://{self.user}{secret}@{self.host}:{self.port}/{self.database}"

    def password_text(self) -> str:
        return self.password.get_secret_value() if self.password else ""


def parse_source(spec: str, password: str | None = None) -> SourceUrl:
    """``spec`` (a URL or a libpq DSN) with ``password`` (literal or ``env:``/``file:``) applied."""
    given = Secret(password) if password else None
    scheme = spec.split("://", 1)[0].lower() if "://" in spec else None
    if scheme is None:  # a libpq DSN: psycopg reads it whole
        return SourceUrl("postgres", "postgres", "", 5432, "", "", given, dsn=ConnectionString(spec))
    if scheme not in SCHEMES:
        raise SourceConnectError(f"source URL scheme {scheme!r}: use one of {', '.join(sorted(SCHEMES))} "
                                 "or a libpq DSN")
    kind, dialect, port = SCHEMES[scheme]
    url = urlparse(spec)
    try:
        port = url.port or port
    except ValueError:
        raise SourceConnectError(f"source URL {redact(spec)}: the port is not a number") from None
    in_url = unquote(url.password) if url.password is not None else None
    # a PostgreSQL URL goes to libpq whole (no host: its socket; its parameters), the password apart
    return SourceUrl(kind, dialect, url.hostname or "127.0.0.1", port, unquote(url.username or ""),
                     unquote(url.path.lstrip("/")), given or (Secret(in_url) if in_url else None),
                     dict(parse_qsl(url.query)), ConnectionString(spec) if kind == "postgres" else None, scheme)


def _postgres(url: SourceUrl) -> Any:
    import psycopg

    # a password given apart (or an env:/file: reference in the URL) wins over the conninfo's
    extra: dict[str, Any] = {"password": url.password_text()} if url.password else {}
    return psycopg.connect(url.dsn or "", **extra)


def _mysql(url: SourceUrl) -> Any:
    import pymysql

    return pymysql.connect(host=url.host, port=url.port, user=url.user, password=url.password_text(),
                           database=url.database or None)


def _pymssql(url: SourceUrl) -> Any:
    import pymssql

    options: dict[str, Any] = dict(url.options)  # login_timeout=, tds_version=, ...
    return pymssql.connect(server=url.host, port=str(url.port), user=url.user, password=url.password_text(),
                           database=url.database, **options)


def odbc_connection_string(url: SourceUrl) -> str:
    """The ODBC connection string of a ``mssql+pyodbc://`` URL (values braced, ``}`` doubled)."""
    def braced(value: str) -> str:
        return "{" + value.replace("}", "}}") + "}"

    options = {k.lower(): v for k, v in url.options.items()}
    parts = {"DRIVER": braced(options.pop("driver", "ODBC Driver 18 for SQL Server")),
             "SERVER": f"{url.host},{url.port}", "DATABASE": braced(url.database), "UID": braced(url.user),
             "PWD": braced(url.password_text())}
    parts.update({k: braced(v) for k, v in options.items()})
    return ";".join(f"{k}={v}" for k, v in parts.items())


def _pyodbc(url: SourceUrl) -> Any:
    import pyodbc  # type: ignore[import-not-found]  # optional: installed with Microsoft's ODBC driver

    return pyodbc.connect(ConnectionString(odbc_connection_string(url)))


def _oracledb(url: SourceUrl) -> Any:
    import oracledb

    return oracledb.connect(user=url.user, password=url.password_text(), host=url.host, port=url.port,
                            service_name=url.database)


DRIVERS: dict[str, Callable[[SourceUrl], Any]] = {
    "postgres": _postgres, "mysql": _mysql, "pymssql": _pymssql, "pyodbc": _pyodbc, "oracledb": _oracledb}


def connect_source(spec: str, password: str | None = None) -> tuple[Any, SourceUrl]:
    """An open DB-API connection to the source ``spec`` names, and the parsed URL (its dialect)."""
    url = parse_source(spec, password)
    named = os.environ.get(FACTORY_ENV)
    if named:
        module, _, attr = named.partition(":")
        driver: Callable[[SourceUrl], Any] = getattr(importlib.import_module(module), attr)
    else:
        driver = DRIVERS[url.kind]
    try:
        url.password_text()  # resolves an env:/file: reference (and registers the value for masking)
        return driver(url), url
    except SourceConnectError:
        raise
    except Exception as error:  # noqa: BLE001 - every driver has its own errors; all are reported alike
        first = redact(str(error).strip().splitlines()[0]) if str(error).strip() else ""
        raise SourceConnectError(f"cannot connect to the source database {url.masked()} "
                                 f"({type(error).__name__}{': ' + first if first else ''})") from None
