"""Render environment prompt templates (``string.Template`` texts from package data)."""

from __future__ import annotations

from string import Template

from adapt.envs.base import Environment, prompt_variables
from adapt.errors import UserError


def render(env: Environment, kind: str, *, task: str, context: str | None, **extra: str) -> str:
    """The environment's ``kind`` template with ``$task``, ``$context``, the ``extra`` variables
    and the environment's own (``prompt_variables``)."""
    try:
        template = env.prompt_template(kind)
    except KeyError:
        raise UserError(
            f"environment {env.name!r} has no {kind!r} prompt template; add prompts/{kind}.txt "
            "to its package or override prompt_template()"
        ) from None
    values = {**prompt_variables(env), **extra, "task": task, "context": context or ""}
    return Template(template).safe_substitute(values)


def trajectory_line(action: str, observation: str) -> str:
    return f"> {action}\n{observation}\n"


def require_template(env: Environment, kind: str, strategy: str) -> None:
    """Raise a clear ``UserError`` before anything runs if ``env`` lacks a template."""
    try:
        env.prompt_template(kind)
    except KeyError:
        raise UserError(
            f"strategy {strategy!r} needs a {kind!r} prompt template, which environment "
            f"{env.name!r} does not have; add prompts/{kind}.txt to its package or "
            "override prompt_template()"
        ) from None
