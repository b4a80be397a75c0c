#!/usr/bin/env bash
# Nothing lost at any crash point. Every durable step of the writes (util/fs.h's crash points: each folder made, file
# opened, file body or append written, fsync, rename and folder fsync) is, in turn, the moment the process dies as
# SIGKILL kills it (POSLAB_CRASH_AT=N), and each append once more torn in half (POSLAB_CRASH_TORN=1). Each time the
# work is taken up again as a user would, and must end as the uninterrupted work did: every snapshot table, the
# snapshot index and the metrics records (none lost, none doubled, no torn line) bit for bit, the last checkpoint at
# the last step.
#   run    a tiny run with its report; taken up again with poslab train --resume RUN_DIR (the first command again
#          when the crash came before the run folder held its config); the report's points, every 11th
#   sweep  a sweep of two tiny runs, crashed at each point of its index and of its first run (the second run's are
#          the first's again); taken up again by the same poslab sweep command, which skips what it takes for done
#   nproc  the tiny run on two processes (--nproc 2), crashed at each point of rank 0, the one that writes (every
#          process counts its own points; the others write nothing); resumed on two processes
# TensorBoard's files (run.tensorboard) are written, crashed at and compared in run mode; sweep and nproc leave them
# out (the same writes, through the same code: each of their points would cost a crash and a resume more).
# Usage: test_crash_points.sh PATH/TO/poslab run|sweep|nproc [FIRST [LAST|- [STRIDE]]] (a range of points, to replay
# one: the point number is all a failure needs to be repeated; - is the mode's last point; STRIDE takes every Nth).
set -u
poslab=$1
mode=${2:?run, sweep or nproc}
first=${3:-1}
here="$(cd "$(dirname "$0")" && pwd)"
tb_scalars=$here/tb_scalars.py checkpoint_state=$here/checkpoint_state.py
# The interpreter itself: a version manager's python3 (pyenv's shim, a shell script) costs ~0.15 s a call, and each
# point calls it three times.
python=$(python3 -c 'import sys; print(sys.executable)') || { echo "FAIL python3 does not start"; exit 1; }
tmp=$(mktemp -d)
trap '[ -n "${POSLAB_CRASH_KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
export POSLAB_KERNELS=default POSLAB_NO_MEMORY_CHECK=1
unset POSLAB_CRASH_AT POSLAB_CRASH_TORN POSLAB_CRASH_LOG
t_start=$(date +%s)
# A command in a child shell, so that its death by SIGKILL is its exit status 137, not a line from this shell.
quietly() { bash -c '"$@"; exit $?' _ "$@"; }
give_up() { echo "FAIL $1"; [ -n "${2:-}" ] && tail -20 "$2"; echo "crash_points_$mode: 0 passed, 1 failed"; exit 1; }

# 4 steps: at step 0 an evaluation (best.pt), a snapshot and a checkpoint; at step 2 a checkpoint alone; at step 4
# (the last) all three and the last metrics record.
for i in $(seq 1 600); do echo "line $i: the cat sat on the mat and the dog ran $((i % 7))"; done >"$tmp/corpus.txt"
cat >"$tmp/tiny.yaml" <<YAML
run: {name: tiny, threads: 1, device: cpu, report: false}
data: {corpus: [$tmp/corpus.txt], cache_dir: $tmp/cache, tokenizer: {type: char}}
model: {n_layer: 1, n_head: 2, n_embd: 16, block_size: 8}
train: {batch_size: 4, max_steps: 4, eval_every: 4, eval_batches: 1, checkpoint_every: 2, log_every: 2}
snapshot: {every: 4}
YAML
printf 'name: crash\nbase: tiny.yaml\nseeds: [1, 2]\n' >"$tmp/sweep.yaml"

