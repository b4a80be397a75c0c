#!/usr/bin/env bash
# Opens a report in headless Chromium (Debian's chromium, installed when missing) and saves a screenshot,
# to look at the page as a reader would. Usage: scripts/screenshot_report.sh RUN_DIR/report/index.html[#FRAGMENT]
# [OUT.png] [HEIGHT]   (a fragment opens a step of the watch page: 'RUN_DIR/report/watch.html#step=700'); HEIGHT in
# pixels, 16000 unless given: a longer page is cut there (a run's report with every figure is about 12000).
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 3 ]; then
  echo "usage: bash scripts/screenshot_report.sh PAGE.html[#FRAGMENT] [OUT.png] [HEIGHT]" >&2
  exit 2
fi
fragment=""
case "$1" in *'#'*) fragment="#${1#*#}" ;; esac
if [ ! -f "${1%%#*}" ]; then
  echo "error: ${1%%#*}: no such page" >&2
  echo "hint: poslab report RUN_DIR writes RUN_DIR/report/index.html and watch.html" >&2
  exit 2
fi
page=$(readlink -f "${1%%#*}")
out=${2:-${page%.html}.png}
height=${3:-16000}
if ! command -v chromium >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
  --window-size=1280,"$height" --virtual-time-budget=3000 --screenshot="$out" "file://$page$fragment" 2>"$profile/log" ||
  true
if [ ! -s "$out" ]; then
  echo "error: chromium wrote no screenshot at $out" >&2
  tail -5 "$profile/log" >&2
  exit 1
fi
echo "$out"
