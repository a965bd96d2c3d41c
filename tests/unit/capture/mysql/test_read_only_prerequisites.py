"""``read.only=true``: what the GTID watermarks need of the server and the configuration, and the
newest GTID per stream they await. The server answers are recorded MySQL 8 ones (no MySQL server
here, see ``test_mysql8_differences.py``); MariaDB is covered for real by
``tests/integration/capture/mysql/test_mysql_read_only_snapshots.py``."""

from __future__ import annotations

import pytest
from test_mysql8_differences import UUID, RecordedConnection, info

from lakecdc.capture.mysql.config import MySqlConnectorConfig
from lakecdc.capture.mysql.errors import MySqlSetupError
from lakecdc.capture.mysql.read_only import check_prerequisites
from lakecdc.errors import ConfigError
from lakecdc.events.gtid import GtidSet, MariaDbGtid, MySqlGtid

BASE = {"topic.prefix": "dbz", "database.user": "cdc", "database.password": "pw",
        "signal.enabled.channels": "kafka", "signal.kafka.topic": "signals"}
PARALLEL = ("SHOW GLOBAL VARIABLES WHERE Variable_name IN (%s, %s, %s, %s)")


def test_mysql_without_gtids_fails_naming_read_only_and_gtid_mode() -> None:
    with pytest.raises(MySqlSetupError, match=r"read\.only=true .* needs GTIDs.*gtid_mode is not ON.*gtid_mode=ON"):
        check_prerequisites(RecordedConnection({}), info(gtid=False))


def test_multi_threaded_replica_needs_preserved_commit_order() -> None:
    unordered = RecordedConnection({PARALLEL: [("replica_parallel_workers", "4"),
                                               ("replica_preserve_commit_order", "OFF")]})
    with pytest.raises(MySqlSetupError, match="replica_parallel_workers=4.*replica_preserve_commit_order=ON"):
        check_prerequisites(unordered, info())
    ordered = RecordedConnection({PARALLEL: [("slave_parallel_workers", "4"), ("slave_preserve_commit_order", "ON")]})
    check_prerequisites(ordered, info())
    single = RecordedConnection({PARALLEL: [("replica_parallel_workers", "0"),
                                            ("replica_preserve_commit_order", "OFF")]})
    check_prerequisites(single, info())


def test_mariadb_has_gtids_and_ordered_parallel_replication() -> None:
    conn = RecordedConnection({})
    check_prerequisites(conn, info(mariadb=True, version="10.11.6-MariaDB"))
    assert conn.cur.executed == []


def test_read_only_kafka_signals_need_no_signal_table() -> None:
    config = MySqlConnectorConfig.from_properties({**BASE, "read.only": "true"})
    assert config.signal_table is None and config.signal_channels == ("kafka",)
    with pytest.raises(ConfigError, match="signal.data.collection"):
        MySqlConnectorConfig.from_properties(BASE)


def test_latest_gtid_of_each_stream() -> None:
    other = UUID[:-1] + "3"
    mysql = GtidSet.parse(f"{UUID}:1-5:7-9,{other}:1,{UUID}:tag_a:3")
    assert set(mysql.latest()) == {MySqlGtid(UUID, 9), MySqlGtid(other, 1), MySqlGtid(UUID, 3, "tag_a")}
    assert all(mysql.contains(g) for g in mysql.latest())
    mariadb = GtidSet.parse("0-1-100,1-2-5")
    assert mariadb.latest() == (MariaDbGtid(0, 100, 1), MariaDbGtid(1, 5, 2))
    behind = GtidSet.parse("0-1-99,1-2-5")
    assert [g for g in mariadb.latest() if not behind.contains(g)] == [MariaDbGtid(0, 100, 1)]
