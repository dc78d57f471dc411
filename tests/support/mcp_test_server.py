"""A tiny MCP server written with the official ``mcp`` package, for tests: run as a script
(``python mcp_test_server.py stdio DIR`` or ``... http PORT DIR``), so it speaks stdio or
streamable HTTP on 127.0.0.1. Neither reference server (the npm filesystem server,
mcp-server-git) speaks streamable HTTP, hence this one.

Tools: ``echo`` (read-only), ``note`` (appends a line to DIR/notes.txt: neither read-only nor
idempotent), ``environ`` (read-only: this process's environment as /proc/self/environ holds
it), ``big`` (read-only: N characters) and ``nap`` (read-only: sleeps).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)
APPENDS = ToolAnnotations(read_only_hint=False, idempotent_hint=False, destructive_hint=False)


def build(folder: Path) -> MCPServer:
    server = MCPServer("adapt-test-server")

    @server.tool(annotations=READ_ONLY)
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    @server.tool(annotations=APPENDS)
    def note(text: str) -> str:
        """Append one line to notes.txt."""
        with open(folder / "notes.txt", "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
        return f"noted: {text}"

    @server.tool(annotations=READ_ONLY)
    def environ() -> str:
        """This server's environment variables, as the system holds them."""
        return Path("/proc/self/environ").read_bytes().replace(b"\0", b"\n").decode()

    @server.tool(annotations=READ_ONLY)
    def big(n: int) -> str:
        """N characters."""
        return "x" * n

    @server.tool(annotations=READ_ONLY)
    def nap(seconds: float) -> str:
        """Sleep."""
        time.sleep(seconds)
        return "awake"

    return server


def main(argv: list[str]) -> None:
    if argv[1] == "stdio":
        build(Path(argv[2])).run("stdio")
    else:
        build(Path(argv[3])).run("streamable-http", host="127.0.0.1", port=int(argv[2]))


if __name__ == "__main__":
    main(sys.argv)