case "$mode" in
  run)
    start() { local out=$1; shift; "$poslab" train "$tmp/tiny.yaml" --set "run.out_dir=$out" --set run.report=true "$@"; }
    # A crash before the report: the resume leaves the report out (it would draw the same figures each time; the
    # report's own points are crashed at below), and the comparison with it.
    again() {
      local no_report=()
      [ "$n" -lt "$report_from" ] && no_report=(--set run.report=false)
      if [ -f "$1/tiny/config.yaml" ]; then "$poslab" train --resume "$1/tiny" "${no_report[@]}"
      else start "$1" "${no_report[@]}"; fi
    }
    runs=tiny ;;
  sweep)
    start() { "$poslab" sweep "$tmp/sweep.yaml" --set "run.out_dir=$1" --set run.tensorboard=false; }
    again() { start "$1"; }
    runs="crash/base/seed-1 crash/base/seed-2" ;;
  nproc)
    start() { "$poslab" train "$tmp/tiny.yaml" --nproc 2 --set "run.out_dir=$1" --set run.tensorboard=false; }
    again() { if [ -f "$1/tiny/config.yaml" ]; then "$poslab" train --resume "$1/tiny" --nproc 2; else start "$1"; fi; }
    runs=tiny ;;
  *) give_up "unknown mode $mode (run, sweep or nproc)" ;;
esac
export poslab tmp
export -f start  # for quietly's child shell

# The first start fills the token cache; the reference, its points logged, is what every crashed start repeats.
start "$tmp/warm" >"$tmp/warm.log" 2>&1 || give_up "the first start failed:" "$tmp/warm.log"
POSLAB_CRASH_LOG="$tmp/points.log" start "$tmp/ref" >"$tmp/ref.log" 2>&1 || give_up "the reference failed:" "$tmp/ref.log"
total=$(wc -l <"$tmp/points.log")
# A reference that logged no points (POSLAB_CRASH_LOG not honoured) would leave nothing to crash at: not a pass.
[ "$total" -ge 10 ] || give_up "the reference logged $total crash points (POSLAB_CRASH_LOG), too few to test:" "$tmp/ref.log"
if [ "$mode" = sweep ]; then  # the points up to the second run's folder
  seed2=$(grep -n -m1 "/seed-2" "$tmp/points.log" | cut -d: -f1)
  [ -n "$seed2" ] || give_up "the reference's points never reach the second run (/seed-2):" "$tmp/ref.log"
  last=$((seed2 - 1))
else
  last=$total
fi
[ -n "${4:-}" ] && [ "$4" != - ] && last=$4
stride=${5:-1}
case "$stride" in 2) nth=2nd ;; 3) nth=3rd ;; *) nth=${stride}th ;; esac
# The report (run mode): ~44 files written after the training, each through 5 points, and 26 figures gnuplot drew,
# each committed through 3 (fsync, rename, folder fsync); every 11th point is crashed at
# (11 and 5 share no factor: each kind of point in turn), and the report must be whole after the resume.
report_from=$(grep -n -m1 "/report/" "$tmp/points.log" | cut -d: -f1)
report_from=${report_from:-$((total + 1))}
report_stride=11
echo "$mode: $total crash points ($(cut -d' ' -f2 "$tmp/points.log" | sort | uniq -c | awk '{printf "%s%s %s", sep, $1, $2; sep=", "}')); crashing at $first-$last$([ "$stride" != 1 ] && echo ", every $nth")$([ "$report_from" -le "$total" ] && echo ", the report's from $report_from every ${report_stride}th")"

