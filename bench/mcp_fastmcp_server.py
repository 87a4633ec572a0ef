"""The peer of bench/mcp_serve_vs_fastmcp.py: the Python SDK's FastMCP
server (`MCPServer` in mcp 2.x) serving the same trivial tool as the
`greet` example component, over stdio or streamable HTTP.

    python mcp_fastmcp_server.py stdio
    python mcp_fastmcp_server.py http PORT
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("fastmcp-peer")


@server.tool(name="Greet", description="Greets someone by name.")
def greet(name: str, times: int = 1, shout: bool = False) -> str:
    if not name.strip():
        raise ValueError("the name is empty")
    line = f"Hello, {name}!"
    if shout:
        line = line.upper()
    return "\n".join([line] * max(times, 1))


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
