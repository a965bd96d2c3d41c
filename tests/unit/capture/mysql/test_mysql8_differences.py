"""MySQL 8 differences: binlog status statements, GTID ``uuid:N`` and caching_sha2 authentication.

No MySQL server can be installed here (Debian ships MariaDB only), so the server answers are
recorded ones shaped exactly like MySQL 8.0 / 8.4 and MariaDB 10.11 return them. MariaDB itself is
covered for real by the integration tests.
"""

from __future__ import annotations

import hashlib

import pymysql
import pytest

from lakecdc.capture.mysql import connection as myconn
from lakecdc.capture.mysql.config import MySqlConnectorConfig
from lakecdc.capture.mysql.errors import MySqlPrivilegeError
from lakecdc.capture.mysql.streaming import EmittedMark, MySqlStreamingSource
from lakecdc.capture.mysql.types import TypeModes
from lakecdc.events.topics import TopicNamer

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


class RecordedCursor:
    """Answers statements from a script: {sql: rows | exception}."""

    def __init__(self, script: dict[str, object]) -> None:
        self.script = script
        self.executed: list[str] = []
        self._rows: list[tuple] = []

    def execute(self, sql: str, args: object = None) -> None:
        self.executed.append(sql)
        answer = self.script[sql]
        if isinstance(answer, BaseException):
            raise answer
        self._rows = list(answer)  # type: ignore[arg-type]

    def fetchone(self):
        return self._rows[0] if self._rows else None

    def fetchall(self):
        return self._rows

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class RecordedConnection:
    def __init__(self, script: dict[str, object]) -> None:
        self.cur = RecordedCursor(script)

    def cursor(self, *args):
        return self.cur


def info(mariadb: bool = False, gtid: bool = True, version: str = "8.4.3") -> myconn.ServerInfo:
    return myconn.ServerInfo(version, mariadb, 1, gtid, "ROW", "FULL", "FULL", "utf8mb4")


def test_mysql_84_answers_show_binary_log_status_with_its_gtid_set():
    conn = RecordedConnection({"SHOW BINARY LOG STATUS": [("binlog.000007", 157, "", "",
                                                           f"{UUID}:1-5,\n{UUID[:-1]}3:1")]})
    status = myconn.binlog_status(conn, info())
    assert status == myconn.BinlogStatus("binlog.000007", 157, f"{UUID}:1-5,{UUID[:-1]}3:1")
    assert conn.cur.executed == ["SHOW BINARY LOG STATUS"]


def test_mysql_80_and_mariadb_fall_back_to_show_master_status():
    syntax = pymysql.err.ProgrammingError(1064, "You have an error in your SQL syntax")
    conn = RecordedConnection({"SHOW BINARY LOG STATUS": syntax,
                               "SHOW MASTER STATUS": [("mysql-bin.000003", 154, "", "", "")]})
    status = myconn.binlog_status(conn, info(version="8.0.36", gtid=False))
    assert status == myconn.BinlogStatus("mysql-bin.000003", 154, None)
    assert conn.cur.executed == ["SHOW BINARY LOG STATUS", "SHOW MASTER STATUS"]
    maria = RecordedConnection({"SHOW BINARY LOG STATUS": syntax,
                                "SHOW MASTER STATUS": [("binlog.000001", 2453, "", "")],
                                "SELECT @@gtid_binlog_pos": [("0-223344-10",)]})
    status = myconn.binlog_status(maria, info(mariadb=True, version="10.11.19-MariaDB"))
    assert status == myconn.BinlogStatus("binlog.000001", 2453, "0-223344-10")


def test_missing_replication_client_privilege_is_named():
    denied = pymysql.err.OperationalError(1227, "Access denied; you need (at least one of) the REPLICATION CLIENT")
    conn = RecordedConnection({"SHOW BINARY LOG STATUS": denied})
    with pytest.raises(MySqlPrivilegeError, match="REPLICATION CLIENT"):
        myconn.binlog_status(conn, info())


