#!/usr/bin/env bash
# Runs a command and prints its stdout+stderr on one line (newlines as spaces), so that an
# expect.sh regex can span lines; exits with the command's exit code.
# Usage: flat.sh COMMAND...
set -u
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out" | tr '\n' ' '
echo
exit $rc
