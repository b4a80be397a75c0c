#!/usr/bin/env bash
# The "watch it form" page in a real browser (Debian's chromium, headless; scripts/setup.sh installs it): a tiny
# run's page loads without a console message or a script error, #step=S shows step S, two steps draw different
# pictures, a step that is not a snapshot shows the nearest one with a note, a run with one snapshot works, each
# curve's value sits beside its name, a variant's seeds play side by side on one slider (poslab compare), and every kind
# of page (watch, report, comparison, table, seeds) fits 1280 pixels.
# The page writes what it drew into <output id="state">: data-step, data-frames, data-digests (a hash of each
# panel's pixels) and data-errors; --dump-dom reads them back.
# Usage: tests/report/test_watch_page.sh POSLAB_BINARY SOURCE_DIR
set -u
poslab=$1
cd "$2" || exit 2
if ! command -v chromium >/dev/null; then
  echo "FAIL chromium is not installed: run bash scripts/setup.sh (it installs Debian's chromium)"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() {  # check NAME CONDITION...
  local name=$1
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name"; fi
}

# open PAGE_URL OUT: the DOM after the page's scripts ran (OUT.html) and the browser's log (OUT.log)
open_page() {
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 \
    --window-size=1280,1400 --virtual-time-budget=3000 --dump-dom "$1" >"$2.html" 2>"$2.log"
}
attr() { grep -o "data-$1=\"[^\"]*\"" "$2.html" | head -1 | sed -E "s/^data-$1=\"(.*)\"$/\1/"; }
panel() { attr digests "$2" | tr ' ' '\n' | grep "^$1:" | cut -d: -f2; }
clean() {  # no console message, no script error, the state written
  ! grep -q "CONSOLE" "$1.log" && [ "$(attr errors "$1")" = "0" ] && [ -n "$(attr digest "$1")" ]
}

# A tiny run: 60 steps of a char model on the shipped corpus, a snapshot every 20 steps (0, 20, 40, 60).
"$poslab" train configs/default.yaml --set "run.out_dir=$tmp/runs" --set run.name=tiny --set data.corpus=data/tinyshakespeare.txt \
  --set "data.cache_dir=$tmp/cache" --set data.tokenizer.type=char --set model.n_layer=1 --set model.n_head=2 \
  --set model.n_embd=32 --set model.block_size=32 --set train.batch_size=8 --set train.max_steps=60 \
  --set train.eval_every=20 --set train.eval_batches=2 --set train.log_every=20 --set snapshot.every=20 \
  --set run.threads=2 >"$tmp/train.out" 2>"$tmp/train.err" || { echo "FAIL training the tiny run"; tail "$tmp/train.err"; exit 1; }
page="$tmp/runs/tiny/report/watch.html"
check "the run's report writes watch.html and logs its size" \
  grep -Eq "watch page: 4 of 4 snapshots, [0-9]+ KB: .*watch.html" "$tmp/train.err"
check "the report links to the page" grep -q 'href="watch.html"' "$tmp/runs/tiny/report/index.html"
check "the page is self-contained: no http(s) address" bash -c "[ -s '$page' ] && ! grep -Eq '(src|href)=\"https?:' '$page'"

open_page "file://$page#step=20" "$tmp/s20"
check "#step=20 loads without console messages or errors" clean "$tmp/s20"
check "#step=20 shows step 20 of 4 snapshots" [ "$(attr step "$tmp/s20")/$(attr frames "$tmp/s20")" = "20/4" ]
check "the header gives the step's evaluation: its train and val loss" \
  grep -Eq 'id="label">step 20 · snapshot 2 of 4 · train loss [0-9.]+, val loss [0-9.]+<' "$tmp/s20.html"
check "the page fits a 1280-pixel window: no sideways scrolling" [ "$(attr page-width "$tmp/s20")" -le 1280 ]
# data-curve-rows: per curve, its value's offset below the name's baseline, gap after the name, room on the right.
# Every curve has its value, "–" where the step has none (a helix's share, in a run that never formed one, too).
check "each curve's value sits beside its name, inside the panel" \
  awk -v rows="$(attr curve-rows "$tmp/s20")" -v curves="$(attr curves "$tmp/s20")" 'BEGIN { n = split(rows, r, " "); if (n < 6 || n != curves) exit 1
    for (i = 1; i <= n; ++i) { split(r[i], f, ":"); if (f[1] != 0 || f[2] <= 0 || f[3] < 0) exit 1 } }'

