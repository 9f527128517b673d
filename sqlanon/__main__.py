"""``python -m sqlanon``: the ``sqlanon`` command."""

from sqlanon.cli import main

raise SystemExit(main())
