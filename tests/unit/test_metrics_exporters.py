"""The Prometheus exporters' pieces without services: port parsing, offset positions, what is counted.

The end-to-end scrape of a running capture and ingest is tests/integration/metrics/."""

from __future__ import annotations

import urllib.request
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.capture.exporter import CaptureMetrics, capture_metrics, offset_position, table_label
from lakecdc.errors import ConfigError
from lakecdc.events.envelope import ChangeRecord
from lakecdc.metrics.prometheus import parse_port


def test_parse_port() -> None:
    assert parse_port(None) is None and parse_port(" ") is None
    assert parse_port("9464") == 9464 and parse_port(0) == 0
    with pytest.raises(ConfigError, match="metrics.port"):
        parse_port("http")
    with pytest.raises(ConfigError, match="between 0 and 65535"):
        parse_port("70000")


def test_offset_position_per_connector() -> None:
    assert offset_position({"lsn": 24023128, "txId": 7}) == ("lsn", 24023128.0)
    assert offset_position({"file": "binlog.000003", "pos": 1544}) == ("pos", 1544.0)
    assert offset_position({"scn": "2710345"}) == ("scn", 2710345.0)
    sqlserver = (0x27 << 48) | (0x758 << 16) | 3
    assert offset_position({"commit_lsn": "00000027:00000758:0003"}) == ("commit_lsn", float(sqlserver))
    assert offset_position({"snapshot": True}) is None and offset_position(None) is None


def test_table_label_matches_the_ingest_source_name() -> None:
    assert table_label({"db": "inventory", "schema": "public", "table": "customers"}) == "inventory.public.customers"
    assert table_label({"db": "inventory", "schema": None, "table": "orders"}) == "inventory.orders"  # MySQL


def _connector(port: str | None) -> Any:
    passthrough = {"metrics.port": port} if port is not None else {}
    return SimpleNamespace(name="shop", config=SimpleNamespace(passthrough=passthrough))


def test_no_port_no_endpoint() -> None:
    metrics = capture_metrics(_connector(None))
    assert type(metrics) is CaptureMetrics and metrics.port is None


def _record(op: str | None, table: str = "customers", ts_ms: int = 1_700_000_000_000) -> ChangeRecord:
    source = {"db": "inventory", "schema": "public", "table": table, "ts_ms": ts_ms}
    value = None if op is None else {"op": op, "source": source, "before": None, "after": {"id": 1}}
    return ChangeRecord(f"shop.public.{table}", None, {"id": 1}, None, value)


def test_counts_change_events_only_and_lag_at_commit() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    metrics = capture_metrics(_connector("0"))  # the system picks a free port
    try:
        transaction = ChangeRecord("shop.transaction", None, {"id": "1"}, None, {"status": "END", "id": "1"})
        metrics.sent([_record("c"), _record("c"), _record("u", "orders"), _record(None), transaction,
                      _record("r", "orders")])
        metrics.committed({"lsn": 42}, 0.25)
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics.port}/metrics", timeout=10) as response:
            text = response.read().decode()
    finally:
        metrics.close()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    def at(name: str, table: str | None = None, **labels: str) -> float:
        labels = {"connector": "shop", **({"table": f"inventory.public.{table}"} if table else {}), **labels}
        return samples[(name, tuple(sorted(labels.items())))]

    assert at("lakecdc_capture_events_total", "customers", op="c") == 2
    assert at("lakecdc_capture_events_total", "orders", op="u") == 1
    assert at("lakecdc_capture_snapshot_rows_total", "orders") == 1
    assert sum(v for (name, _), v in samples.items() if name == "lakecdc_capture_events_total") == 4
    assert at("lakecdc_capture_source_timestamp_seconds", "customers") == 1_700_000_000
    assert at("lakecdc_capture_lag_seconds", "customers") > 0
    assert at("lakecdc_capture_source_position", field="lsn") == 42
    assert at("lakecdc_capture_commit_duration_seconds_sum") == 0.25