open_page "file://$page#step=60" "$tmp/s60"
check "#step=60 shows step 60" [ "$(attr step "$tmp/s60")" = "60" ]
check "steps 20 and 60 draw different similarity maps" [ "$(panel sim "$tmp/s20")" != "$(panel sim "$tmp/s60")" ]
check "steps 20 and 60 draw different paths" [ "$(panel path2 "$tmp/s20")" != "$(panel path2 "$tmp/s60")" ]
check "steps 20 and 60 draw different kernels" [ "$(panel kernels "$tmp/s20")" != "$(panel kernels "$tmp/s60")" ]
axes=$(grep -o '"axes":\[[^]]*\]' "$page" | head -1 | grep -o '"[^"]*"' | tail -n +2 | tr -d '"' | head -2 | paste -sd'|')
heading="The rows' path in ${axes%%|*} and ${axes#*|}"
[ "${axes%%|*}" = "circle axis 1" ] && heading="The rows' path on the circle's axes"  # a turned helix's, in words
check "the path's headings name the axes the data draws ($axes)" grep -q "id=\"path2title\">$heading<" "$tmp/s60.html"
open_page "file://$page#step=20" "$tmp/again"
check "the same step draws the same picture" [ "$(attr digest "$tmp/again")" = "$(attr digest "$tmp/s20")" ]
open_page "file://$page" "$tmp/plain"
check "without a fragment the page shows the last step" [ "$(attr step "$tmp/plain")" = "60" ]
open_page "file://$page#step=33" "$tmp/s33"
check "#step=33 shows the nearest snapshot, 40, and says so" \
  bash -c "[ \"$(attr step "$tmp/s33")\" = 40 ] && grep -q 'Step 33 is not a snapshot: showing step 40.' '$tmp/s33.html'"

# One snapshot: GPT-2's first 64 rows as the only snapshot of a run folder.
mkdir -p "$tmp/one/snapshots"
cp tests/fixtures/gpt2_wpe_rows0-63.npy "$tmp/one/snapshots/wpe_step000000.npy"
echo '{"step": 0, "file": "wpe_step000000.npy"}' >"$tmp/one/snapshots/index.jsonl"
if "$poslab" report "$tmp/one" >"$tmp/one.out" 2>"$tmp/one.err"; then
  open_page "file://$tmp/one/report/watch.html" "$tmp/one1"
  check "a one-snapshot run's page loads cleanly" clean "$tmp/one1"
  check "a one-snapshot run's page shows step 0 of 1" [ "$(attr step "$tmp/one1")/$(attr frames "$tmp/one1")" = "0/1" ]
  check "a one-snapshot run's page disables play" grep -q '<button id="play" type="button" title="space" disabled' "$tmp/one1.html"
else
  failed=$((failed + 1)); echo "FAIL report of a one-snapshot run"; cat "$tmp/one.err"
fi

