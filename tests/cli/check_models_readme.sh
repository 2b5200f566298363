#!/usr/bin/env bash
# models/README.md is what tools/models_readme.py writes from this build's
# `torchbench --torchbench_list_models=json`, and the tool's own answers hold:
# a stale file exits 1 with one line, a program that cannot run exits 2.
#
#   check_models_readme.sh <torchbench program> <python>
set -uo pipefail
tb=$1
py=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
tool="$root/tools/models_readme.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. The committed file is current.
"$py" "$tool" --program "$tb" --check || fail "models/README.md is not current (above)"

# 2. A stale copy: exit 1, one line naming the difference.
sed 's/^# Models$/# Models (edited)/' "$root/models/README.md" > "$work/README.md"
"$py" "$tool" --program "$tb" --check --readme "$work/README.md" 2> "$work/stale.err"
status=$?
[ "$status" -eq 1 ] || fail "stale file: exit $status, want 1"
[ "$(wc -l < "$work/stale.err")" -eq 1 ] || fail "stale file: want one line, got: $(cat "$work/stale.err")"
line=$(grep -n -m1 '^# Models$' "$root/models/README.md" | cut -d: -f1)
grep -q "is not current: 1 line(s) differ, first at line $line:" "$work/stale.err" ||
  fail "stale file: $(cat "$work/stale.err")"

# 3. A missing file: exit 1; writing it makes it current.
"$py" "$tool" --program "$tb" --check --readme "$work/missing.md" 2> "$work/missing.err"
status=$?
[ "$status" -eq 1 ] || fail "missing file: exit $status, want 1"
"$py" "$tool" --program "$tb" --readme "$work/written.md" > /dev/null || fail "write failed"
cmp -s "$work/written.md" "$root/models/README.md" || fail "a fresh write differs from models/README.md"

# 4. Bad input: exit 2, one line.
for program in "$work/no-such-program" /bin/false; do
  "$py" "$tool" --program "$program" --check 2> "$work/bad.err"
  status=$?
  [ "$status" -eq 2 ] || fail "--program $program: exit $status, want 2"
  [ "$(wc -l < "$work/bad.err")" -eq 1 ] || fail "--program $program: want one line, got: $(cat "$work/bad.err")"
done
printf '#!/bin/sh\necho "[{\\"name\\": \\"x\\"}]"\n' > "$work/fake"
chmod +x "$work/fake"
"$py" "$tool" --program "$work/fake" --check 2> "$work/bad.err"
status=$?
[ "$status" -eq 2 ] || fail "incomplete model list: exit $status, want 2"
grep -q "model x: field 'domain' missing" "$work/bad.err" || fail "incomplete model list: $(cat "$work/bad.err")"
echo "models/README.md is current; the tool's exit statuses hold"
