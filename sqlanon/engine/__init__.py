"""The engine boundary: the only code that talks to a database driver.

An :class:`~sqlanon.engine.base.Engine` renders sqlglot expressions in its dialect, executes
them, fetches results as numpy arrays, owns temp objects, transactions, the catalog, row hashing
and the other things engines spell differently. Everything outside this package builds
expressions and calls engine methods; nothing else imports ``duckdb`` or ``psycopg``.
"""