# Every page fits a 1280-pixel window: wide tables scroll inside their own box, the page itself never sideways. A copy
# of each page beside it (the same images and links) gets a script that writes the page's scrollWidth into <body>.
fits() {  # fits PAGE NAME
  local copy="${1%.html}.fit.html"
  sed 's|</body>|<script>document.body.dataset.pageWidth = document.documentElement.scrollWidth;</script></body>|' \
    "$1" >"$copy"
  open_page "file://$copy" "$tmp/fit-$2"
  local width
  width=$(grep -o '<body[^>]* data-page-width="[0-9]*"' "$tmp/fit-$2.html" | grep -o 'data-page-width="[0-9]*"' | grep -o '[0-9]*')
  rm -f "$copy"
  if [ -n "$width" ] && [ "$width" -le 1280 ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL $2 ($1) is ${width:-?} pixels wide in a 1280-pixel window"; fi
}
fits "$tmp/runs/tiny/report/index.html" "the run's report"
# On a phone (390 pixels: a frame of that width, headless Chromium's window being 500 at least) the watch page's
# panels shrink to the width, and nothing scrolls sideways.
fits_phone() {  # fits_phone PAGE NAME
  local frame
  frame="$(dirname "$1")/phone-frame.html"
  cat >"$frame" <<EOF_FRAME
<html><body style="margin:0"><iframe id="f" src="$(basename "$1")" style="width:390px;height:800px;border:0"></iframe>
<script>setTimeout(() => { const d = document.getElementById("f").contentDocument;
document.body.dataset.overflow = d.documentElement.scrollWidth - d.documentElement.clientWidth;
const cue = d.querySelector(".scroll-cue"); if (cue) document.body.dataset.cue = getComputedStyle(cue).display; }, 1500);</script>
</body></html>
EOF_FRAME
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$tmp/profile" --allow-file-access-from-files \
    --window-size=600,900 --virtual-time-budget=4000 --dump-dom "file://$frame" >"$tmp/phone-$2.html" 2>/dev/null
  rm -f "$frame"
  local over
  over=$(grep -o 'data-overflow="[-0-9]*"' "$tmp/phone-$2.html" | grep -o '"[-0-9]*"' | tr -d '"')
  if [ "$over" = 0 ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL $2 ($1) overflows a 390-pixel window by ${over:-?} pixels"; fi
}
fits_phone "$tmp/runs/tiny/report/watch.html" "the run's watch page"
"$poslab" train configs/default.yaml --set "run.out_dir=$tmp/runs" --set run.name=tiny2 --set run.seed=2 \
  --set data.corpus=data/tinyshakespeare.txt --set "data.cache_dir=$tmp/cache" --set data.tokenizer.type=char \
  --set model.n_layer=1 --set model.n_head=2 --set model.n_embd=32 --set model.block_size=32 --set train.batch_size=8 \
  --set train.max_steps=20 --set train.eval_every=20 --set train.eval_batches=2 --set snapshot.every=20 \
  --set run.threads=2 --set run.report=false >/dev/null 2>"$tmp/tiny2.err" &&
  "$poslab" compare "$tmp/runs/tiny" "$tmp/runs/tiny2" --out "$tmp/compare" >/dev/null 2>"$tmp/compare.err" &&
  "$poslab" report tests/fixtures/gpt2_wpe_rows0-63.npy --out "$tmp/table" >/dev/null 2>"$tmp/table.err" ||
  { failed=$((failed + 1)); echo "FAIL making the pages to measure"; tail -3 "$tmp/tiny2.err" "$tmp/compare.err" "$tmp/table.err"; }
fits "$tmp/compare/index.html" "the comparison of two runs"
fits "$tmp/table/index.html" "the report of one table"

# One table's page (poslab report TABLE): linked from its report; the similarity, the paths, the spectrum and the
# periodogram drawn; no slider, kernels or curves over training.
fits "$tmp/table/watch.html" "one table's page"
open_page "file://$tmp/table/watch.html" "$tmp/table1"
check "one table's page is linked from its report" grep -q 'href="watch.html"' "$tmp/table/index.html"
check "one table's page loads cleanly, one frame" bash -c "$(declare -f attr clean); clean '$tmp/table1' && [ \"\$(attr frames '$tmp/table1')\" = 1 ]"
check "one table's page hides the slider, the kernels and the curves" \
  [ "$(grep -o 'data-hidden="1"' "$tmp/table1.html" | wc -l)" -eq 4 ]
# The table is GPT-2's rows 0-63, the one-snapshot run's above: each panel draws the same pixels on both pages.
for p in sim path2 path3 spectrum periodogram; do
  check "one table's page draws its $p as the run's page of that table does" \
    bash -c "[ -n \"$(panel $p "$tmp/table1")\" ] && [ \"$(panel $p "$tmp/table1")\" = \"$(panel $p "$tmp/one1")\" ]"
done

# A variant's seeds side by side (poslab compare): the two runs above as seeds 1 and 2 of one variant ("pair"), 60 and
# 20 steps long, so at step 60 the second shows its latest snapshot, step 20.
mkdir -p "$tmp/pair"
ln -s "$tmp/runs/tiny" "$tmp/pair/seed-1"
ln -s "$tmp/runs/tiny2" "$tmp/pair/seed-2"
if "$poslab" compare "$tmp/pair/seed-1" "$tmp/pair/seed-2" --out "$tmp/seeds" >/dev/null 2>"$tmp/seeds.err"; then
  seeds_page="$tmp/seeds/seeds_1_pair.html"
  check "compare logs the seeds page" grep -Eq "seeds page of pair: 2 seeds, [0-9]+ KB: .*seeds_1_pair.html" "$tmp/seeds.err"
  check "compare logs the seeds' CKA beside chance's" \
    grep -Eq "pair \(2 runs\) .*\| seeds' CKA [0-9.]+ \(1 pair; random tables 0\.[0-9]{2}\)$" "$tmp/seeds.err"
  check "the comparison links the seeds page" grep -q 'href="seeds_1_pair.html"' "$tmp/seeds/index.html"
  fits "$seeds_page" "the seeds page"
  fits_phone "$seeds_page" "the seeds page"  # its rows scroll sideways in their box; the page does not
  check "on a phone the seeds page says its rows scroll sideways" grep -q 'data-cue="block"' "$tmp/phone-the seeds page.html"
  open_page "file://$seeds_page#step=60" "$tmp/pair60"
  open_page "file://$seeds_page#step=20" "$tmp/pair20"
  seed1=$(grep -o 'seed: [0-9]*' "$tmp/runs/tiny/config.yaml" | grep -o '[0-9]*')
  check "the seeds page loads cleanly: 2 seeds, 4 steps" \
    bash -c "$(declare -f attr clean); clean '$tmp/pair60' && [ \"\$(attr seeds '$tmp/pair60')/\$(attr frames '$tmp/pair60')\" = 2/4 ]"
  check "at step 60 the shorter seed shows its latest snapshot, step 20, and says so" \
    bash -c "[ \"$(attr shown "$tmp/pair60")\" = '$seed1:60 2:20' ] && grep -q 'latest snapshot: step 20' '$tmp/pair60.html'"
  check "at step 20 both seeds show step 20" [ "$(attr shown "$tmp/pair20")" = "$seed1:20 2:20" ]
  check "each seed says whether its table holds a circle at the step shown" \
    [ "$(grep -Eo '>(no circle|a circle: PC[0-9]+ and PC[0-9]+, period [0-9.]+, [0-9.]+.% of the variance)(; a helix of [0-9]+.% \(circle and slow axis together\))?<' "$tmp/pair20.html" | wc -l)" = 2 ]
  forms=$(grep -o '"form":"[a-z]*"' "$seeds_page" | sort -u | wc -l)
  grep -o '<b id="form">[^<]*</b>' "$tmp/pair20.html" > "$tmp/form_note"
  if [ "$forms" -gt 1 ]; then
    check "the page says a seed's analysis found more form than the other's" grep -q 'found a .*: every path here is on' "$tmp/form_note"
  else
    check "the page says nothing of form when both seeds' analyses found the same" grep -qx '<b id="form"></b>' "$tmp/form_note"
  fi
  check "the first seed's similarity differs between steps 20 and 60" \
    bash -c "[ -n \"$(panel s0.sim "$tmp/pair20")\" ] && [ \"$(panel s0.sim "$tmp/pair20")\" != \"$(panel s0.sim "$tmp/pair60")\" ]"
  check "the second seed draws the same at steps 20 and 60 (its step 20 both times)" \
    bash -c "[ -n \"$(panel s1.path2 "$tmp/pair20")\" ] && [ \"$(panel s1.path2 "$tmp/pair20")\" = \"$(panel s1.path2 "$tmp/pair60")\" ]"
else
  failed=$((failed + 1)); echo "FAIL comparing a variant's two seeds"; tail -3 "$tmp/seeds.err"
fi

echo "watch page: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
