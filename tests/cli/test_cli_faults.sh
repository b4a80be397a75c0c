#!/usr/bin/env bash
# The poslab binary when a run is stopped or fails on purpose: SIGINT, SIGTERM and kill -9 during training, a checkpoint
# writer killed mid-write, a file-size limit at a checkpoint, memory too small for the model or the input; each
# resumable where it should be. Runs beside tests/cli/test_cli.sh (both CTest tests share tests/cli/lib.sh).
# Usage: test_cli_faults.sh PATH/TO/poslab SOURCE_DIR
set -u
poslab=$1
src=$2
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$src" || exit 2
# float32 and 2 eval batches keep the runs quick on any CPU (without AVX512-BF16 or AMX, bf16 is no faster).
quick=(--set train.dtype=float32 --set train.eval_batches=2)
# SIGINT during training: finish the step, checkpoint + snapshot, exit 130 saying how to resume; resume finishes.
"$poslab" train configs/default.yaml "${quick[@]}" --set train.max_steps=400 --set train.log_every=1 --set train.eval_every=1000 \
  --set run.report=false --set "run.out_dir=$tmp/sig" >"$tmp/sig.out" 2>"$tmp/sig.err" &
pid=$!
for _ in $(seq 1 300); do grep -q "step 3 |" "$tmp/sig.err" 2>/dev/null && break; sleep 0.1; done
kill -INT "$pid"
wait "$pid"
rc=$?
last=$(ls "$tmp/sig/default/snapshots/" | grep -o 'wpe_step[0-9]*.npy' | sort | tail -1)
if [ "$rc" -eq 130 ] && grep -q "poslab train --resume $tmp/sig/default" "$tmp/sig.err" &&
   "$poslab" inspect "$tmp/sig/default/checkpoints/latest.pt" | grep -q "^step         $((10#${last//[^0-9]/})) of" &&
   [ ! -e "$tmp/sig/default/lock" ] &&
   "$poslab" train --resume "$tmp/sig/default" --set train.max_steps=$((10#${last//[^0-9]/} + 2)) >/dev/null 2>&1; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL SIGINT stop and resume: exit $rc, last snapshot $last"; tail -5 "$tmp/sig.err"
fi
# SIGTERM (what Slurm, timeout and a shutdown send) stops the run as SIGINT does, with exit 143, at the step it names.
from=$("$poslab" inspect "$tmp/sig/default/checkpoints/latest.pt" | awk '/^step/ {print $2}')
"$poslab" train --resume "$tmp/sig/default" --set train.max_steps=400 >"$tmp/term.out" 2>"$tmp/term.err" &
pid=$!
for _ in $(seq 1 300); do grep -q "step $((from + 3)) |" "$tmp/term.err" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
rc=$?
stopped=$(grep -o "^interrupted at step [0-9]*" "$tmp/term.err" | grep -o "[0-9]*$")
if [ "$rc" -eq 143 ] && [ -n "$stopped" ] && [ "$stopped" -gt "$from" ] &&
   "$poslab" inspect "$tmp/sig/default/checkpoints/latest.pt" | grep -q "^step  *$stopped of train.max_steps 400$" &&
   [ ! -e "$tmp/sig/default/lock" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL SIGTERM stop: exit $rc, stopped at '$stopped' (from $from)"; tail -5 "$tmp/term.err"
fi
# Ctrl-C while the end-of-run report is drawn: the terminal signals the whole process group, gnuplot too (here a
# gnuplot that waits to be stopped). The run exits 130 saying the report is left for the resume, which writes it.
printf '#!/bin/sh\ntouch "%s/drawing"\nexec sleep 60\n' "$tmp" >"$tmp/slow-gnuplot" && chmod +x "$tmp/slow-gnuplot"
POSLAB_GNUPLOT=$tmp/slow-gnuplot setsid "$poslab" train --resume "$tmp/sig/default" --set run.report=true \
  --set train.max_steps=$((stopped + 1)) >"$tmp/rep.out" 2>"$tmp/rep.err" &
pid=$!
for _ in $(seq 1 600); do [ -e "$tmp/drawing" ] && break; sleep 0.1; done
kill -INT -- "-$pid"
wait "$pid"
rc=$?
if [ "$rc" -eq 130 ] && grep -q "^stopping the report (poslab train --resume writes it)" "$tmp/rep.err" &&
   grep -q "report not written: interrupted$" "$tmp/rep.err" && ! grep -q "gnuplot" "$tmp/rep.err" &&
   grep -q "^interrupted while the report was written; the training is done" "$tmp/rep.err" &&
   grep -q "^  poslab train --resume $tmp/sig/default$" "$tmp/rep.err" && [ ! -e "$tmp/sig/default/lock" ] &&
   "$poslab" train --resume "$tmp/sig/default" >/dev/null 2>&1 && [ -f "$tmp/sig/default/report/index.html" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL Ctrl-C in the report: exit $rc"; tail -8 "$tmp/rep.err"
fi
# kill -9 at random moments, three times: the latest checkpoint on disk is always readable, the stale lock
# is taken over, and the run resumes each time.
"$poslab" train configs/default.yaml "${quick[@]}" --set train.max_steps=300 --set train.checkpoint_every=2 \
  --set train.eval_every=1000 --set snapshot.every=1000 --set run.report=false --set "run.out_dir=$tmp/k9" \
  --stop-at 2 >/dev/null 2>&1
survived=0
for i in 1 2 3; do
  "$poslab" train --resume "$tmp/k9/default" >/dev/null 2>"$tmp/k9.err" &
  pid=$!
  sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 1.5 + 2.5 * rand() }')"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  "$poslab" inspect "$tmp/k9/default/checkpoints/latest.pt" >/dev/null 2>&1 && survived=$((survived + 1))
done
# A writer killed mid-checkpoint leaves latest.pt.tmp.<pid>: one is planted, and the resume removes it.
printf 'partial' >"$tmp/k9/default/checkpoints/latest.pt.tmp.999999"
if [ "$survived" -eq 3 ] && "$poslab" train --resume "$tmp/k9/default" --set train.max_steps=$(( $("$poslab" inspect \
     "$tmp/k9/default/checkpoints/latest.pt" | awk '/^step/ {print $2}') + 2 )) >/dev/null 2>"$tmp/k9.err" &&
   grep -q "stale lock" "$tmp/k9.err" && grep -q "temporary file.* left by an interrupted write" "$tmp/k9.err" &&
   [ -z "$(ls "$tmp/k9/default/checkpoints" | grep tmp)" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL kill -9: $survived of 3 checkpoints readable"; tail -5 "$tmp/k9.err"
fi
# A file-size limit (ulimit -f, 4 MiB) makes the next checkpoint write fail with EFBIG, as a full disk would:
# one error line naming the checkpoint, exit 2, the previous checkpoint intact, no temporary left, lock released,
# and the run resumes once the limit is gone.
before=$("$poslab" inspect "$tmp/k9/default/checkpoints/latest.pt" | awk '/^step/ {print $2}')
(ulimit -f 4096; exec "$poslab" train --resume "$tmp/k9/default" --set train.max_steps=$((before + 10)) \
  >/dev/null 2>"$tmp/full.err")
rc=$?
if [ "$rc" -eq 2 ] && grep -q "^error: $tmp/k9/default/checkpoints/latest.pt: cannot write checkpoint: File too large" \
     "$tmp/full.err" && grep -q "previous checkpoint is intact" "$tmp/full.err" &&
   [ "$("$poslab" inspect "$tmp/k9/default/checkpoints/latest.pt" | awk '/^step/ {print $2}')" = "$before" ] &&
   [ -z "$(ls "$tmp/k9/default/checkpoints" | grep tmp)" ] && [ ! -e "$tmp/k9/default/lock" ] &&
   "$poslab" train --resume "$tmp/k9/default" --set train.max_steps=$((before + 2)) >/dev/null 2>&1; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL file-size limit: exit $rc"; cat "$tmp/full.err"; ls -la "$tmp/k9/default/checkpoints"
fi
# The same limit at the run's very first checkpoint: the hint says none was written and names the command, which
# starts the run again in its folder once the limit is gone.
(ulimit -f 4096; exec "$poslab" train configs/default.yaml "${quick[@]}" --set train.max_steps=3 --set run.report=false \
  --set "run.out_dir=$tmp/first" >/dev/null 2>"$tmp/first.err")
rc=$?
if [ "$rc" -eq 2 ] && grep -q "checkpoints/best.pt: cannot write checkpoint: File too large" "$tmp/first.err" &&
   grep -q "then poslab train --resume $tmp/first/default: no checkpoint was written before this one" "$tmp/first.err" &&
   "$poslab" train --resume "$tmp/first/default" >/dev/null 2>"$tmp/first2.err" &&
   grep -q "holds no checkpoint: the run starts again in its folder, from step 0" "$tmp/first2.err" &&
   "$poslab" inspect "$tmp/first/default/checkpoints/latest.pt" | grep -q "^step  *3 of" &&
   [ "$(grep -c '"step":0,' "$tmp/first/default/metrics.jsonl")" -eq 1 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL file-size limit at the first checkpoint: exit $rc"; cat "$tmp/first.err" "$tmp/first2.err" \
    2>/dev/null | grep "error\|hint\|warn"
fi
# Memory. A model too large for this machine stops before anything is written, naming both sizes; under an
# address-space limit (ulimit -v) the limit is named. With the check off, the allocation that fails is one error
# line without LibTorch's stack, and the run folder it leaves goes on with --resume.
# The limit: the lowest of these the program starts under (its libraries' mappings: ~1.5 GB for Debian's LibTorch, ~3 GB
# for PyPI's with CUDA); a higher one only makes the allocation that fails come later (Debian's at 4 GB: 10 s).
vlimit=""
for v in 1500000 2000000 2500000 3000000 3500000 4000000; do
  (ulimit -v "$v"; exec "$poslab" --version) >/dev/null 2>&1 && { vlimit=$v; break; }
done
huge=(--set model.n_layer=48 --set model.n_embd=8192 --set model.n_head=64 --set run.kernels=default)
"$poslab" train configs/default.yaml "${huge[@]}" --set "run.out_dir=$tmp/huge" >/dev/null 2>"$tmp/huge.err"
rc=$?
(ulimit -v "${vlimit:-4000000}"; exec "$poslab" train configs/default.yaml "${huge[@]}" --set "run.out_dir=$tmp/huge" \
  >/dev/null 2>"$tmp/huge2.err")
rc2=$?
(ulimit -v "${vlimit:-4000000}"; POSLAB_NO_MEMORY_CHECK=1 exec "$poslab" train configs/default.yaml "${huge[@]}" \
  --set "run.out_dir=$tmp/oom" >/dev/null 2>"$tmp/oom.err")
rc3=$?
if [ "$rc" -eq 2 ] && grep -q "^error: model.n_layer 48, n_embd 8192, block_size 128, train.batch_size 32: training needs at least .* GB (38.7 billion parameters: .*) but this process may use" "$tmp/huge.err" &&
   grep -q "^hint: the model alone does not fit" "$tmp/huge.err" && [ ! -e "$tmp/huge" ] &&
   [ "$rc2" -eq 2 ] && grep -q "but this process may use .*, the address-space limit (ulimit -v ${vlimit:-4000000})" "$tmp/huge2.err" &&
   [ "$rc3" -eq 2 ] && grep -q "^error: out of memory: .*allocat" "$tmp/oom.err" && ! grep -q "frame #" "$tmp/oom.err" &&
   grep -q "^hint: make the job smaller" "$tmp/oom.err" &&
   "$poslab" train --resume "$tmp/oom/default" --set model.n_layer=1 --set model.n_embd=32 --set model.n_head=2 \
     --set train.max_steps=2 "${quick[@]}" >/dev/null 2>&1 &&
   "$poslab" inspect "$tmp/oom/default/checkpoints/latest.pt" | grep -q "^step  *2 of"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL memory: exits $rc $rc2 $rc3"; cat "$tmp/huge.err" "$tmp/huge2.err" "$tmp/oom.err" | grep "error\|hint"
fi
# A table too large to analyze in the memory given: the same one line, with a hint for an input, not a run.
python3 - "$tmp/big.npy" <<'PY'
import array, math, struct, sys
rows, cols = 40000, 8
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
header += " " * ((64 - (11 + len(header)) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    array.array("f", (math.sin(0.37 * i) for i in range(rows * cols))).tofile(f)
PY
# Its need is known before it starts (the similarity of every pair of rows): said at once, nothing allocated; an
# allocation that fails anyway (the check skipped) is named as well.
(ulimit -v 3000000; exec "$poslab" analyze "$tmp/big.npy" >/dev/null 2>"$tmp/big.err")
rc=$?
(ulimit -v 3000000; POSLAB_NO_MEMORY_CHECK=1 exec "$poslab" analyze "$tmp/big.npy" >/dev/null 2>"$tmp/big2.err")
rc2=$?
if [ "$rc" -eq 2 ] &&
   grep -q "^error: $tmp/big.npy: 40,000 positions x 8 dims: its analysis (the similarity of every pair of its 40,000 rows alone 13 GB) needs 13 GB but this process may use [0-9.]* [GM]B, the address-space limit" "$tmp/big.err" &&
   grep -q "^hint: analyse part of it: poslab analyze or report with --rows BEGIN:END (e.g. --rows 0:4096) on the table, or on one snapshot's .npy of a run; or free memory$" "$tmp/big.err" &&
   [ "$rc2" -eq 2 ] && grep -q "^error: out of memory: a tensor of [0-9.]* [GM]iB could not be allocated$" "$tmp/big2.err" &&
   ! grep -q "frame #\|enforce fail" "$tmp/big2.err" &&
   grep -q "^hint: the input needs more memory than this process may use" "$tmp/big2.err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL memory, analyze: exit $rc $rc2"; head -c 600 "$tmp/big.err" "$tmp/big2.err"
fi
# The same for a synthetic table (before it is made) and an extension (before anything is written).
(ulimit -v 3000000; exec "$poslab" analyze --synthetic random --positions 1000000 --dim 768 >/dev/null 2>"$tmp/syn.err")
rc=$?
(ulimit -v 3000000; exec "$poslab" extend "$tmp/oom/default/checkpoints/latest.pt" --to 1000000000 >/dev/null 2>"$tmp/ext.err")
rc2=$?
if [ "$rc" -eq 2 ] && grep -q "^error: --synthetic random --positions 1000000 --dim 768: the table alone needs 6.1 GB but this process may use" "$tmp/syn.err" &&
   grep -q "^hint: fewer --positions or --dim; nothing was written$" "$tmp/syn.err" &&
   [ "$rc2" -eq 2 ] && grep -q "^error: --to 1000000000: the extended table (1,000,000,000 positions x [0-9]* dims): its analysis (the similarity of every pair of its 1,000,000,000 rows alone 8.0 EB) needs 8.0 EB but this process may use" "$tmp/ext.err" &&
   grep -q "^hint: extend to fewer positions (a smaller --to); nothing was written$" "$tmp/ext.err" &&
   [ ! -e "$tmp/oom/default/extend" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL memory, a synthetic table and an extension: exit $rc $rc2"; cat "$tmp/syn.err" "$tmp/ext.err"
fi

# A run whose corpus moved since: eval names the checkpoint and the corpus, writes nothing, and scores again once the
# corpus is back.
mkdir -p "$tmp/moved" && cat docs/*.md >"$tmp/moved/corpus.txt"
"$poslab" train configs/default.yaml "${quick[@]}" --set "data.corpus=$tmp/moved/corpus.txt" --set data.tokenizer.type=char \
  --set model.n_layer=1 --set model.n_embd=32 --set model.n_head=2 --set train.max_steps=2 --set run.report=false \
  --set "run.out_dir=$tmp/moved" >/dev/null 2>&1
mv "$tmp/moved/corpus.txt" "$tmp/moved/elsewhere.txt"
expect_error "eval of a run whose corpus moved" \
  "^error: $tmp/moved/default/checkpoints/latest.pt: the run's corpus $tmp/moved/corpus.txt is not there" \
  eval "$tmp/moved/default/checkpoints/latest.pt" --batches 1
# analyze of the checkpoint measures all it can without the corpus, and says what it could not.
if grep -q "^hint: give its place with --corpus PATH (or put it back at that path)" "$tmp/err" && [ ! -e "$tmp/moved/default/eval" ] &&
   "$poslab" analyze "$tmp/moved/default/checkpoints/latest.pt" >"$tmp/out" 2>>"$tmp/err" &&
   unwrapped "$tmp/out" | grep -q " attention on val windows: not measured ($tmp/moved/corpus.txt" &&
   mv "$tmp/moved/elsewhere.txt" "$tmp/moved/corpus.txt" &&
   "$poslab" eval "$tmp/moved/default/checkpoints/latest.pt" --batches 1 >/dev/null 2>&1 &&
   [ -f "$tmp/moved/default/eval/per_position_loss_val.csv" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL eval and analyze of a moved corpus: the hint, nothing written, the corpus put back"
  cat "$tmp/err"
fi

# The same corpus changed since (a line added): eval scores it, and says that this is other text than the run's.
echo "a line added since the run" >>"$tmp/moved/corpus.txt"
if "$poslab" eval "$tmp/moved/default/checkpoints/latest.pt" --batches 1 >/dev/null 2>"$tmp/err" &&
   grep -q "warning $tmp/moved/default/checkpoints/latest.pt: the corpus changed since the checkpoint was written (data.corpus: \[$tmp/moved/corpus.txt\]): these losses score other text than the run's own split" "$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL eval of a changed corpus says so"; cat "$tmp/err"
fi

echo "cli_faults: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
