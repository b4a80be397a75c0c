#!/usr/bin/env bash
# Launched as PyTorch users launch: torchrun --standalone --nproc_per_node 2 --no_python poslab train CONFIG trains
# one run on two processes, and only rank 0 writes the run folder and prints to stdout.
# Debian 12's torchrun (1.13) spells its options with underscores (torchrun 2.x accepts both spellings), and its
# default --redirects 0 fails under Python 3.11 before any worker starts ("AttributeError: 'NoneType' object has no
# attribute 'get'": Python 3.11 no longer lists IntFlag's 0 member); --redirects 1 --tee 1 avoids that, and then
# stdout reaches the terminal through torchrun, each line prefixed with its worker ("[default0]:").
# Usage: test_torchrun.sh POSLAB SOURCE_DIR
set -euo pipefail
poslab=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v torchrun >/dev/null || fail "torchrun is not installed (Debian's python3-torch: scripts/setup.sh installs it)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -c 200000 "$src/data/tinyshakespeare.txt" > "$tmp/corpus.txt"
cat > "$tmp/tiny.yaml" <<YAML
run: {out_dir: $tmp/runs, name: torchrun, threads: 1, report: false, device: cpu, dist_timeout_s: 30}
data: {corpus: $tmp/corpus.txt, cache_dir: $tmp/cache, tokenizer: {type: char}}
model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 16}
train: {batch_size: 8, max_steps: 6, eval_every: 3, eval_batches: 2, checkpoint_every: 3, log_every: 2}
snapshot: {every: 3}
YAML

set +e
# TMPDIR: torchrun keeps its workers' logs in a torchelastic_* folder there, which it leaves behind.
TMPDIR=$tmp torchrun --standalone --nproc_per_node 2 --no_python --redirects 1 --tee 1 "$poslab" train "$tmp/tiny.yaml" > "$tmp/out" 2> "$tmp/err"
code=$?
set -e
cat "$tmp/err" >&2
[ "$code" -eq 0 ] || fail "torchrun exited with $code"
grep -q "distributed: 2 processes (2 per machine), gloo backend" "$tmp/err" || fail "no 2-process group in the log"
grep -q "done: 6 steps" "$tmp/err" || fail "the run did not finish 6 steps"
[ "$(grep -c "runs/torchrun$" "$tmp/out")" -eq 1 ] || fail "stdout should hold rank 0's run folder once, got: $(cat "$tmp/out")"
! grep -q "\[rank 1\]" "$tmp/err" || fail "rank 1 logged more than warnings and errors"
[ -f "$tmp/runs/torchrun/checkpoints/latest.pt" ] || fail "no checkpoint"
[ "$(wc -l < "$tmp/runs/torchrun/snapshots/index.jsonl")" -eq 3 ] || fail "expected one snapshot line per snapshot (steps 0, 3, 6)"
# Read whole, then matched: grep -q on the pipe would close it on the rest of the output (SIGPIPE under pipefail).
info=$("$poslab" inspect "$tmp/runs/torchrun/checkpoints/latest.pt") || fail "inspect of the checkpoint failed"
grep -Eq "^step +6 of" <<<"$info" || fail "the checkpoint is not at step 6"
echo "PASS: torchrun trained 6 steps on 2 processes; rank 0 alone wrote $tmp/runs/torchrun"
