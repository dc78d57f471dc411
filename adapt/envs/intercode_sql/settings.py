"""The intercode_sql environment's own settings (``ADAPT_SQL_*``): the MariaDB server that holds
the InterCode-SQL databases, the read-only user the agent's queries run as, the admin user
`adapt data load-sql` loads them with, and how long one statement may run."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class SQLSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ADAPT_SQL_", env_file=".env", extra="ignore")

    host: str = Field(default="127.0.0.1",
                      description="MariaDB server of the intercode_sql environment.")
    port: int = Field(default=3306, ge=1, le=65535, description="MariaDB port.")
    admin_user: str = Field(
        default="root", description="MariaDB user that `adapt data load-sql` loads the "
        "InterCode-SQL databases and creates the agent user with.",
    )
    admin_password: str = Field(default="", description="Password of the admin user.")
    agent_user: str = Field(
        default="adapt_agent", min_length=1, description="Read-only MariaDB user the "
        "intercode_sql environment runs the agent's queries as (SELECT, SHOW VIEW on the "
        "loaded databases only; created by `adapt data load-sql`).",
    )
    agent_password: str = Field(
        default="adapt_agent", description="Password of the agent user (set by `adapt data "
        "load-sql`; change it where the server is shared).",
    )
    statement_timeout_seconds: float = Field(
        default=5.0, gt=0, description="Longest an agent's SQL statement may run before the "
        "server stops it (MariaDB max_statement_time).",
    )
