"""The options several commands share. A request's flags (``anonymize``, ``explain``; the privacy
models' also ``verify``) are generated from :data:`sqlanon.request.schema.OPTIONS`, so the
parser's flags are the schema's."""

from __future__ import annotations

import argparse
from typing import Any

from ..algorithms import ALGORITHMS
from ..hierarchies import BUILDERS
from ..request.config import SCHEMA
from ..request.schema import FLAGGED, OPTIONS_BY_NAME, PRIVACY, Option
from .common import ENGINES


def add_option(p: argparse.ArgumentParser | Any, option: Option, **overrides: Any) -> None:
    """``option``'s flag, as the schema describes it (``overrides`` for a command's own wording)."""
    p.add_argument(option.flag, **{**option.argparse_kwargs(), **overrides})


def request_options(p: argparse.ArgumentParser) -> None:
    """``--config`` and every flag of :data:`~sqlanon.request.schema.OPTIONS`."""
    p.add_argument("--config", metavar="RELEASE.toml",
                   help="read the request from a TOML release file (see sqlanon.config); flags override it")
    for option in FLAGGED:
        add_option(p, option)


def privacy_options(p: argparse.ArgumentParser) -> None:
    """The privacy models besides k (:data:`~sqlanon.request.schema.PRIVACY`), for verify."""
    for option in PRIVACY:
        add_option(p, option)


def verify_options(p: argparse.ArgumentParser) -> None:
    """verify's requirement: ``--qid``, ``--k`` (both required), ``--class-column`` and the
    privacy models."""
    add_option(p, OPTIONS_BY_NAME["qid"], required=True, default=None)
    add_option(p, OPTIONS_BY_NAME["k"], required=True, help="the required smallest class size")
    add_option(p, OPTIONS_BY_NAME["class_column"], metavar="COL",
               help="a column every row must have; NULLs fail the check (default: a release's own class column, "
                    "from its manifest, whose NULLs are its suppressed rows)")
    privacy_options(p)


def engine_options(p: argparse.ArgumentParser) -> None:
    """--engine and the Spark session's settings, shared by the commands that open DB."""
    group = p.add_argument_group("engine options")
    group.add_argument("--engine", choices=ENGINES,
                       help="the engine of DB (default: postgres for a postgresql:// URL, else duckdb). With spark, "
                            "DB is the Spark database to work in (it must exist); the session is SparkSession.builder"
                            "...getOrCreate(), stopped at the end")
    group.add_argument("--spark-master", metavar="URL",
                       help="with --engine spark: the master, e.g. local[4], spark://host:7077, yarn (default: "
                            "spark.master from spark-defaults.conf or spark-submit, else local[*])")
    group.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                       help="with --engine spark: a session setting, e.g. spark.sql.warehouse.dir=/data/warehouse "
                            "(repeatable). A cluster's own settings come from spark-defaults.conf and spark-submit "
                            "as usual")


def release_file_help() -> str:
    """The release-file schema, section by section (:data:`sqlanon.request.config.SCHEMA`)."""
    lines = ["release file (--config RELEASE.toml; flags override its values; see sqlanon.config):"]
    lines += [f"  {section:<12}{', '.join(keys)}" for section, keys in SCHEMA]
    lines += [f"{'':<14}{name}: {', '.join(kind.keys())}" for name, kind in ALGORITHMS.items()]
    lines.append("  e.g. [privacy] k = 10, sensitive = [\"diagnosis\"], l = 3, diversity = \"recursive\", c = 2,")
    lines.append("       variance = { cost = 1e6 }; [workload] target = [\"hiv\"], criterion = \"infogain\"")
    lines.append("  [[qi]] hierarchy: an ARX CSV file, or a builder, e.g. { builder = \"intervals\", width = 10 }:")
    lines += [f"{'':<14}{name}: {', '.join(arguments)}" for name, arguments in BUILDERS.items()]
    return "\n".join(lines)
