"""The command line in process: :func:`run` calls ``sqlanon.cli.main(argv)`` and returns its exit
code and what it printed; :func:`assert_one_line_error` checks that an error is one line naming
its fragments, without a traceback."""

from __future__ import annotations

from sqlanon.cli import main


def run(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, *fragments: str) -> None:
    assert err.startswith("sqlanon: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err
