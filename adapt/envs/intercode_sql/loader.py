"""Load the InterCode-SQL databases into MariaDB and create the agent's read-only user.

``load_sql`` is what ``adapt data load-sql PATH`` runs. It

1. checks the dump file and the admin connection (``UserError`` with a fix for a missing file,
   an unreachable server or bad credentials);
2. loads the dump as-is through the ``mariadb`` (or ``mysql``) client binary when one is on
   ``PATH`` (with an environment built from nothing, and in its sandbox mode where it has one,
   so that a ``system`` line in the dump runs nothing on this host), else by executing its
   statements one by one with pymysql. The dump's own account statements (``CREATE USER
   'admin'...``, ``GRANT``, ``FLUSH PRIVILEGES``) are left out: they would fail on a second run
   and hand out an all-privileges account. Every table is ``DROP TABLE IF EXISTS`` + ``CREATE``
   + ``INSERT``, so reloading replaces the data;
3. creates (or updates the password of) the agent user for hosts ``%`` and ``localhost``,
   revokes everything it had and grants ``SELECT, SHOW VIEW`` on each loaded database only.

Running it again is safe. With ``reload=False`` the dump is only loaded when a database or table
it creates is missing (the user and grants are always refreshed).
"""

from __future__ import annotations

import functools
import importlib
import logging
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapt.envs.processes import minimal_environment
from adapt.errors import UserError

logger = logging.getLogger(__name__)

#: the dump inside the data directory
DUMP_FILE = "ic_spider_dbs.sql"
#: hosts the agent user is created for (``localhost`` beats an anonymous ``''@'localhost'``)
AGENT_HOSTS: tuple[str, ...] = ("%", "localhost")
#: what the agent may do on each loaded database
AGENT_PRIVILEGES = "SELECT, SHOW VIEW"
#: seconds the client binary may take for the whole dump
CLIENT_TIMEOUT_SECONDS = 1800.0

