"""MariaDB for local runs and tests, configured like a CDC source.

A private ``mariadbd --defaults-file=<dir>/my.cnf`` (Debian package ``mariadb-server``) on its own
data directory and loopback port, with the binlog settings Debezium's MySQL connector requires:
``log_bin``, ``binlog_format=ROW``, ``binlog_row_image=FULL``, ``binlog_row_metadata=FULL`` (column
names in table-map events), a ``server_id`` and ``gtid_strict_mode`` (MariaDB GTIDs are always on).
The client user has a password and the replication grants (REPLICATION SLAVE, REPLICATION CLIENT).
"""

from __future__ import annotations

import getpass
import secrets
import shutil
from pathlib import Path
from typing import Any

from lakecdc.config.redact import ConnectionString
from lakecdc.devstack.part import ServicePart
from lakecdc.devstack.ports import port_is_open
from lakecdc.devstack.process import give_to_user, run_checked, running_as_root

DEFAULT_USER = "lakecdc"
DEFAULT_DBNAME = "lakecdc"

_MY_CNF = """\
[mariadbd]
datadir = {datadir}
port = {port}
bind-address = 127.0.0.1
socket = {socket}
pid-file = {root}/mariadbd.pid
log-error = {root}/server.log
skip-name-resolve
skip-networking = 0
server_id = {server_id}
log_bin = {root}/data/binlog
binlog_format = ROW
binlog_row_image = FULL
binlog_row_metadata = FULL
gtid_strict_mode = 1
gtid_domain_id = 0
expire_logs_days = 1
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
default_time_zone = '+00:00'
innodb_buffer_pool_size = 32M
innodb_log_file_size = 16M
innodb_flush_log_at_trx_commit = 2
performance_schema = OFF
max_connections = 100
"""


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
        if found:
            return found
    raise FileNotFoundError(f"none of {list(names)} found: apt-get install mariadb-server "
                            "(scripts/bootstrap.sh does it)")


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


class MariaDB(ServicePart):
    """A private MariaDB server with a binlog for CDC, one user and one database.

    >>> with MariaDB(dbname="shop") as db:                   # doctest: +SKIP
    ...     pymysql.connect(**db.connect_kwargs())
    """

    part_name = "mariadb"
    service_users = ("mysql",)

    def __init__(self, dbname: str = DEFAULT_DBNAME, user: str = DEFAULT_USER,
                 password: str | None = None, server_id: int = 223344, port: int | None = None,
                 base_dir: Path | str | None = None, start_timeout: float = 30.0) -> None:
        super().__init__(port=port, base_dir=base_dir, start_timeout=start_timeout)
        self.dbname = dbname
        self.user = user
        self.password = password or secrets.token_urlsafe(18)
        self.server_id = server_id

    def __repr__(self) -> str:
        return f"MariaDB({self.masked_dsn})"

    @property
    def socket_path(self) -> Path:
        assert self.root_dir is not None
        return self.root_dir / "mariadbd.sock"

    @property
    def dsn(self) -> str:
        """URL with the password (for drivers; never print it: use masked_dsn)."""
        return ConnectionString(f"mysql://{self.user}:{self.password}@{self.host}:{self.port}/{self.dbname}")

    @property
    def masked_dsn(self) -> str:
        return f"mysql://{self.user}:***@{self.host}:{self.port}/{self.dbname}"

    def connect_kwargs(self, dbname: str | None = None) -> dict[str, Any]:
        """Keyword arguments for ``pymysql.connect`` over TCP."""
        return {"host": self.host, "port": self.port, "user": self.user,
                "password": self.password, "database": dbname or self.dbname}

    def connection_properties(self) -> dict[str, str]:
        """Debezium-named connection properties for a MySQL/MariaDB connector config."""
        return {"database.hostname": self.host, "database.port": str(self.port),
                "database.user": self.user, "database.password": self.password,
                "database.server.id": str(self.server_id + 1)}

    def admin_sql(self, statements: str) -> None:
        """Run SQL as the server's administrator over the private Unix socket (SQL on stdin,
        so nothing sensitive appears in a process list)."""
        assert self.root_dir is not None
        run_checked([_binary("mariadb", "mysql"), "--no-defaults", f"--socket={self.socket_path}",
                     "-u", "root" if running_as_root() else getpass.getuser(), "--batch"],
                    self.root_dir / "admin.log", timeout=30, stdin_text=statements)

    # -- ServicePart steps --------------------------------------------------------------------
    def _prepare(self) -> None:
        assert self.root_dir is not None
        data_dir = self.root_dir / "data"
        data_dir.mkdir()
        (self.root_dir / "my.cnf").write_text(_MY_CNF.format(
            datadir=data_dir, port=self.port, socket=self.socket_path, root=self.root_dir,
            server_id=self.server_id))
        self.log_path.touch()
        give_to_user(self.root_dir, self._run_as)
        install = [_binary("mariadb-install-db", "mysql_install_db"),
                   f"--defaults-file={self.root_dir / 'my.cnf'}", "--skip-test-db",
                   "--auth-root-authentication-method=socket"]
        if self._run_as is not None:
            install.append(f"--user={self._run_as}")
        run_checked(install, self.root_dir / "install.log", timeout=120)

    def _command(self) -> tuple[list[str], str | None]:
        assert self.root_dir is not None
        return [_binary("mariadbd"), f"--defaults-file={self.root_dir / 'my.cnf'}"], self._run_as

    def _ready(self) -> bool:
        return port_is_open(self.port, self.host) and self.socket_path.exists()

    def _provision(self) -> None:
        user = _sql_string(self.user)
        password = _sql_string(self.password)
        database = "`" + self.dbname.replace("`", "``") + "`"
        # Same account for TCP from 127.0.0.1 and for 'localhost'.
        statements = [f"CREATE DATABASE IF NOT EXISTS {database};"]
        for host in ("'127.0.0.1'", "'localhost'"):
            statements += [
                f"CREATE USER IF NOT EXISTS {user}@{host} IDENTIFIED BY {password};",
                f"GRANT ALL PRIVILEGES ON *.* TO {user}@{host};",
                f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO {user}@{host};",
            ]
        self.admin_sql("\n".join(statements) + "\nFLUSH PRIVILEGES;\n")

    def _extra_state(self) -> dict[str, Any]:
        return {"user": self.user, "dbname": self.dbname, "server_id": self.server_id,
                "data_dir": str(self.root_dir / "data") if self.root_dir else None,
                "dsn": self.masked_dsn}