def test_server_info_detects_gtid_mode_and_flavour():
    script = {
        "SELECT VERSION()": [("8.4.3",)],
        "SELECT @@server_id": [(42,)],
        "SHOW GLOBAL VARIABLES LIKE %s": [("x", "ON")],
    }
    conn = RecordedConnection(script)
    got = myconn.server_info(conn)
    assert not got.is_mariadb and got.gtid_enabled and got.server_id == 42 and got.major_minor == (8, 4)
    maria = RecordedConnection({**script, "SELECT VERSION()": [("10.11.19-MariaDB-0+deb12u1-log",)]})
    assert myconn.server_info(maria).is_mariadb


def _streaming_source() -> MySqlStreamingSource:
    config = MySqlConnectorConfig.from_properties(
        {"topic.prefix": "dbz", "database.user": "u", "provide.transaction.metadata": "true"}
    )
    return MySqlStreamingSource(config, TypeModes(), TopicNamer("dbz", "mysql"), history=None, emitted=EmittedMark())


def test_mysql_gtid_uuid_n_is_the_transaction_id_and_joins_the_offset_gtid_set():
    source = _streaming_source()
    source.file, source.file_index, source.server_id = "binlog.000007", 7, 1
    from lakecdc.events.gtid import GtidSet

    source.gtids = GtidSet.parse(f"{UUID}:1-22")
    out: list = []
    source._begin(1000, f"{UUID}:23")
    block = source._tx_block("inventory.customers", 1700000000, None, out)
    assert out[0].value["status"] == "BEGIN" and out[0].value["id"] == f"{UUID}:23"
    assert block == {"id": f"{UUID}:23", "total_order": 1, "data_collection_order": 1}
    source._commit(1400, 1700000000, out)
    assert out[1].value["status"] == "END" and out[1].value["event_count"] == 1
    offset = source.committable_offset()
    assert offset == {"file": "binlog.000007", "pos": 1400, "server_id": 1, "gtids": f"{UUID}:1-23",
                      "ts_sec": 1700000000}


def test_mariadb_gtid_domain_server_sequence_replaces_the_domain_entry():
    source = _streaming_source()
    source.file, source.file_index, source.server_id = "binlog.000001", 1, 223344
    from lakecdc.events.gtid import GtidSet

    source.gtids = GtidSet.parse("0-223344-9,1-5-3")
    source._begin(100, "0-223344-10")
    source._commit(200, 1, [])
    assert source.committable_offset()["gtids"] == "0-223344-10,1-5-3"


def test_transaction_without_gtid_gets_file_and_position_as_its_id():
    source = _streaming_source()
    source.file, source.file_index = "mysql-bin.000003", 3
    out: list = []
    source._begin(154, None)
    source._tx_block("inventory.customers", 0, None, out)
    assert out[0].value["id"] == "mysql-bin.000003:154"


def test_caching_sha2_fast_path_scramble_follows_the_protocol():
    """MySQL 8's default plugin: XOR(SHA256(pw), SHA256(SHA256(SHA256(pw)) + nonce))."""
    from pymysql import _auth

    password, nonce = b"s3cret", bytes(range(20))
    p1 = hashlib.sha256(password).digest()
    expected = bytes(a ^ b for a, b in zip(p1, hashlib.sha256(hashlib.sha256(p1).digest() + nonce).digest()))
    assert _auth.scramble_caching_sha2(password, nonce) == expected


def test_caching_sha2_full_authentication_over_plain_tcp_encrypts_with_the_server_key():
    """Without TLS the first login (or a cache miss) needs RSA: the 'cryptography' package."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa
    from pymysql import _auth

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    salt = bytes(range(1, 21))
    encrypted = _auth.sha2_rsa_encrypt(b"s3cret", salt, public_pem)
    clear = key.decrypt(encrypted, padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()),
                                                 algorithm=hashes.SHA1(), label=None))
    assert bytes(c ^ salt[i % 20] for i, c in enumerate(clear)) == b"s3cret\0"