def _exposed_names(registry: Any) -> set[str]:
    """The sample names a registry's metrics are scraped under, whether or not they have samples yet."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}
    return {family.name + suffix for family in registry.collect() for suffix in suffixes[family.type]}


def test_the_grafana_dashboard_queries_exactly_the_exported_metrics() -> None:
    import json
    import re
    from pathlib import Path

    from lakecdc.ingest.exporter import IngestExporter
    from lakecdc.metrics.prometheus import MetricsEndpoint

    capture = capture_metrics(_connector("0"))
    ingest = IngestExporter(MetricsEndpoint(0, "ingest test"), "job")
    try:
        exported = _exposed_names(capture.endpoint.registry) | _exposed_names(ingest.endpoint.registry)
    finally:
        capture.close()
        ingest.close()
    dashboard = json.loads((Path(__file__).resolve().parents[2] / "conf" / "grafana-lakecdc.json").read_text())
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    used = {name for expr in expressions for name in re.findall(r"\blakecdc_[a-z_]+", expr)}
    assert used - exported == set(), "the dashboard queries metrics no exporter has"
    families = {re.sub(r"_(total|bucket|count|sum)$", "", name) for name in exported}
    shown = {re.sub(r"_(total|bucket|count|sum)$", "", name) for name in used}
    assert families - shown == set(), "exported metrics missing from the dashboard"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-5_000, 5_000_000)), max_size=60), st.integers(1, 4))
def test_arrow_histogram_equals_the_client_histogram(values: list[int | None], parts: int) -> None:
    import pyarrow as pa
    from prometheus_client import CollectorRegistry, Histogram

    from lakecdc.ingest.exporter import ArrowHistogram
    from lakecdc.metrics.prometheus import LAG_BUCKETS

    ours, theirs = CollectorRegistry(), CollectorRegistry()
    arrow = ArrowHistogram("h_seconds", "test", "job")
    ours.register(arrow)
    client = Histogram("h_seconds", "test", ["connector"], buckets=LAG_BUCKETS, registry=theirs).labels("job")
    size = -(-len(values) // parts) or 1
    for start in range(0, len(values), size):  # a batch's several tables
        arrow.observe_ms(pa.array(values[start:start + size], pa.int64()))
    for ms in values:
        if ms is not None:
            client.observe(max(0, ms) / 1000)

    def samples(registry: CollectorRegistry) -> dict[tuple[str, str], float]:
        return {(s.name, s.labels.get("le", "")): s.value for family in registry.collect() for s in family.samples
                if not s.name.endswith("_created")}
    got, expected = samples(ours), samples(theirs)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value), key


def test_cached_estimates_read_once_refresh_on_a_new_table_and_never_fail_capture() -> None:
    from lakecdc.capture.snapshot_estimates import CachedEstimates

    fetched: list[int] = []
    tables = {("public", "a"): 10, ("public", "never_analysed"): -1}

    def fetch() -> dict[tuple[str, str], int]:
        fetched.append(1)
        if len(fetched) == 3:
            raise OSError("connection refused")
        return dict(tables)
    estimate = CachedEstimates(fetch, lambda s: (s["schema"], s["table"]))
    assert estimate({"schema": "public", "table": "a"}) == 10 and len(fetched) == 1
    assert estimate({"schema": "public", "table": "never_analysed"}) is None and len(fetched) == 1
    tables[("public", "b")] = 7  # created after the first look
    assert estimate({"schema": "public", "table": "b"}) == 7 and len(fetched) == 2
    assert estimate({"schema": "public", "table": "c"}) is None and len(fetched) == 3  # the lookup failed


def test_serve_ingest_metrics_port_from_the_file_or_the_option_and_a_busy_port_named(tmp_path: Any) -> None:
    import socket

    from lakecdc.devstack.ports import free_port
    from lakecdc.ingest.exporter import active_ingest_exporter, serve_ingest_metrics

    path = tmp_path / "ingest.yaml"
    base = "name: shop-ingest\nkafka.bootstrap.servers: 127.0.0.1:9\ntopic.prefix: shop\n"
    path.write_text(base)
    with serve_ingest_metrics(path) as exporter:
        assert exporter is None and active_ingest_exporter() is None  # off by default
    port = free_port()
    path.write_text(base + f"metrics.port: {port}\n")
    with serve_ingest_metrics(path) as exporter:
        assert exporter is not None and exporter.port == port and active_ingest_exporter() is exporter
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            assert b"lakecdc_ingest_held_events" in response.read()
    assert active_ingest_exporter() is None
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot serve ingest shop-ingest metrics on port {taken}"), \
                serve_ingest_metrics(path, port=taken):
            pass


def test_capture_cli_names_a_busy_metrics_port_before_touching_the_source(tmp_path: Any) -> None:
    import socket

    from typer.testing import CliRunner

    from lakecdc.cli.main import app

    config = tmp_path / "pg.properties"
    config.write_text("name=shop\ntopic.prefix=shop\ndatabase.hostname=127.0.0.1\ndatabase.port=9\n"
                      "database.user=u\ndatabase.password=secret-pw\ndatabase.dbname=shop\n"
                      f"offset.storage.file.filename={tmp_path / 'offsets.json'}\n")
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        result = CliRunner().invoke(app, ["capture", "--config", str(config), "--sink",
                                          f"jsonl:{tmp_path / 'events.jsonl'}", "--metrics-port", str(taken)],
                                    env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert f"cannot serve capture shop metrics on port {taken}" in result.output
    assert "secret-pw" not in result.output


def test_ingest_exports_each_tables_lag_and_position_at_its_last_batch() -> None:
    from lakecdc.events.positions import MySqlPosition, PostgresPosition
    from lakecdc.ingest.exporter import IngestExporter
    from lakecdc.ingest.processor import BatchReport
    from lakecdc.lake.batch import TableTarget
    from lakecdc.metrics.prometheus import MetricsEndpoint

    pg = TableTarget("shop.public.orders", "postgres", "shop", "public", "orders", "b.o", "s.o")
    my = TableTarget("mall.items", "mysql", "mall", None, "items", "b.i", "s.i")
    ingest = IngestExporter(MetricsEndpoint(0, "ingest test"), "job")

    def sample(name: str, **labels: str) -> float | None:
        return ingest.endpoint.registry.get_sample_value(name, {"connector": "job", **labels})

    try:
        first = BatchReport(batch_id=1, tables={pg.source_name: 3, my.source_name: 2}, targets=[pg, my],
                            table_source_ts_ms={pg.source_name: 100_000, my.source_name: 104_000},
                            table_max_seq={pg.source_name: PostgresPosition(lsn=900, commit_lsn=950).seq(),
                                           my.source_name: MySqlPosition("mysql-bin.000003", 1544).seq()})
        ingest.batch(first, now_ms=105_000)
        # a later batch touching only orders: items keeps what its last batch said
        second = BatchReport(batch_id=2, tables={pg.source_name: 1}, targets=[pg],
                             table_source_ts_ms={pg.source_name: 110_000},
                             table_max_seq={pg.source_name: PostgresPosition(lsn=1200, commit_lsn=1300).seq()})
        ingest.batch(second, now_ms=110_500)
        assert sample("lakecdc_ingest_table_lag_seconds", table=pg.source_name) == 0.5
        assert sample("lakecdc_ingest_table_lag_seconds", table=my.source_name) == 1.0
        assert sample("lakecdc_ingest_table_source_timestamp_seconds", table=pg.source_name) == 110.0
        assert sample("lakecdc_ingest_table_source_position", table=pg.source_name, field="lsn") == 1300
        assert sample("lakecdc_ingest_table_source_position", table=my.source_name, field="pos") == 1544
        # a connector without a known position gets no position gauge, and the batch is still counted
        other = TableTarget("x.y.z", "other", "x", "y", "z", "b.z", "s.z")
        ingest.batch(BatchReport(batch_id=3, tables={other.source_name: 1}, targets=[other],
                                 table_max_seq={other.source_name: (1, 2, 3, 4)}), now_ms=111_000)
        assert sample("lakecdc_ingest_batches_total") == 3
        assert not [s for m in ingest.endpoint.registry.collect() for s in m.samples
                    if s.name == "lakecdc_ingest_table_source_position" and s.labels.get("table") == "x.y.z"]
    finally:
        ingest.close()
