"""Reading connector configuration files into one flat ``{dotted.name: string}`` mapping.

Two file forms are accepted and give the same mapping:

- Java ``.properties`` (what a Debezium user already has), parsed the way
  ``java.util.Properties.load`` does: ``#``/``!`` comments, ``=``, ``:`` or whitespace as the
  separator, backslash line continuations, ``\\t \\n \\r \\f \\uXXXX`` escapes, last duplicate wins.
- YAML (or JSON, a YAML subset). Nested mappings are flattened to dotted names, so
  ``database: {hostname: db1}`` equals ``database.hostname: db1``. The Kafka Connect REST
  registration form ``{"name": "inventory", "config": {...}}`` is accepted as is, and the whole
  document may also sit under a top-level ``connector:`` section::

      connector:
        name: inventory
        config:
          topic.prefix: shop
          database: {hostname: db1, port: 5432}

  Scalars become the strings Java would read (``true``/``false``, ``5432``); a list becomes a
  comma-separated value (handy for ``table.include.list``).

Environment overrides: ``LAKECDC_CONFIG_<NAME>`` where ``<NAME>`` is the property name upper-cased
with ``.`` and ``-`` replaced by ``_`` (``LAKECDC_CONFIG_DATABASE_HOSTNAME`` -> ``database.hostname``).
The prefix is dedicated so other ``LAKECDC_*`` variables never turn into properties. An
override replaces the property of the same normalized name already in the file or among
``known_names``; otherwise the name is lower-cased with ``_`` -> ``.``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lakecdc.errors import ConfigError

ENV_PREFIX = "LAKECDC_CONFIG_"
_YAML_SUFFIXES = {".yaml", ".yml", ".json"}
_SECTION_KEYS = ("connector",)


def load_properties(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    known_names: Iterable[str] = (),
) -> dict[str, str]:
    """Read a ``.properties`` or YAML connector file and apply ``LAKECDC_CONFIG_*`` env overrides.

    ``environ`` defaults to ``os.environ``; pass ``{}`` to disable overrides.
    """
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file '{file}': {exc.strerror}") from exc
    if file.suffix.lower() in _YAML_SUFFIXES:
        props = parse_yaml_properties(raw.decode("utf-8"), source=str(file))
    else:
        props = parse_java_properties(_decode_properties(raw))
    return apply_env_overrides(props, os.environ if environ is None else environ, known_names)


def _decode_properties(raw: bytes) -> str:
    # Java's Properties.load(InputStream) reads ISO-8859-1; files written today are UTF-8.
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("iso-8859-1")


# --------------------------------------------------------------------------- .properties


def parse_java_properties(text: str) -> dict[str, str]:
    """Parse Java properties text like ``java.util.Properties.load(Reader)``.

    >>> parse_java_properties("a.b = 1\\nc:two\\\\\\n   parts\\n# note\\n")
    {'a.b': '1', 'c': 'twoparts'}
    """
    result: dict[str, str] = {}
    for logical in _logical_lines(text):
        key, value = _split_key_value(logical)
        result[_unescape(key)] = _unescape(value)
    return result


def _logical_lines(text: str) -> Iterable[str]:
    """Logical lines as ``Properties.load`` forms them (checked against Java by a test).

    Leading blanks of every natural line are dropped; blank lines are skipped unless they end a
    continuation; a ``#``/``!`` comment is recognised whenever the logical line is still empty
    (also right after a continuation that added nothing); an odd number of trailing backslashes
    joins the next line; a line that stays empty yields nothing.
    """
    buf: list[str] = []
    skip_blanks = True
    continuing = False  # at the start of a continuation line: a line break here ends the line
    backslash = False  # the last character in buf is an unescaped backslash
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        i += 1
        if skip_blanks:
            if c in " \t\f" or (not continuing and c in "\r\n"):
                continue
            skip_blanks = continuing = False
        if not buf and c in "#!":
            while i < n and text[i] not in "\r\n":
                i += 1
            skip_blanks = True
            continue
        if c not in "\r\n":
            buf.append(c)
            backslash = c == "\\" and not backslash
            continue
        if not buf:
            skip_blanks = True
            continue
        if i >= n:  # the break is the last character: Java ends the line here, even if now empty
            break
        if c == "\r" and text[i] == "\n":
            i += 1
        if backslash:
            buf.pop()
            backslash = False
            skip_blanks = continuing = True
            continue
        yield "".join(buf)
        buf = []
        skip_blanks = True
    if buf:
        yield "".join(buf[:-1] if backslash else buf)


def _split_key_value(line: str) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    j = i
    while j < n and line[j] in " \t\f":
        j += 1
    if j < n and line[j] in "=:":
        j += 1
        while j < n and line[j] in " \t\f":
            j += 1
    return key, line[j:]


_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch if ch != "\\" else "")
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(f"malformed \\uxxxx escape in properties text near '{text[i:i + 6]}'")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_SIMPLE_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


# --------------------------------------------------------------------------- YAML


def parse_yaml_properties(text: str, *, source: str = "<yaml>") -> dict[str, str]:
    """Flatten a YAML/JSON connector document to dotted property names.

    >>> parse_yaml_properties("name: inv\\nconfig:\\n  database: {hostname: db1, port: 5432}\\n")
    {'name': 'inv', 'database.hostname': 'db1', 'database.port': '5432'}
    """
    import yaml  # core dependency; imported here to keep `import lakecdc.config` light

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration file '{source}' is not valid YAML: {exc}") from exc
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"configuration file '{source}' must hold a mapping of properties")
    for section in _SECTION_KEYS:
        if set(doc) == {section} and isinstance(doc[section], dict):
            doc = doc[section]
    if isinstance(doc.get("config"), dict) and set(doc) <= {"name", "config"}:
        doc = {"name": doc["name"], **doc["config"]} if "name" in doc else dict(doc["config"])
    flat: dict[str, str] = {}
    _flatten(doc, "", flat, source)
    return flat


def _flatten(node: Mapping[Any, Any], prefix: str, out: dict[str, str], source: str) -> None:
    for raw_key, value in node.items():
        name = f"{prefix}{raw_key}"
        if isinstance(value, Mapping):
            _flatten(value, f"{name}.", out, source)
            continue
        if name in out:
            raise ConfigError(f"property '{name}' is given twice in '{source}'", name)
        out[name] = _java_string(value)


def _java_string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_java_string(v) for v in value)
    return str(value)


# --------------------------------------------------------------------------- environment


def env_name(prop: str) -> str:
    """The variable that overrides ``prop``: ``slot.name`` -> ``LAKECDC_CONFIG_SLOT_NAME``."""
    return ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", prop).upper()


def apply_env_overrides(
    props: Mapping[str, str], environ: Mapping[str, str], known_names: Iterable[str] = ()
) -> dict[str, str]:
    """Return ``props`` with every ``LAKECDC_CONFIG_*`` variable of ``environ`` applied on top."""
    result = dict(props)
    candidates = {env_name(name): name for name in known_names}
    candidates.update({env_name(name): name for name in props})
    for var, value in environ.items():
        if not var.startswith(ENV_PREFIX) or var == ENV_PREFIX:
            continue
        name = candidates.get(var) or var[len(ENV_PREFIX) :].lower().replace("_", ".")
        result[name] = value
    return result