_CREATE_DB = re.compile(
    r"^\s*CREATE\s+DATABASE\s+(?:IF\s+NOT\s+EXISTS\s+)?`([^`]+)`", re.IGNORECASE | re.MULTILINE
)
_USE_OR_TABLE = re.compile(
    r"^\s*(?:USE\s+`(?P<db>[^`]+)`|CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?`(?P<table>[^`]+)`)",
    re.IGNORECASE | re.MULTILINE,
)
#: account statements of the dump that are skipped
_ACCOUNT_STATEMENT = re.compile(
    r"^\s*(?:CREATE\s+USER|DROP\s+USER|ALTER\s+USER|RENAME\s+USER|GRANT|REVOKE|SET\s+PASSWORD"
    r"|FLUSH\s+PRIVILEGES)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What ``load_sql`` did."""

    #: the dump that was read
    dump: Path
    #: the databases the dump creates (in dump order), all granted to the agent user
    databases: tuple[str, ...]
    #: tables per database, as the dump creates them
    tables: dict[str, tuple[str, ...]]
    #: ``mariadb client`` (``/usr/bin/mariadb``), ``pymysql`` or ``skipped`` (already loaded)
    method: str
    #: seconds spent loading the dump (0 when skipped)
    load_seconds: float
    #: seconds spent creating the agent user and its grants
    grant_seconds: float
    #: the agent user, e.g. ``adapt_agent``
    agent_user: str
    #: server settings that make some gold queries fail (e.g. case-sensitive table names)
    warnings: tuple[str, ...] = ()

    @property
    def total_seconds(self) -> float:
        return self.load_seconds + self.grant_seconds

    @property
    def skipped(self) -> bool:
        return self.method == "skipped"

    def summary(self) -> str:
        """One line for the CLI."""
        how = "already loaded" if self.skipped else f"loaded with {self.method}"
        return (
            f"{len(self.databases)} databases ({sum(map(len, self.tables.values()))} tables) "
            f"{how} in {self.load_seconds:.1f}s; read-only user {self.agent_user!r} granted "
            f"{AGENT_PRIVILEGES} in {self.grant_seconds:.1f}s"
        )


def dump_file(path: str | Path) -> Path:
    """The dump at ``path`` (the ``.sql`` file or the directory holding ``ic_spider_dbs.sql``)."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / DUMP_FILE
    if not p.is_file():
        raise UserError(
            f"intercode_sql: no SQL dump at {p}; give the InterCode-SQL data directory "
            f"(holding {DUMP_FILE}) or the .sql file itself"
        )
    return p


def dump_schema(text: str) -> dict[str, tuple[str, ...]]:
    """The databases a dump creates and the tables of each, in dump order."""
    databases: dict[str, list[str]] = {name: [] for name in _CREATE_DB.findall(text)}
    current: str | None = None
    for m in _USE_OR_TABLE.finditer(text):
        if m.group("db") is not None:
            current = m.group("db")
            databases.setdefault(current, [])
        elif current is not None and m.group("table") not in databases[current]:
            databases[current].append(m.group("table"))
    return {db: tuple(tables) for db, tables in databases.items()}


def quote_identifier(name: str) -> str:
    """``name`` as a backtick-quoted MariaDB identifier."""
    return "`" + name.replace("`", "``") + "`"


#: a pymysql connection (typed loosely: pymysql ships no type hints)
Connection = Any


def pymysql_module() -> Any:
    """The pymysql module, imported on first use (the environment registry imports this
    package without it)."""
    try:
        return importlib.import_module("pymysql")
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise UserError("intercode_sql needs the pymysql package: pip install pymysql") from exc


def connect(
    *,
    host: str,
    port: int,
    user: str,
    password: str,
    database: str | None = None,
    role: str = "admin",
    read_timeout: float | None = None,
) -> Connection:
    """A pymysql connection, or ``UserError`` saying why there is none (server down, bad
    credentials, unknown database)."""
    pymysql = pymysql_module()
    try:
        conn: Connection = pymysql.connect(
            host=host,
            port=port,
            user=user,
            password=password,
            database=database,
            charset="utf8mb4",
            connect_timeout=10,
            read_timeout=read_timeout,
            autocommit=True,
        )
    except pymysql.err.OperationalError as exc:
        code = exc.args[0] if exc.args else None
        message = exc.args[1] if len(exc.args) > 1 else str(exc)
        if code == 2003:
            raise UserError(
                f"intercode_sql: cannot reach the MariaDB server at {host}:{port} ({message}); "
                "is it running? (e.g. start-stop-daemon --start --oknodo --background "
                "--exec /usr/sbin/mariadbd), or set ADAPT_SQL_HOST / ADAPT_SQL_PORT"
            ) from exc
        if code in (1044, 1045, 1698):
            hint = (
                "set ADAPT_SQL_ADMIN_USER / ADAPT_SQL_ADMIN_PASSWORD"
                if role == "admin"
                else "run `adapt data load-sql PATH` to create the agent user, or set "
                "ADAPT_SQL_AGENT_USER / ADAPT_SQL_AGENT_PASSWORD"
            )
            raise UserError(
                f"intercode_sql: the MariaDB server at {host}:{port} refused the {role} user "
                f"{user!r} ({message}); {hint}"
            ) from exc
        if code == 1049:
            raise UserError(
                f"intercode_sql: unknown database {database!r} on {host}:{port}; "
                "run `adapt data load-sql PATH` to load the InterCode-SQL databases"
            ) from exc
        raise UserError(
            f"intercode_sql: cannot connect to MariaDB at {host}:{port} as {user!r}: {message}"
        ) from exc
    return conn


def _statements(text: str) -> Iterator[str]:
    """The statements of a dump, split at ``;`` outside quotes and comments.

    ``-- `` and ``#`` comment lines are dropped; ``/* */`` comments (including MySQL's
    executable ``/*!...*/``) are kept inside their statement, for the server to interpret.
    """
    buf: list[str] = []
    i, n = 0, len(text)
    quote: str | None = None
    while i < n:
        c = text[i]
        if quote is not None:
            buf.append(c)
            if c == "\\" and quote != "`" and i + 1 < n:
                buf.append(text[i + 1])
                i += 2
                continue
            if c == quote:
                if i + 1 < n and text[i + 1] == quote:  # doubled quote
                    buf.append(text[i + 1])
                    i += 2
                    continue
                quote = None
            i += 1
            continue
        if c in "'\"`":
            quote = c
            buf.append(c)
        elif c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            buf.append(text[i:end])
            i = end
            continue
        elif (
            (c == "-" and text.startswith("-- ", i))
            or (c == "-" and text.startswith("--\n", i))
            or c == "#"
        ):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c == ";":
            statement = "".join(buf).strip()
            buf = []
            if statement:
                yield statement
        else:
            buf.append(c)
        i += 1
    statement = "".join(buf).strip()
    if statement:
        yield statement


def without_account_statements(text: str) -> str:
    """The dump without its account statements (whole lines starting with ``CREATE USER``,
    ``GRANT``, ``FLUSH PRIVILEGES``...)."""
    return "".join(
        line for line in text.splitlines(keepends=True) if not _ACCOUNT_STATEMENT.match(line)
    )


def _client_binary() -> str | None:
    for name in ("mariadb", "mysql"):
        found = shutil.which(name)
        if found:
            return found
    return None


@functools.cache
def _has_sandbox_mode(binary: str) -> bool:
    """Whether the client takes ``--sandbox`` (MariaDB 10.5.25, 10.6.18, 10.11.8, 11.0.6 and
    later): it then refuses the client's own commands in the dump (``system``, ``\\!``,
    ``source``, ``tee``), which would otherwise run on this host."""
    try:
        done = subprocess.run([binary, "--help"], capture_output=True, timeout=30, check=False,
                              env=minimal_environment())
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--sandbox" in done.stdout


def _load_with_client(
    binary: str, text: str, *, host: str, port: int, user: str, password: str
) -> None:
    # built from nothing: the dump is data from elsewhere, and the worker's environment holds
    # secrets; the password is not on the command line, where ps would show it
    env = minimal_environment(extra={"MYSQL_PWD": password})
    args = [
        binary,
        f"--host={host}",
        f"--port={port}",
        f"--user={user}",
        "--batch",
        "--default-character-set=utf8mb4",
    ]
    if _has_sandbox_mode(binary):
        args.append("--sandbox")
    if host not in ("localhost", ""):
        args.append("--protocol=TCP")
    try:
        done = subprocess.run(
            args,
            input=text.encode("utf-8"),
            env=env,
            capture_output=True,
            timeout=CLIENT_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise UserError(
            f"intercode_sql: loading the dump with {binary} took over {CLIENT_TIMEOUT_SECONDS:g}s"
        ) from exc
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", "replace").strip()
        raise UserError(f"intercode_sql: {binary} failed to load the dump: {stderr[-2000:]}")


def _load_with_pymysql(conn: Connection, text: str) -> None:
    pymysql = pymysql_module()
    with conn.cursor() as cur:
        for statement in _statements(text):
            try:
                cur.execute(statement)
            except pymysql.err.MySQLError as exc:
                raise UserError(
                    f"intercode_sql: the dump statement {statement[:200]!r} failed: {exc}"
                ) from exc


def _missing(conn: Connection, schema: dict[str, tuple[str, ...]]) -> list[str]:
    """``db`` or ``db.table`` names of the dump that the server lacks."""
    with conn.cursor() as cur:
        cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES")
        present = {(str(s), str(t)) for s, t in cur.fetchall()}
    dbs = {s for s, _ in present}
    missing: list[str] = []
    for db, tables in schema.items():
        if db not in dbs:
            missing.append(db)
            continue
        missing.extend(f"{db}.{t}" for t in tables if (db, t) not in present)
    return missing


def _grant(
    conn: Connection,
    databases: tuple[str, ...],
    agent_user: str,
    agent_password: str,
) -> None:
    with conn.cursor() as cur:
        for host in AGENT_HOSTS:
            account = f"{conn.escape(agent_user)}@{conn.escape(host)}"
            password = conn.escape(agent_password)
            cur.execute(f"CREATE USER IF NOT EXISTS {account} IDENTIFIED BY {password}")
            cur.execute(f"ALTER USER {account} IDENTIFIED BY {password}")
            cur.execute(f"REVOKE ALL PRIVILEGES, GRANT OPTION FROM {account}")
            for db in databases:
                cur.execute(f"GRANT {AGENT_PRIVILEGES} ON {quote_identifier(db)}.* TO {account}")
        cur.execute("FLUSH PRIVILEGES")


def _server_warnings(conn: Connection) -> tuple[str, ...]:
    with conn.cursor() as cur:
        cur.execute("SELECT @@lower_case_table_names")
        row = cur.fetchone()
    if row is not None and int(row[0]) == 0:
        return (
            "the server compares table names case-sensitively (lower_case_table_names=0): gold "
            "queries that spell a table in another case than the dump (161 of the 1034 Spider "
            "dev tasks, e.g. 'Dogs' for `dogs`) fail and their tasks cannot be scored, as on "
            "InterCode's stock MySQL image; set lower_case_table_names=1 in the server "
            "configuration before loading to make them work",
        )
    return ()


def load_sql(
    path: str | Path,
    *,
    host: str,
    port: int,
    admin_user: str,
    admin_password: str,
    agent_user: str,
    agent_password: str,
    reload: bool = True,
    use_client: bool = True,
) -> LoadReport:
    """Load the InterCode-SQL dump at ``path`` into MariaDB and (re)create the read-only agent
    user; see the module docstring. ``reload=False`` skips loading when every database and
    table of the dump exists; ``use_client=False`` forces the pymysql path."""
    dump = dump_file(path)
    if not agent_user:
        raise UserError("intercode_sql: the agent user name must not be empty")
    if agent_user == admin_user:
        raise UserError(
            f"intercode_sql: the agent user must differ from the admin user {admin_user!r}: "
            "it gets read-only privileges"
        )
    try:
        text = dump.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"intercode_sql: cannot read the dump {dump}: {exc}") from exc
    schema = dump_schema(text)
    if not schema:
        raise UserError(f"intercode_sql: {dump} creates no database (no CREATE DATABASE)")
    conn = connect(host=host, port=port, user=admin_user, password=admin_password)
    try:
        started = time.perf_counter()
        method = "skipped"
        if reload or _missing(conn, schema):
            body = without_account_statements(text)
            binary = _client_binary() if use_client else None
            if binary is not None:
                method = f"mariadb client ({binary})"
                _load_with_client(
                    binary, body, host=host, port=port, user=admin_user, password=admin_password
                )
            else:
                method = "pymysql"
                _load_with_pymysql(conn, body)
            still = _missing(conn, schema)
            if still:
                raise UserError(
                    f"intercode_sql: after loading {dump}, the server still lacks "
                    f"{', '.join(still[:10])}"
                )
        load_seconds = time.perf_counter() - started if method != "skipped" else 0.0
        started = time.perf_counter()
        databases = tuple(schema)
        _grant(conn, databases, agent_user, agent_password)
        grant_seconds = time.perf_counter() - started
        warnings = _server_warnings(conn)
    finally:
        conn.close()
    report = LoadReport(
        dump=dump,
        databases=databases,
        tables=schema,
        method=method,
        load_seconds=load_seconds,
        grant_seconds=grant_seconds,
        agent_user=agent_user,
        warnings=warnings,
    )
    logger.info("intercode_sql: %s", report.summary())
    for warning in warnings:
        logger.warning("intercode_sql: %s", warning)
    return report
