#!/bin/bash
# Creates .venv with the pinned Python dev tools (scripts/requirements-dev.txt) from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q -r scripts/requirements-dev.txt
echo "ready: .venv/bin/python"