# same_run A B: the snapshots (every table and the index), the metrics records and TensorBoard's scalars and
# projector files, bit for bit but for the speed figures (the machine's, not the model's); the last and the best
# checkpoints, every value in them bit for bit (the step, weights, AdamW's moments and step counts, the sampler's and
# the generator's states) but the config, which names the run's folder (checkpoint_state.py reads them without
# starting LibTorch: a poslab process would cost as much as the crash).
same_run() {
  local a=$1 b=$2 f
  for f in $(cd "$a" && ls snapshots/*.npy snapshots/index.jsonl); do
    cmp -s "$a/$f" "$b/$f" || { echo "differs: $f"; return 1; }
  done
  [ "$(ls "$a/snapshots" | grep -c npy)" = "$(ls "$b/snapshots" | grep -c npy)" ] || { echo "other snapshot files"; return 1; }
  diff <(sed -E 's/,?"(ms_per_step|tokens_per_s|allreduce_ms_per_step)":[^,}]*//g' "$a/metrics.jsonl") \
       <(sed -E 's/,?"(ms_per_step|tokens_per_s|allreduce_ms_per_step)":[^,}]*//g' "$b/metrics.jsonl") >"$tmp/diff" ||
    { echo "differs: metrics.jsonl"; head -6 "$tmp/diff"; return 1; }
  if [ -d "$a/tensorboard" ]; then  # every scalar once, in order, over the event files of each start
    [ -f "$a/tensorboard.scalars" ] || { "$python" "$tb_scalars" "$a/tensorboard" tokens_per_s >"$tmp/scalars" &&
      mv "$tmp/scalars" "$a/tensorboard.scalars"; } || { echo "tb_scalars.py failed on $a"; return 1; }
    diff "$a/tensorboard.scalars" <("$python" "$tb_scalars" "$b/tensorboard" tokens_per_s) \
      >"$tmp/diff" || { echo "differs: tensorboard's scalars"; head -6 "$tmp/diff"; return 1; }
    for f in $(cd "$a/tensorboard" && ls *.tsv projector_config.pbtxt); do
      cmp -s "$a/tensorboard/$f" "$b/tensorboard/$f" || { echo "differs: tensorboard/$f"; return 1; }
    done
  fi
  for f in latest best; do
    "$python" "$checkpoint_state" "$a/checkpoints/$f.pt" "$b/checkpoints/$f.pt" config_yaml >"$tmp/diff" 2>&1 ||
      { echo "differs: checkpoints/$f.pt"; head -4 "$tmp/diff"; return 1; }
  done
  # The report, where the uninterrupted run wrote one and the resume was to: the same files, its page last.
  if [ -d "$a/report" ] && [ "${n:-0}" -ge "${report_from:-0}" ]; then
    [ -f "$b/report/index.html" ] || { echo "no report/index.html"; return 1; }
    [ "$(cd "$a/report" && ls)" = "$(cd "$b/report" && ls)" ] || { echo "other report files"; return 1; }
  fi
}
same_work() {
  local r
  for r in $runs; do same_run "$1/$r" "$2/$r" || { echo "  in $r"; return 1; }; done
}
msg=$(same_work "$tmp/ref" "$tmp/warm") || give_up "two uninterrupted starts differ: $msg"
# The checkpoints' comparison sees a difference: the two starts' configs name different folders.
r=${runs%% *}
"$python" "$checkpoint_state" "$tmp/ref/$r/checkpoints/latest.pt" "$tmp/warm/$r/checkpoints/latest.pt" |
  grep -q "^differs: config_yaml" || give_up "checkpoint_state.py found the two starts' configs equal"

passed=0 failed=0
for n in $(seq "$first" "$stride" "$last"); do
  [ "$n" -ge "$report_from" ] && [ $(( (n - report_from) % report_stride )) -ne 0 ] && [ "$first" != "$last" ] && continue
  point=$(sed -n "${n}p" "$tmp/points.log")
  kind=$(echo "$point" | cut -d' ' -f2)
  # Torn: the appends and the lock's write. An atomic write's body goes to a temporary file, which nothing reads and
  # the next start removes: cut short, it is the crash at its fsync.
  for torn in 0 1; do
    [ "$torn" = 1 ] && { [ "$kind" != write ] || echo "$point" | grep -q '\.tmp\.[0-9]*$'; } && continue
    out="$tmp/crash"
    rm -rf "$out"
    what="point $n ($(echo "$point" | cut -d' ' -f2- | sed "s|$tmp/ref/||; s|\.tmp\.[0-9]*$|.tmp|")$([ "$torn" = 1 ] && echo ', torn'))"
    POSLAB_CRASH_AT=$n POSLAB_CRASH_TORN=$torn quietly start "$out" >"$tmp/crash.log" 2>&1
    rc=$?
    # With --nproc, rank 0 is the one that writes and dies; the launcher names it and stops rank 1.
    if [ "$mode" = nproc ] && [ "$rc" -ne 0 ] && grep -q "rank 0 (pid [0-9]*) was killed by signal 9" "$tmp/crash.log"; then
      rc=137
    fi
    if [ "$rc" -ne 137 ]; then
      echo "FAIL $what: exited $rc, not killed there"; tail -3 "$tmp/crash.log"; failed=$((failed + 1)); continue
    fi
    if ! again "$out" >"$tmp/again.log" 2>&1; then
      echo "FAIL $what: taking it up again failed:"; tail -5 "$tmp/again.log"; failed=$((failed + 1)); continue
    fi
    if msg=$(same_work "$tmp/ref" "$out"); then
      passed=$((passed + 1))
    else
      echo "FAIL $what: $msg"; failed=$((failed + 1))
    fi
  done
done
echo "$mode: crash points $first-$last of $total$([ "$stride" != 1 ] && echo " (every $nth)"), each a crash and a resume, in $(( $(date +%s) - t_start )) s"
echo "crash_points_$mode: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
