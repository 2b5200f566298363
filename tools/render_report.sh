#!/usr/bin/env bash
# Renders an HTML report (tools/tb report, or the gate's --html page) to a PNG
# with headless Chromium, to look at it as a reader would. A developer check,
# not a test: CI does not install Chromium (apt-get install chromium).
#
#   tools/render_report.sh report.html [out.png] [width] [height]
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,7p' "$0"; exit 2; }
page=$(realpath "$1")
out=${2:-${1%.html}.png}
width=${3:-1400}
height=${4:-3000}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "render_report: no chromium (apt-get install chromium)" >&2; exit 2; }
# A throwaway profile: nothing of the user's browser is read or written.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --user-data-dir="$profile" --window-size="$width,$height" \
  --screenshot="$(realpath -m "$out")" "file://$page" 2>/dev/null
echo "render_report: $out"
