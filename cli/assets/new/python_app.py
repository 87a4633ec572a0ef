"""{{tool}}: a toolhost tool written in Python. Build it with `toolhost build`."""

from toolhost_sdk import export, tool


@tool(read_only=True, concurrency_safe=True)
def {{tool}}(name: str, times: int = 1) -> str:
    """Greets someone by name.

    Args:
        name: Who to greet.
        times: How many times to say it.
    """
    return "\n".join([f"Hello, {name}!"] * times)


Tool = export({{tool}})
