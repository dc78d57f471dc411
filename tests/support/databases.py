"""Throw-away migrated databases for tests: SQLite files and real PostgreSQL databases.

PostgreSQL comes from ``ADAPT_TEST_POSTGRES_URL`` (default: the local server with trust auth,
``postgresql://postgres@127.0.0.1:5432/postgres``); each database gets a unique name and is
dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg2
from psycopg2 import sql

from adapt.store.migrate import upgrade

ADMIN_URL = os.environ.get("ADAPT_TEST_POSTGRES_URL",
                           "postgresql://postgres@127.0.0.1:5432/postgres")


def _admin() -> psycopg2.extensions.connection:
    conn = psycopg2.connect(ADMIN_URL)
    conn.autocommit = True
    return conn


@contextmanager
def postgres_database(migrate: bool = True) -> Iterator[str]:
    name = f"adapt_test_{uuid.uuid4().hex[:12]}"
    conn = _admin()
    try:
        with conn.cursor() as cur:
            cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    finally:
        conn.close()
    base = ADMIN_URL.rsplit("/", 1)[0]
    url = f"{base}/{name}"
    try:
        if migrate:
            upgrade(url)
        yield url
    finally:
        conn = _admin()
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    (name,),
                )
                cur.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        finally:
            conn.close()


@contextmanager
def sqlite_database(directory: Path, migrate: bool = True) -> Iterator[str]:
    url = f"sqlite:///{directory / f'adapt-{uuid.uuid4().hex[:8]}.db'}"
    if migrate:
        upgrade(url)
    yield url
