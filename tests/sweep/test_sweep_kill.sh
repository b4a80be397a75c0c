#!/usr/bin/env bash
# Kill anywhere, resume, same answer: a 2-variant x 2-seed sweep is SIGKILLed at random moments (while a run
# trains, while it writes a checkpoint, a snapshot or its report, between runs) and started again until it
# finishes; then every run's tables, snapshot index and logged losses must equal those of the same sweep run
# without interruption, bit for bit, and every run must have its report. Usage: test_sweep_kill.sh PATH/TO/poslab
# [TRIALS] (default 2 trials; POSLAB_KILL_SEED fixes the random moments).
set -u
poslab=$1
trials=${2:-2}
tmp=$(mktemp -d)
trap '[ -n "${POSLAB_KILL_KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
export POSLAB_CACHE_DIR="$tmp/cache" POSLAB_KERNELS=default
seed=${POSLAB_KILL_SEED:-$$}
RANDOM=$seed
echo "kill moments drawn with seed $seed (POSLAB_KILL_SEED=$seed repeats them)"
failed=0

# A corpus of ~40 KB: numbered lines of a few repeated words.
for i in $(seq 1 1500); do echo "line $i: the cat sat on the mat and the dog ran $((i % 7))"; done >"$tmp/corpus.txt"
cat >"$tmp/base.yaml" <<EOF
run: {threads: 1, device: cpu}
data: {corpus: [$tmp/corpus.txt], tokenizer: {type: char}}
model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 16}
train: {batch_size: 8, max_steps: 30, eval_every: 10, eval_batches: 2, checkpoint_every: 5, log_every: 5}
snapshot: {every: 5}
EOF
printf 'name: kill\nbase: base.yaml\nseeds: [1, 2]\ngrid:\n  model.position: [learned, none]\n' >"$tmp/sweep.yaml"

# The uninterrupted sweep, timed: the kills fall within its length.
t0=$(date +%s%N)
"$poslab" sweep "$tmp/sweep.yaml" --set "run.out_dir=$tmp/ref" >"$tmp/ref.log" 2>&1 ||
  { echo "FAIL the uninterrupted sweep failed:"; cat "$tmp/ref.log"; exit 1; }
span_ms=$((($(date +%s%N) - t0) / 1000000))
runs=$(cd "$tmp/ref/kill" && ls -d */seed-*)
echo "uninterrupted sweep: $(echo "$runs" | wc -l) runs in $span_ms ms"

# same_run REF TRIAL: the snapshots (every table, the final one included, and the index) and the logged losses, bit
# for bit, and the report where the uninterrupted run has one (a run without a position table has neither snapshots
# nor report: its losses are compared). Checkpoints hold the run's folder, so their bytes differ by design.
same_run() {
  local a=$1 b=$2 f
  for f in $(cd "$a" && ls snapshots/*.npy snapshots/index.jsonl 2>/dev/null); do
    cmp -s "$a/$f" "$b/$f" || { echo "differs: $b/$f"; return 1; }
  done
  # metrics.jsonl: the same records but for the speed figures (the machine's, not the model's).
  diff <(sed -E 's/"(ms_per_step|tokens_per_s)":[^,}]*//g' "$a/metrics.jsonl") \
    <(sed -E 's/"(ms_per_step|tokens_per_s)":[^,}]*//g' "$b/metrics.jsonl") >/dev/null ||
    { echo "differs: $b/metrics.jsonl"; diff "$a/metrics.jsonl" "$b/metrics.jsonl" | head -6; return 1; }
  [ ! -f "$a/report/index.html" ] || [ -f "$b/report/index.html" ] || { echo "missing: $b/report/index.html"; return 1; }
}

total_kills=0
for trial in $(seq 1 "$trials"); do
  out="$tmp/trial$trial"
  kills=0
  for attempt in $(seq 1 40); do
    "$poslab" sweep "$tmp/sweep.yaml" --set "run.out_dir=$out" >>"$out.log" 2>&1 &
    pid=$!
    # A moment within the first half of the sweep's length at the first start, within a longer span at each
    # start after it: early kills are likely, and the sweep ends.
    upper=$((span_ms * (attempt + 1) / 4 + 1))
    wait_ms=$((100 + RANDOM % upper))
    sleep "$(printf '%d.%03d' $((wait_ms / 1000)) $((wait_ms % 1000)))"
    if kill -0 "$pid" 2>/dev/null; then
      kill -9 "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      krc=$?
      if [ "$krc" -eq 137 ]; then  # killed, not finished a moment before the signal
        kills=$((kills + 1))
        echo "trial $trial: killed after $wait_ms ms" >>"$out.log"
        continue
      fi
      [ "$krc" -eq 0 ] || { echo "FAIL trial $trial: the sweep exited $krc after $kills kills:"; tail -20 "$out.log"; failed=1; }
      break
    fi
    wait "$pid"
    rc=$?
    [ "$rc" -eq 0 ] || { echo "FAIL trial $trial: the sweep exited $rc after $kills kills:"; tail -20 "$out.log"; failed=1; }
    break
  done
  # Finish it without kills (a trial whose every start was killed) and check nothing is left to train.
  "$poslab" sweep "$tmp/sweep.yaml" --set "run.out_dir=$out" >"$out.last.log" 2>&1 ||
    { echo "FAIL trial $trial: the last start failed:"; cat "$out.last.log"; failed=1; continue; }
  n=$(echo "$runs" | wc -l)
  grep -q "$n runs | $n done before, 0 trained, 0 resumed | $n finished" "$out.last.log" ||
    { echo "FAIL trial $trial: a start after the end still found work:"; cat "$out.last.log"; failed=1; }
  for r in $runs; do
    same_run "$tmp/ref/kill/$r" "$out/kill/$r" || { echo "FAIL trial $trial ($kills kills): $r is not the uninterrupted run"; failed=1; }
  done
  echo "trial $trial: $kills kills, then finished ($(grep -c "not trained again\|resuming from" "$out.log") resumed or skipped runs)"
  total_kills=$((total_kills + kills))
done
# Trials without a kill compare uninterrupted sweeps: at least one start must have been killed.
[ "$total_kills" -gt 0 ] || { echo "FAIL no start was killed in $trials trials: nothing was resumed"; failed=1; }
[ "$failed" -eq 0 ] && echo "sweep kill/resume: $trials trials passed"
exit "$failed"
