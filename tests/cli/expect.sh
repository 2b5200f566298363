#!/usr/bin/env bash
# expect.sh <exit-code> <regex> -- <command...>: passes when the command
# exits with <exit-code> and its output (stdout+stderr) matches <regex>.
set -u
want=$1; pattern=$2; shift 3
out=$("$@" 2>&1); got=$?
printf '%s\n' "$out" | tail -20
if [ "$got" -ne "$want" ]; then
  echo "expect.sh: exit $got, wanted $want"; exit 1
fi
if ! printf '%s' "$out" | grep -Eq -- "$pattern"; then
  echo "expect.sh: output does not match /$pattern/"; exit 1
fi
