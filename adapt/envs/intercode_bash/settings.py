"""The intercode_bash environment's own settings (``ADAPT_BASH_*``): where the data and the
prepared file systems are, and the limits of one command (time, processes, memory)."""

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
    command_max_processes: int = Field(
        default=128, ge=8, le=1_000_000, description="Most processes one InterCode-Bash "
        "command may have at once (a pids cgroup per command, where the host offers a writable "
        "pids controller): a fork bomb fails to fork instead of filling the host.",
    )
    command_memory_mb: int = Field(
        default=1024, ge=64, le=1_048_576, description="Most memory (address space, MiB) one "
        "process of an InterCode-Bash command may map (RLIMIT_AS); a bigger allocation fails "
        "inside the sandbox.",
    )
