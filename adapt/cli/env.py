"""``adapt env``: environments over HTTP (``adapt env serve NAME``, ``adapt env openapi``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated

import typer

from adapt.cli.support import err, fail, setup_logging
from adapt.errors import UserError

app = typer.Typer(help="Environments over HTTP: serve one to remote workers (adapt's "
                  "environment protocol).", no_args_is_help=True)


@app.command("serve")
def env_serve(
    name: Annotated[str, typer.Argument(help="An installed environment (built-in or plug-in), "
                                        "e.g. textcraft.")],
    host: Annotated[str, typer.Option(help="Bind address (a non-loopback one needs "
                                      "ADAPT_ENV_SERVE_TOKEN).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8100,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Serve the installed environment NAME over adapt's environment protocol (HTTP, /v1),
    for workers that register it in ADAPT_REMOTE_ENVIRONMENTS (docs/remote-environments.md).
    Sessions idle for ADAPT_ENV_SERVE_IDLE_SECONDS are closed; with ADAPT_ENV_SERVE_TOKEN
    set, clients must send it as a bearer token."""
    from adapt.envs import registry
    from adapt.envserve import serve
    from adapt.llm.guard import is_loopback_host
    from adapt.settings import get_settings

    setup_logging(verbose, quiet=logging.INFO)  # a server logs its sessions and start-up
    settings = get_settings()
    token = settings.env_serve_token.get_secret_value() if settings.env_serve_token else None
    if not is_loopback_host(host) and not token:
        fail(f"{host} is not a loopback address: set ADAPT_ENV_SERVE_TOKEN so that only "
             "clients with the token can use the environment")
    try:
        registry.get(name)
    except UserError as exc:
        fail(str(exc))
    shown = f"[{host}]" if ":" in host else host
    err.print(f"serving environment {name} on http://{shown}:{port} (adapt's environment "
              f"protocol v1{', bearer token required' if token else ''}); register it with "
              f'ADAPT_REMOTE_ENVIRONMENTS=\'{{"{name}": {{"url": "http://{shown}:{port}"}}}}\'')
    serve(name, host=host, port=port, token=token,
          idle_seconds=settings.env_serve_idle_seconds,
          max_sessions=settings.env_serve_max_sessions,
          log_level="info" if verbose else "warning")


@app.command("openapi")
def env_openapi(
    output: Annotated[Path | None, typer.Option(
        help="Write the document to this file (default: print it).")] = None,
    check: Annotated[bool, typer.Option(
        "--check", help="Exit 1 when --output differs from the protocol's document.")] = False,
) -> None:
    """The OpenAPI document of adapt's environment protocol
    (docs/remote-environments.openapi.json)."""
    from adapt.envserve import openapi_document

    text = json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n"
    if output is None:
        typer.echo(text, nl=False)
        return
    if check:
        if not output.is_file() or output.read_text(encoding="utf-8") != text:
            fail(f"{output} is stale: run `adapt env openapi --output {output}`", code=1)
        return
    output.write_text(text, encoding="utf-8")
    err.print(f"wrote {output}")
