#!/usr/bin/env bash
# poslab export read back by the real readers: tiny models of each position variant (learned, sinusoidal, none;
# with and without biases; a char and a BPE tokenizer) exported --to hf, then scripts/check_hf_export.py loads each
# with transformers' GPT2LMHeadModel and AutoTokenizer and compares logits, ids and decoded text with poslab's,
# greedy generation with poslab sample --top-k 1, and reads the model card with huggingface_hub; and
# scripts/check_tl_export.py boots the same folders in TransformerLens; one run's live TensorBoard folder, stopped
# halfway and resumed, and the same run exported --to tensorboard, read by TensorBoard's event readers and projector
# config (scripts/check_tensorboard_export.py).
# Usage: test_export.sh PATH/TO/poslab SOURCE_DIR PYTHON
#        (PYTHON: with torch, transformers, transformer-lens, sentencepiece, tensorboard)
# Exit 77 (CTest: skipped) when PYTHON lacks one of them, saying so: the pip leg's environment has them all.
set -u
poslab=$1
src=$2
python=${3:-}
# Found, not imported: importing them all takes ~10 s (transformer-lens alone ~6 s), and each check imports its own.
if [ -z "$python" ] || ! "$python" -c 'import importlib.util as u, sys
sys.exit(not all(u.find_spec(m) for m in ["transformers", "transformer_lens", "sentencepiece", "google.protobuf", "tensorboard"]))' \
     2>/dev/null; then
  echo "SKIP export: no Python with transformers, transformer-lens, sentencepiece and tensorboard beside this LibTorch" \
       "(${python:-none}); the pip leg" \
       "runs it (bash scripts/test.sh --libtorch pip installs them)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export POSLAB_CACHE_DIR="$tmp/cache" POSLAB_KERNELS=default
cd "$src" || exit 2
failed=0
tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.block_size=64 --set train.max_steps=4
      --set train.eval_every=4 --set train.eval_batches=1 --set run.report=false)
# Live TensorBoard (the first variant): the run stopped halfway holds every scalar up to its step, read by
# TensorBoard's readers; resumed to the end, every scalar once (scripts/check_tensorboard_export.py DIR RUN_DIR).
live() {
  local run=$1 when=$2
  if "$python" scripts/check_tensorboard_export.py "$run/tensorboard" "$run" >"$tmp/check.log" 2>&1; then
    echo "ok tensorboard live, $when"; sed 's/^/  /' "$tmp/check.log"
  else
    echo "FAIL tensorboard live, $when"; cat "$tmp/check.log"; failed=$((failed + 1))
  fi
}
for variant in "learned char true" "sinusoidal bpe true" "none char false"; do
  read -r position tokenizer bias <<<"$variant"
  name="$position-$tokenizer-bias_$bias"
  stop=()
  [ "$position" = learned ] && stop=(--set train.log_every=1 --set snapshot.every=2 --stop-at 2)
  if ! "$poslab" train configs/default.yaml "${tiny[@]}" --set "model.position=$position" --set "model.bias=$bias" \
       --set "data.tokenizer.type=$tokenizer" --set data.tokenizer.vocab_size=512 --set data.corpus=data/tinyshakespeare.txt \
       --set "run.name=$name" "${stop[@]}" \
       --set "run.out_dir=$tmp/runs" >"$tmp/train.log" 2>&1; then
    echo "FAIL $name: training failed"; cat "$tmp/train.log"; failed=$((failed + 1)); continue
  fi
  if [ "$position" = learned ]; then
    live "$tmp/runs/$name" "stopped at step 2"
    if ! "$poslab" train --resume "$tmp/runs/$name" >"$tmp/train.log" 2>&1; then
      echo "FAIL $name: the resume failed"; cat "$tmp/train.log"; failed=$((failed + 1)); continue
    fi
    live "$tmp/runs/$name" "resumed to step 4"
  fi
  if ! "$poslab" export "$tmp/runs/$name/checkpoints/latest.pt" --out "$tmp/hf/$name" >/dev/null 2>"$tmp/export.log"; then
    echo "FAIL $name: export failed"; cat "$tmp/export.log"; failed=$((failed + 1)); continue
  fi
  # Greedy generation across lines, as poslab samples it (the tiny models' block of 64 holds prompt and continuation).
  prompt=$'First Citizen:\nBefore we proceed\n\nAll:\n'
  "$poslab" sample "$tmp/runs/$name/checkpoints/latest.pt" --prompt "$prompt" --top-k 1 --tokens 20 >"$tmp/sample.txt" 2>/dev/null
  if "$python" scripts/check_hf_export.py "$tmp/hf/$name" --prompt "$prompt" --sample "$tmp/sample.txt" --tokens 20 \
       >"$tmp/check.log" 2>&1; then
    echo "ok $name"; grep -E '^(ok|FAIL)' "$tmp/check.log" | sed 's/^/  /'
  else
    echo "FAIL $name"; cat "$tmp/check.log"; failed=$((failed + 1))
  fi
done
# TransformerLens: the same folders, booted once in one process (its import takes seconds).
if "$python" scripts/check_tl_export.py "$tmp"/hf/* >"$tmp/check.log" 2>&1; then
  echo "ok transformer-lens"; grep -E '^(ok|FAIL|folder)' "$tmp/check.log" | sed -e "s|folder $tmp/hf/|in |" -e 's/^/  /'
else
  echo "FAIL transformer-lens"; cat "$tmp/check.log"; failed=$((failed + 1))
fi
# TensorBoard: the curves, the headline metrics and every snapshot's table, read by TensorBoard's own readers.
run="$tmp/runs/learned-char-bias_true"
if "$poslab" export "$run" --to tensorboard >"$tmp/out" 2>"$tmp/err" && [ "$(cat "$tmp/out")" = "$run/export/tensorboard" ] &&
   "$python" scripts/check_tensorboard_export.py "$run/export/tensorboard" "$run" >"$tmp/check.log" 2>&1; then
  echo "ok tensorboard"; sed 's/^/  /' "$tmp/check.log"
else
  echo "FAIL tensorboard"; cat "$tmp/err" "$tmp/check.log"; failed=$((failed + 1))
fi
echo "export: $failed failed"
[ "$failed" -eq 0 ]
