"""The intercode_bash environment's own settings (``ADAPT_BASH_*``): where the data and the
prepared file systems are, and how long one command may run."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class BashSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ADAPT_BASH_", env_file=".env", extra="ignore")

    data_dir: Path | None = Field(
        default=None, description="The InterCode-Bash data directory (setup scripts and task "
        "files); the sandbox file systems are prepared from it when missing.",
    )
    cache_dir: Path | None = Field(
        default=None, description="Where the prepared InterCode-Bash file systems live "
        "(unset: ~/.cache/adapt/intercode-bash).",
    )
    command_timeout_seconds: float = Field(
        default=10.0, gt=0, le=600, description="Longest one InterCode-Bash command may run "
        "before its sandbox is killed.",
    )
