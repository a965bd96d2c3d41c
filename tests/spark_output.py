"""What Spark, log4j, the JVM and py4j print: lines the demo's own output must never contain."""

from __future__ import annotations

import re

SPARK_LINE = re.compile(r"\b(WARN|INFO|ERROR|DEBUG)\b|log4j|SparkContext|NativeCodeLoader|setLogLevel|py4j|"
                        r"SparkSession|Exception|at org\.apache|WARNING: ")
