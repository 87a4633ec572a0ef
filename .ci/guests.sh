#!/usr/bin/env bash
# Set-up for tests/tests/guest_languages.rs (tools in Python and JavaScript):
# python3 with venv and Node.js/npm are installed by .ci/run already; this
# installs the pinned guest toolchains into target/guest-toolchains/ (the
# test would do the same on first use) so that a failure to reach PyPI or
# npm shows up here, named. Idempotent: a no-op when they are installed.
set -euo pipefail
cd "$(dirname "$0")/.."
base=target/guest-toolchains
py="$base/componentize-py-0.25.1"
js="$base/componentize-js-0.23.0"
mkdir -p "$base"
if [ ! -x "$py/bin/componentize-py" ]; then
    python3 -m venv "$py" && "$py/bin/pip" install -q componentize-py==0.25.1 \
        || echo "warning: could not install componentize-py 0.25.1 from PyPI; guest_languages will fail under CI=true" >&2
fi
if [ ! -f "$js/node_modules/@bytecodealliance/componentize-js/src/componentize.js" ]; then
    npm install --prefix "$js" --no-audit --no-fund --silent @bytecodealliance/componentize-js@0.23.0 \
        || echo "warning: could not install componentize-js 0.23.0 from npm; guest_languages will fail under CI=true" >&2
fi
"$py/bin/componentize-py" --version || true
