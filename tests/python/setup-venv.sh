#!/usr/bin/env bash
# Creates a Python virtualenv with PyPI's pymesos 0.3.15, the Mesos framework library the
# scheduler-API tests drive `allocator-master serve` with, and avmesos-cli 1.0.0, a Mesos CLI
# (written by others) that the tests point at the master's `/slaves` and `/master/frameworks`,
# and selenium 4.40.0, which drives headless Chromium through Debian's chromium-driver to test
# the web page.
#
#   bash tests/python/setup-venv.sh [VENV_DIR]     (default: target/pyenv)
#
# pymesos depends on http-parser 0.9.0, whose C extension does not build on Python >= 3.11.
# Its pure-Python parser works, so http-parser is installed from its sdist with the extension
# switched off: setup.py's last line `run_setup(not IS_PYPY)` becomes `run_setup(False)`.
# Prints the venv's python (an absolute path) on stdout as its last line. Idempotent: a venv whose python already
# imports pymesos is kept as it is.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv="${1:-target/pyenv}"
python="${PYTHON:-python3}"
py="$venv/bin/python"

if [ -x "$py" ] && "$py" -c 'import pymesos, avmesos.cli, requests, toml, selenium' 2>/dev/null; then
    echo "pymesos venv ready at $venv" >&2
    echo "$(cd "$venv" && pwd)/bin/python"
    exit 0
fi

command -v "$python" >/dev/null || { echo "setup-venv: no $python on PATH" >&2; exit 1; }
rm -rf "$venv"
"$python" -m venv "$venv"
"$py" -m pip install --quiet --disable-pip-version-check --upgrade pip setuptools wheel >&2

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$py" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    --dest "$work" http-parser==0.9.0 >&2
tar -xzf "$work"/http-parser-0.9.0.tar.gz -C "$work"
setup="$work/http-parser-0.9.0/setup.py"
grep -Eq '^[[:space:]]*run_setup\(not IS_PYPY\)[[:space:]]*$' "$setup" || {
    echo "setup-venv: http-parser's setup.py does not end in run_setup(not IS_PYPY)" >&2
    exit 1
}
sed -i -E 's/^([[:space:]]*)run_setup\(not IS_PYPY\)/\1run_setup(False)/' "$setup"
"$py" -m pip install --quiet --disable-pip-version-check --no-build-isolation "$work/http-parser-0.9.0" >&2
"$py" -m pip install --quiet --disable-pip-version-check pymesos==0.3.15 >&2
"$py" -m pip install --quiet --disable-pip-version-check avmesos-cli==1.0.0 requests toml >&2
"$py" -m pip install --quiet --disable-pip-version-check selenium==4.40.0 >&2
# The compiled parser must be absent: pymesos then uses the pure-Python one.
"$py" -c "import http_parser.parser" 2>/dev/null && { echo "setup-venv: http-parser built its C extension after all" >&2; exit 1; }
"$py" -c 'import pymesos, http_parser.http, http_parser.pyparser; print("pymesos ready (pure-Python http-parser)")' >&2
echo "$(cd "$venv" && pwd)/bin/python"
