"""The intercode_sql environment owns its settings (``ADAPT_SQL_*``, same names as before they
left the core ``Settings``); the environment reads them where the constructor gave nothing."""

from __future__ import annotations

import pytest

from adapt.cli.docs_config import environment_settings
from adapt.envs import registry
from adapt.envs.intercode_sql import InterCodeSQL
from adapt.envs.intercode_sql.settings import SQLSettings
from adapt.settings import Settings


def test_the_environment_declares_its_settings_and_the_core_holds_none() -> None:
    assert registry.get("intercode_sql").settings_model is SQLSettings
    assert not [name for name in Settings.model_fields if name.startswith("sql_")]
    assert ("intercode_sql", SQLSettings) in environment_settings()


def test_the_variables_keep_their_names(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in [("HOST", "db.internal"), ("PORT", "3307"), ("ADMIN_USER", "admin"),
                        ("ADMIN_PASSWORD", "pw"), ("AGENT_USER", "agent"),
                        ("AGENT_PASSWORD", "apw"), ("STATEMENT_TIMEOUT_SECONDS", "2.5")]:
        monkeypatch.setenv(f"ADAPT_SQL_{name}", value)
    s = SQLSettings()
    assert (s.host, s.port, s.admin_user, s.admin_password, s.agent_user, s.agent_password,
            s.statement_timeout_seconds) == ("db.internal", 3307, "admin", "pw", "agent", "apw",
                                             2.5)
    env = InterCodeSQL(port=3399)  # the constructor wins over the settings
    assert env._resolve() == ("db.internal", 3399, "agent", "apw", 2.5)
    monkeypatch.setenv("ADAPT_SQL_PORT", "0")
    with pytest.raises(ValueError, match="port"):
        SQLSettings()
