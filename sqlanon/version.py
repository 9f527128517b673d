"""This sqlanon's version: the package's ``__version__``, the command line's ``--version``, and
what the Spark executors' check compares (:mod:`sqlanon.engine.spark_env`)."""

__version__ = "0.1.0"
