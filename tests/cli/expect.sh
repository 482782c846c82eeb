#!/usr/bin/env bash
# Runs a command and checks its exit code and output.
# Usage: expect.sh EXIT_CODE REGEX [--one-line-stderr] -- COMMAND...
#   REGEX must match stdout+stderr (grep -E); --one-line-stderr: stderr must be exactly one line.
set -u
want=$1; regex=$2; shift 2
one_line=0
if [ "${1:-}" = "--one-line-stderr" ]; then one_line=1; shift; fi
[ "${1:-}" = "--" ] && shift
out=$(mktemp); err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
got=$?
status=0
if [ "$got" != "$want" ]; then echo "FAIL: exit code $got, expected $want"; status=1; fi
if ! cat "$out" "$err" | grep -Eq -- "$regex"; then echo "FAIL: output does not match /$regex/"; status=1; fi
if [ $one_line = 1 ] && [ "$(wc -l <"$err")" != 1 ]; then echo "FAIL: stderr has $(wc -l <"$err") lines, expected 1"; status=1; fi
if [ $status != 0 ]; then echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; fi
exit $status
