"""`redact-py`: replaces secrets in the text a tool returns, before anyone
sees it (the Python twin of examples/components/redact): AWS access key ids
(`AKIA` and 16 of `0-9A-Z`) and the value of `password=`, `passwd=`,
`secret=`, `token=` and `api_key=` (any case) up to the next whitespace,
`&`, `;`, `,` or quote become `[REDACTED]`; a value already masked is not
masked or counted again. Chunks are redacted one at a time; the response
metadata counts the redactions (`redact-py.count`).
"""

import re

from toolhost_sdk import Chunk, export_middleware, middleware, output

MASK = "[REDACTED]"
KEY_ID = re.compile(r"(?<![0-9A-Z])AKIA[0-9A-Z]{16}(?![0-9A-Z])")
VALUE = re.compile(r"(?i)(?<![0-9a-z])(password|passwd|secret|token|api_key)=([^\s&;,\"']+)")


def redact(text: str):
    """`text` with secrets replaced, and how many were. A value that is
    already the mask is left alone and not counted, so redacting twice
    changes nothing (as the Rust rules in guest-tools/lib/redaction)."""
    text, keys = KEY_ID.subn(MASK, text)
    values = 0

    def mask(m):
        nonlocal values
        if m.group(2) == MASK:
            return m.group(0)
        values += 1
        return m.group(1) + "=" + MASK

    text = VALUE.sub(mask, text)
    return text, keys + values


@middleware(name="redact-py", description="Redacts AWS access key ids and password=/secret=/token= values from text output.")
def redact_output(tool, input, next):
    inner = next(input)
    total = 0
    for chunk in inner:
        total += redact(chunk.text)[1]
        output.emit(chunk.map_text(lambda t: redact(t)[0]))
    output.emit(Chunk(metadata={"redact-py": {"count": total}}))
    inner.outcome()


Middleware = export_middleware(redact_output)
