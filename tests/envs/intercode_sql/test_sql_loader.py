"""Loading the dump: idempotent, read-only agent user, clear errors, the pymysql fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapt.envs.intercode_sql import load_sql
from adapt.envs.intercode_sql.loader import (
    _client_binary,
    _has_sandbox_mode,
    _load_with_client,
    _statements,
    connect,
    dump_schema,
    without_account_statements,
)
from adapt.errors import UserError
from tests.support.sqldb import ADMIN_PASSWORD, ADMIN_USER, HOST, PORT, Server

TINY_DB = "adapt_test_tiny_sql"
SYSTEM_DB = "adapt_test_system_sql"
TINY_DUMP = f"""-- TEST USER
CREATE USER 'admin'@'%' IDENTIFIED BY 'admin';
GRANT ALL PRIVILEGES ON *.* TO 'admin'@'%';
FLUSH PRIVILEGES;

CREATE DATABASE  IF NOT EXISTS `{TINY_DB}` /*!40100 DEFAULT CHARACTER SET utf8mb4 */;
USE `{TINY_DB}`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
DROP TABLE IF EXISTS `t`;
CREATE TABLE `t` (
  `id` int NOT NULL,
  `note` text,
  PRIMARY KEY (`id`)
);
INSERT INTO `t` VALUES (1,'semi; colon'),(2,'it''s -- not a comment'),(3,'back\\\\slash \\' quote');
"""

KW = {
    "host": HOST,
    "port": PORT,
    "admin_user": ADMIN_USER,
    "admin_password": ADMIN_PASSWORD,
    "agent_user": "adapt_test_tiny_agent",
    "agent_password": "tiny-pw",
}


def test_dump_parsing() -> None:
    assert dump_schema(TINY_DUMP) == {TINY_DB: ("t",)}
    body = without_account_statements(TINY_DUMP)
    assert "CREATE USER" not in body and "GRANT" not in body and "FLUSH" not in body
    statements = list(_statements(body))
    assert statements[0].startswith("CREATE DATABASE") and "/*!40100" in statements[0]
    assert statements[-1].endswith("quote')")
    assert len(statements) == 6


def test_real_dump_schema(data_dir: Path) -> None:
    schema = dump_schema((data_dir / "ic_spider_dbs.sql").read_text(encoding="utf-8"))
    assert len(schema) == 20 and "poker_player" in schema
    assert sum(map(len, schema.values())) == 81


@pytest.mark.parametrize("use_client", [True, False], ids=["mariadb-client", "pymysql"])
def test_load_tiny_dump_twice(server: Server, tmp_path: Path, use_client: bool) -> None:
    dump = tmp_path / "tiny.sql"
    dump.write_text(TINY_DUMP)
    try:
        first = load_sql(dump, **KW, use_client=use_client)
        again = load_sql(dump, **KW, use_client=use_client)  # idempotent
        assert first.databases == again.databases == (TINY_DB,)
        assert ("pymysql" in first.method) is not use_client
        skipped = load_sql(dump, **KW, reload=False)
        assert skipped.skipped and skipped.load_seconds == 0.0
        agent = connect(
            host=HOST,
            port=PORT,
            user=KW["agent_user"],
            password=KW["agent_password"],
            database=TINY_DB,
            role="agent",
        )
        try:
            with agent.cursor() as cur:
                cur.execute("SELECT note FROM t ORDER BY id")
                assert [r[0] for r in cur.fetchall()] == [
                    "semi; colon",
                    "it's -- not a comment",
                    "back\\slash ' quote",
                ]
                cur.execute("SHOW GRANTS")
                grants = " ".join(r[0] for r in cur.fetchall())
            assert "GRANT SELECT, SHOW VIEW ON" in grants and "INSERT" not in grants
            assert "poker_player" not in grants  # only the databases of this dump
        finally:
            agent.close()
    finally:
        admin = connect(host=HOST, port=PORT, user=ADMIN_USER, password=ADMIN_PASSWORD)
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{TINY_DB}`")
            for host in ("%", "localhost"):
                cur.execute(f"DROP USER IF EXISTS '{KW['agent_user']}'@'{host}'")
        admin.close()


def test_the_client_runs_with_an_environment_built_from_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADAPT_METRICS_TOKEN", "sentinel-sql-client")
    seen = tmp_path / "environ"
    client = tmp_path / "mariadb"
    client.write_text(f'#!/bin/sh\n[ "$1" = --help ] && exit 0\nenv > {seen}\ncat > /dev/null\n')
    client.chmod(0o755)
    _load_with_client(str(client), "SELECT 1;", host=HOST, port=PORT, user="u", password="pw")
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines())
    assert env["MYSQL_PWD"] == "pw"
    assert "sentinel-sql-client" not in seen.read_text()
    assert not any(name.startswith("ADAPT_") for name in env)


def test_client_commands_in_a_dump_do_not_run(tmp_path: Path) -> None:
    """``system ...`` in a dump would run a shell command on this host; the client's sandbox
    mode refuses it, and the load fails saying so."""
    binary = _client_binary()
    if binary is None or not _has_sandbox_mode(binary):
        pytest.skip("no MariaDB client with --sandbox (MariaDB 10.5.25+)")
    try:
        connect(host=HOST, port=PORT, user=ADMIN_USER, password=ADMIN_PASSWORD).close()
    except UserError as exc:
        pytest.skip(f"no MariaDB server: {exc}")
    marker = tmp_path / "ran"
    dump = tmp_path / "system.sql"
    dump.write_text(f"CREATE DATABASE IF NOT EXISTS `{SYSTEM_DB}`;\nUSE `{SYSTEM_DB}`;\n"
                    "CREATE TABLE IF NOT EXISTS `t` (`id` int);\n"
                    f"system touch {marker}\n")
    try:
        with pytest.raises(UserError, match="sandbox mode"):
            load_sql(dump, **KW, use_client=True)
        assert not marker.exists()
    finally:
        admin = connect(host=HOST, port=PORT, user=ADMIN_USER, password=ADMIN_PASSWORD)
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{SYSTEM_DB}`")
        admin.close()


def test_real_dump_loaded(server: Server) -> None:
    print(f"\nload: {server.method} in {server.load_seconds:.2f}s")
    assert server.load_seconds < 120


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no SQL dump"):
        load_sql(tmp_path / "nope.sql", **KW)
    with pytest.raises(UserError, match="no SQL dump"):
        load_sql(tmp_path, **KW)


def test_unreachable_server(tmp_path: Path) -> None:
    pytest.importorskip("pymysql")
    dump = tmp_path / "tiny.sql"
    dump.write_text(TINY_DUMP)
    with pytest.raises(UserError, match=r"cannot reach the MariaDB server at 127\.0\.0\.1:1"):
        load_sql(dump, **{**KW, "port": 1})


def test_bad_credentials(server: Server, tmp_path: Path) -> None:
    dump = tmp_path / "tiny.sql"
    dump.write_text(TINY_DUMP)
    with pytest.raises(UserError, match="refused the admin user 'nobody_here'"):
        load_sql(dump, **{**KW, "admin_user": "nobody_here", "admin_password": "wrong"})


def test_agent_must_differ_from_admin(tmp_path: Path) -> None:
    dump = tmp_path / "tiny.sql"
    dump.write_text(TINY_DUMP)
    with pytest.raises(UserError, match="differ"):
        load_sql(dump, **{**KW, "agent_user": ADMIN_USER})
