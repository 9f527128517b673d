"""A PostgreSQL server for the test session.

:func:`provide` yields ``(url, reason)``:

* ``$SQLANON_POSTGRES_URL`` when it is set (CI's ``.ci/run`` sets it to a server it started);
* otherwise the URL of a throwaway server started here: ``initdb`` into a temporary directory,
  trust authentication, listening on 127.0.0.1 on a free port only, durability switched off
  (the data dies with the session anyway), stopped and deleted when the session ends;
* otherwise ``None`` and a reason that says how to get one -- unless ``$CI`` is set: in CI a
  missing server raises, so PostgreSQL tests fail there instead of being skipped.

PostgreSQL refuses to run as root, so when the tests run as root the server runs as an
unprivileged system user (:data:`SERVER_USER`, created with ``useradd`` when missing).

Only the standard library is used: this module must import without psycopg installed.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ENV_URL = "SQLANON_POSTGRES_URL"
SERVER_USER = "sqlanon_pg"
HOW_TO = (f"set {ENV_URL}=postgresql://USER@HOST:PORT/DBNAME, or install PostgreSQL's server "
          "(Debian: apt-get install postgresql) so that the tests start a throwaway one")

# Settings for a server whose data is thrown away: no fsync, no waiting for WAL flushes.
FAST_SETTINGS = ("-F", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")


class Unavailable(Exception):
    """No local server could be started; the message says why."""


def in_ci() -> bool:
    """``$CI`` is set to something other than empty / 0 / false (GitHub, GitLab, ... set CI=true)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _version_key(bindir: str) -> tuple[int, ...]:
    # /usr/lib/postgresql/15/bin -> (15,): the newest installed major version first.
    match = re.search(r"/(\d+(?:\.\d+)*)/bin$", bindir)
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


def find_bindir() -> Path | None:
    """A directory holding ``initdb`` and ``pg_ctl``: ``pg_config --bindir``, Debian's
    ``/usr/lib/postgresql/<version>/bin`` (newest first), then ``initdb`` on the PATH.
    (``pg_config`` alone proves nothing: Debian's libpq-dev ships it without the server.)"""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=30)
            if out.returncode == 0 and out.stdout.strip():
                candidates.append(Path(out.stdout.strip()))
        except (OSError, subprocess.SubprocessError):
            pass
    root = Path("/usr/lib/postgresql")
    if root.is_dir():
        found = [str(p) for p in root.glob("*/bin")]
        candidates += [Path(p) for p in sorted(found, key=_version_key, reverse=True)]
    initdb = shutil.which("initdb")
    if initdb:
        candidates += [Path(initdb).parent, Path(initdb).resolve().parent]
    for directory in candidates:
        if all(os.access(directory / tool, os.X_OK) for tool in ("initdb", "pg_ctl")):
            return directory
    return None


def _server_user() -> pwd.struct_passwd:
    """The unprivileged account the server runs as when we are root (created if missing)."""
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    result = subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                             SERVER_USER], capture_output=True, text=True)
    try:  # a concurrent session may have created it between our look-up and useradd
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise Unavailable(f"running as root, and could not create the unprivileged user {SERVER_USER!r} "
                          f"that PostgreSQL must run as: {result.stderr.strip()}") from None


def _free_port() -> int:
    # The port is free now; another process may take it before the server binds it, hence the
    # retries in LocalServer.start.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """A throwaway PostgreSQL cluster in a temporary directory; :meth:`start`, then :meth:`stop`."""

    def __init__(self, bindir: Path, base: Path, user: str | None):
        self.bindir, self.base, self.user = bindir, base, user
        self.data = base / "data"
        self.log = base / "server.log"
        self.port: int | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.user is not None:
            runuser = shutil.which("runuser") or "/usr/sbin/runuser"
            if os.access(runuser, os.X_OK):
                cmd = [runuser, "-u", self.user, "--", *cmd]
            else:  # su needs a shell: the system user's is nologin
                cmd = ["su", "-s", "/bin/sh", self.user, "-c", shlex.join(cmd)]
        # cwd: the server user may not be allowed into ours (root's home, say).
        return subprocess.run(cmd, cwd=self.base, capture_output=True, text=True, timeout=timeout)

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    @classmethod
    def start(cls) -> "LocalServer":
        """Initialize and start a cluster; raise :class:`Unavailable` (leaving nothing behind)."""
        bindir = find_bindir()
        if bindir is None:
            raise Unavailable("no PostgreSQL server binaries (initdb, pg_ctl) found")
        user = None
        if os.geteuid() == 0:
            account = _server_user()
            user = account.pw_name
            # /tmp, not $TMPDIR: the server user must be able to reach the directory.
            base = Path(tempfile.mkdtemp(prefix="sqlanon-pg-", dir="/tmp"))
            os.chown(base, account.pw_uid, account.pw_gid)
        else:
            base = Path(tempfile.mkdtemp(prefix="sqlanon-pg-"))
        server = cls(bindir, base, user)
        try:
            server._initdb()
            server._start()
        except BaseException:
            server.stop()
            raise
        return server

    def _initdb(self) -> None:
        common = ("initdb", "-D", str(self.data), "--auth=trust", "-U", "postgres", "--encoding=UTF8")
        try:
            result = self._run(*common, "--locale=C.UTF-8")
            if result.returncode != 0:  # C.UTF-8 missing (older systems): no locale at all
                shutil.rmtree(self.data, ignore_errors=True)
                result = self._run(*common, "--no-locale")
        except (OSError, subprocess.SubprocessError) as exc:
            raise Unavailable(f"initdb failed: {exc}") from exc
        if result.returncode != 0:
            raise Unavailable(f"initdb failed: {(result.stderr or result.stdout).strip()}")

    def _start(self) -> None:
        error = ""
        for _ in range(3):  # a port taken between _free_port and bind: try another one
            port = _free_port()
            options = shlex.join(["-k", str(self.base), "-h", "127.0.0.1", "-p", str(port), *FAST_SETTINGS])
            try:
                result = self._run("pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data),
                                   "-l", str(self.log), "-o", options)
            except (OSError, subprocess.SubprocessError) as exc:
                raise Unavailable(f"pg_ctl start failed: {exc}") from exc
            if result.returncode == 0:
                self.port = port
                return
            error = f"{(result.stderr or result.stdout).strip()}\n{self._log_tail()}"
            self._run("pg_ctl", "stop", "-m", "immediate", "-D", str(self.data))
        raise Unavailable(f"pg_ctl start failed: {error}")

    def stop(self) -> None:
        """Stop the server (immediate: nothing to flush) and delete its directory."""
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "stop", "-m", "immediate", "-w", "-D", str(self.data), timeout=60)
        except (OSError, subprocess.SubprocessError):
            pass
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


@contextmanager
def provide() -> Iterator[tuple[str | None, str]]:
    """Yield ``(url, reason)`` for the session (see the module docstring); ``url`` is ``None``
    (outside CI only) when there is no server, and ``reason`` then says how to provide one."""
    url = os.environ.get(ENV_URL, "").strip()
    if url:
        yield url, f"${ENV_URL}"
        return
    try:
        server = LocalServer.start()
    except Unavailable as exc:
        reason = f"PostgreSQL tests need a server: {exc}; {HOW_TO}"
        if in_ci():
            raise RuntimeError(f"{reason} (CI is set: a missing PostgreSQL fails, it is never skipped)") from exc
        yield None, reason
        return
    try:
        yield server.url, f"throwaway server in {server.base}"
    finally:
        server.stop()
