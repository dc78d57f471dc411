"""``adapt keys``: API keys (create, list, revoke)."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from adapt.cli.support import err, fail, with_session
from adapt.errors import UserError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

app = typer.Typer(help="API keys (stored hashed; a tenant sees only its own tasks).",
                  no_args_is_help=True)


@app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option(help="Tenant the key belongs to.")],
    name: Annotated[str | None, typer.Option(help="A label for the key.")] = None,
) -> None:
    """Create an API key; it is printed once. Once any key exists, the API requires one."""
    from adapt.service.auth import create_key

    if not tenant.strip():
        fail("--tenant must not be empty")
    try:
        key = asyncio.run(with_session(lambda s: create_key(s, tenant, name)))
    except UserError as exc:
        fail(str(exc))
    except Exception as exc:
        fail(f"could not create the key (is the database migrated? `adapt db upgrade`): {exc}")
    err.print(f"created an API key for tenant [bold]{escape(tenant)}[/]; it is shown only once:")
    sys.stdout.write(f"{key}\n")


LAST_KEY_WARNING = (
    "it is the last active key: once it is revoked EVERY request gets 401 (authentication "
    "never switches itself off) until you create a key (`adapt keys create --tenant NAME`) or "
    "switch authentication off explicitly with ADAPT_AUTH_MODE=off (loopback only)"
)


@app.command("revoke")
def keys_revoke(
    prefix: Annotated[str, typer.Argument(help="The key's 8-character prefix.")],
    force: Annotated[bool, typer.Option(
        "--force", help="Revoke even the last active key (every request then gets 401).")]
    = False,
) -> None:
    """Revoke an API key by its prefix (the last active key only with --force)."""
    from adapt.service.auth import active_keys, revoke_key

    async def revoke(session: AsyncSession) -> tuple[bool, int]:
        left = await active_keys(session)
        if left <= 1 and not force:
            return False, left
        return await revoke_key(session, prefix), left

    try:
        found, left = asyncio.run(with_session(revoke))
    except Exception as exc:
        fail(f"could not revoke the key: {exc}")
    if left <= 1 and not force:
        fail(f"refusing to revoke {prefix!r}: {LAST_KEY_WARNING}. Pass --force to revoke it "
             "anyway", code=1)
    if not found:
        fail(f"no active key with prefix {prefix!r}", code=1)
    err.print(f"revoked key {escape(prefix)}")
    if left <= 1:
        err.print(f"[yellow]warning:[/] {escape(LAST_KEY_WARNING)}")


@app.command("list")
def keys_list(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's keys.")] = None,
) -> None:
    """List API keys: prefix, tenant, name, created, last used, revoked (never the secret)."""
    from adapt.service.auth import list_keys

    try:
        keys = asyncio.run(with_session(lambda s: list_keys(s, tenant)))
    except Exception as exc:
        fail(f"could not list the keys (is the database migrated? `adapt db upgrade`): {exc}")

    def when(value: object) -> str:
        return value.isoformat(timespec="seconds") if hasattr(value, "isoformat") else "-"

    out = Console()
    out.print("prefix    tenant            name              created                    "
              "last used                  revoked", style="bold", highlight=False)
    for k in keys:
        state = f"revoked {when(k.revoked_at)}" if k.revoked_at else "active"
        out.print(f"{k.prefix:<9} {escape(k.tenant):<17} {escape(k.name or '-'):<17} "
                  f"{when(k.created_at):<26} {when(k.last_used_at):<26} {state}",
                  highlight=False, soft_wrap=True)
    if not keys:
        err.print("no keys: the API runs open until the first one is created")
