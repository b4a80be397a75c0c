#!/usr/bin/env bash
# A disk that fills up at any point of a run: a tiny run writes into a small tmpfs, filled beforehand with ballast
# so that only a fraction of what the run writes fits: 2 % (the first checkpoint), then 10 % ... 95 % of it (a
# snapshot, a log line, a later checkpoint, the report). Each time the run must stop with exit 2 and one error line
# naming a file of the run folder and "No space left on device", a hint that tells the truth about what is on disk,
# no temporary file left behind; then, the ballast removed, `poslab train --resume` must finish the run with the
# same final table, bit for bit, and the same logged losses as a run that never stopped.
# Needs root (mount); elsewhere it skips (exit 77). Usage: test_disk_full.sh POSLAB SOURCE_DIR
set -uo pipefail
poslab=$(realpath "$1")
src=$(realpath "$2")
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: mounting a small tmpfs needs root"; exit 77; }

tmp=$(mktemp -d)
disk=$tmp/disk
mkdir -p "$disk"
cleanup() {
  umount "$disk" 2>/dev/null
  [ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
mount -t tmpfs -o size=64m tmpfs "$disk" || { echo "SKIP: cannot mount a tmpfs here"; exit 77; }

head -c 200000 "$src/data/tinyshakespeare.txt" > "$tmp/corpus.txt"
cat > "$tmp/tiny.yaml" <<YAML
run: {threads: 1, batch_split: 1, report: true, device: cpu, kernels: default}
data: {corpus: $tmp/corpus.txt, cache_dir: $tmp/cache, tokenizer: {type: char}}
model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 16}
train: {batch_size: 8, max_steps: 12, eval_every: 4, eval_batches: 2, checkpoint_every: 4, log_every: 1}
snapshot: {every: 4}
YAML

# The run that never stops, on the same disk: what it writes is the measure of the points below.
"$poslab" train "$tmp/tiny.yaml" --set "run.out_dir=$disk" --set run.name=whole >/dev/null 2>"$tmp/whole.err" ||
  { cat "$tmp/whole.err"; fail "the uninterrupted run"; }
mv "$disk/whole" "$tmp/whole"
total=$(du -sb "$tmp/whole" | cut -f1)
losses() { grep -o '"loss":[^,]*,"lr":[^,]*,.*"step":[0-9]*' "$1/metrics.jsonl" | sed 's/"ms_per_step":[^,]*,//; s/"tokens_per_s":[^,]*,//'; }
# one line a step (log_every 1): a pattern that matched nothing would make every comparison below "" = ""
[ "$(losses "$tmp/whole" | wc -l)" -eq 12 ] || fail "the uninterrupted run's losses were not read: $(losses "$tmp/whole")"
# A run's files end with its report: the table of its last step is the one to compare.
last=snapshots/wpe_step000012.npy

points=0
for pct in 2 10 25 40 55 70 85 95; do
  free=$((total * pct / 100))
  avail=$(df -B1 --output=avail "$disk" | tail -1)
  fallocate -l $((avail - free)) "$disk/ballast" || fail "could not write the ballast"
  run=$disk/p$pct
  "$poslab" train "$tmp/tiny.yaml" --set "run.out_dir=$disk" --set "run.name=p$pct" >/dev/null 2>"$tmp/p$pct.err"
  rc=$?
  err=$(grep "^error: " "$tmp/p$pct.err")
  hint=$(grep "^hint: " "$tmp/p$pct.err")
  if [ "$rc" -eq 0 ]; then  # it fitted after all (the files' sizes vary a little): nothing to check at this point
    rm -f "$disk/ballast"
    continue
  fi
  [ "$rc" -eq 2 ] || { cat "$tmp/p$pct.err"; fail "$pct %: exit $rc, expected 2"; }
  [[ "$err" == "error: $run/"*": No space left on device"* ]] ||
    fail "$pct %: the error does not name a file of the run folder and the cause: $err"
  [ -z "$(find "$run" -name '*.tmp.*' 2>/dev/null)" ] || fail "$pct %: a temporary file was left: $(find "$run" -name '*.tmp.*')"
  [ ! -e "$run/lock" ] || fail "$pct %: the lock was left"
  if [[ "$hint" == *"previous checkpoint is intact"* || "$hint" == *"the training is done and its checkpoint intact"* ]]; then
    "$poslab" inspect "$run/checkpoints/latest.pt" >/dev/null 2>&1 || fail "$pct %: the hint says a checkpoint is intact; there is none"
  elif [[ "$hint" == *"no checkpoint was written before this one"* || "$hint" == *"no checkpoint was written yet"* ]]; then
    [ ! -e "$run/checkpoints/latest.pt" ] || fail "$pct %: the hint says no checkpoint was written; latest.pt exists"
  else
    fail "$pct %: the hint says neither that a checkpoint is intact nor that none was written: $hint"
  fi
  rm -f "$disk/ballast"
  "$poslab" train --resume "$run" >/dev/null 2>"$tmp/p$pct.resume.err" || { cat "$tmp/p$pct.resume.err"; fail "$pct %: --resume"; }
  cmp -s "$tmp/whole/$last" "$run/$last" || fail "$pct %: the resumed run's last table differs from the uninterrupted run's"
  [ "$(losses "$tmp/whole")" = "$(losses "$run")" ] || fail "$pct %: the resumed run's logged losses differ"
  [ -f "$run/report/index.html" ] || fail "$pct %: the resumed run has no report"
  echo "$pct % of the run's $total bytes free: $(cut -c1-150 <<<"${err#error: $run/}")"
  points=$((points + 1))
  rm -rf "$run"
done
[ "$points" -ge 6 ] || fail "only $points of the 8 points stopped the run"
echo "PASS: the disk filled at $points points of a run; each stopped with the file named and resumed to the same result"
