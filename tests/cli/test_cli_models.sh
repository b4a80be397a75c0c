#!/usr/bin/env bash
# The poslab binary on other models' tables: Hugging Face model folders (tests/fixtures/hf, written by transformers)
# through analyze, inspect, report and compare, and their errors. Usage: test_cli_models.sh PATH/TO/poslab SOURCE_DIR
set -u
poslab=$1
src=$2
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$src" || exit 2

# Hugging Face model folders (tests/fixtures/hf, written by transformers): every table on its positions, in text and
# JSON; inspect lists the tables; report writes one page per table; a model without a table says what it uses.
hf=tests/fixtures/hf
if "$poslab" analyze "$hf/bart" --json "$tmp/bart.json" >"$tmp/out" 2>"$tmp/err" &&
   grep -q "^== encoder table model.encoder.embed_positions.weight (24 positions x 16) ==" "$tmp/out" &&
   grep -q "^== decoder table model.decoder.embed_positions.weight (24 positions x 16) ==" "$tmp/out" &&
   unwrapped "$tmp/out" | grep -q "positions 0..23 are rows 2..25; learned; left out: rows 0-1" &&
   [ "$(grep -c '"first_row": 2' "$tmp/bart.json")" -eq 4 ] &&
   "$poslab" analyze "$hf/gpt2" >"$tmp/out" 2>"$tmp/err" &&
   grep -q "how layer 0 reads the table (gpt2 layout, 2 heads, causal" "$tmp/out" &&
   "$poslab" analyze "$hf/vit" >"$tmp/out" 2>"$tmp/err" && grep -q "2-D grid 4 x 4: row part" "$tmp/out" &&
   "$poslab" inspect "$hf/clip" >"$tmp/out" 2>"$tmp/err" &&
   unwrapped "$tmp/out" |
     grep -q "vision vision_model.embeddings.position_embedding.weight 17 rows x 16: positions 0..15 are rows 1..16; learned, 4 x 4 patch grid" &&
   "$poslab" analyze "$hf/llama" >"$tmp/out" 2>"$tmp/err" && grep -q "no learned position table: rotary" "$tmp/out" &&
   "$poslab" report "$hf/whisper" --out "$tmp/whisper" >"$tmp/out" 2>"$tmp/err" && [ -s "$tmp/whisper/index.html" ] &&
   grep -q "whisper:model.decoder.embed_positions.weight" "$tmp/whisper/index.html" &&
   "$poslab" analyze "$hf/gpt2" --against "$hf/gpt_neo" >"$tmp/out" 2>"$tmp/err" &&
   unwrapped "$tmp/out" | grep -q "(24 positions, widths 16 and 8)" && grep -q "B's rows shuffled: " "$tmp/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL Hugging Face folders"; cat "$tmp/out" "$tmp/err"
fi
# report of a folder with two learned tables: one page per role, each printed; of a .npy without --out, a folder
# beside it named after it.
cp tests/fixtures/gpt2_wpe_rows0-63.npy "$tmp/t.npy"
if "$poslab" report "$hf/bart" --out "$tmp/bart" >"$tmp/out" 2>"$tmp/err" &&
   [ "$(cat "$tmp/out")" = "$(printf '%s\n%s' "$tmp/bart/encoder/index.html" "$tmp/bart/decoder/index.html")" ] &&
   grep -q "model.encoder.embed_positions.weight" "$tmp/bart/encoder/index.html" &&
   grep -q "model.decoder.embed_positions.weight" "$tmp/bart/decoder/index.html" &&
   "$poslab" report "$tmp/t.npy" >"$tmp/out" 2>"$tmp/err" && [ "$(cat "$tmp/out")" = "$tmp/t_report/index.html" ] &&
   [ -s "$tmp/t_report/index.html" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL report of two tables, report's default folder"; cat "$tmp/out" "$tmp/err"
fi
# Without gnuplot, a table's report writes the figures' data and scripts, and says so.
POSLAB_GNUPLOT="" expect_error "report without gnuplot" \
  "^error: gnuplot not found: the data and script files are in $tmp/nognuplot, the figures were not drawn$" \
  report "$tmp/t.npy" --out "$tmp/nognuplot"
if ! ls "$tmp/nognuplot" | grep -q '\.gp$' || ! ls "$tmp/nognuplot" | grep -q '\.dat$'; then
  failed=$((failed + 1)); echo "FAIL report without gnuplot keeps its data and scripts"; ls -la "$tmp/nognuplot"
else
  passed=$((passed + 1))
fi
# ... and once gnuplot is there, the same command draws them into that folder, as the hint says.
if "$poslab" report "$tmp/t.npy" --out "$tmp/nognuplot" >"$tmp/out" 2>"$tmp/err" && [ -s "$tmp/nognuplot/index.html" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL report again once gnuplot is there"; cat "$tmp/out" "$tmp/err"
fi
# A run's own snapshot: its report goes to the run's analysis/, not inside snapshots/ (no command writes there).
mkdir -p "$tmp/snaprun/checkpoints" "$tmp/snaprun/snapshots" && echo "model: {}" >"$tmp/snaprun/config.yaml"
cp tests/fixtures/gpt2_wpe_rows0-63.npy "$tmp/snaprun/snapshots/wpe_step000010.npy"
if "$poslab" report "$tmp/snaprun/snapshots/wpe_step000010.npy" >"$tmp/out" 2>"$tmp/err" &&
   [ "$(cat "$tmp/out")" = "$tmp/snaprun/analysis/wpe_step000010_report/index.html" ] &&
   [ "$(ls "$tmp/snaprun/snapshots")" = "wpe_step000010.npy" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL report of a run's own snapshot"; cat "$tmp/out" "$tmp/err"
fi
expect_error "report into a run's snapshots" "--out $tmp/snaprun/snapshots/sub: is a folder of the training run" \
  report "$tmp/snaprun/snapshots/wpe_step000010.npy" --out "$tmp/snaprun/snapshots/sub"
# compare on tables: two model folders (three tables) and a .npy of another width, one page, each table's report.
if "$poslab" compare "$hf/bart" "$hf/gpt_neo" tests/fixtures/gpt2_wpe_rows0-63.npy --out "$tmp/atlas" >"$tmp/out" 2>"$tmp/err" &&
   grep -q "atlas/index.html$" "$tmp/out" && grep -q "bart encoder: 24 positions x 16" "$tmp/err" &&
   [ -s "$tmp/atlas/tables/4-fixtures_gpt2_wpe_rows0_63/index.html" ] &&
   [ "$(grep -c '"positions_compared"' "$tmp/atlas/atlas.json")" -eq 6 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL compare tables"; cat "$tmp/out" "$tmp/err"
fi
# Again into its own earlier page: written anew without --force (the page is compare's, not a report's).
touch -d '2000-01-01' "$tmp/atlas/index.html"
if "$poslab" compare "$hf/bart" "$hf/gpt_neo" tests/fixtures/gpt2_wpe_rows0-63.npy --out "$tmp/atlas" >"$tmp/out" 2>"$tmp/err" &&
   [ "$(find "$tmp/atlas/index.html" -newermt '2001-01-01')" = "$tmp/atlas/index.html" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL compare tables again into its page"; cat "$tmp/out" "$tmp/err"
fi
mkdir -p "$tmp/a-run"
expect_error "compare runs and tables" "give run and sweep folders, or tables, not both" compare "$tmp/a-run" "$hf/gpt2"
expect_error "compare one table" "give two tables or more" compare "$hf/gpt2" --out "$tmp/one"
expect_error "analyze a folder of pickles" "gpt2_bin: PyTorch pickles only \(pytorch_model.bin\)" analyze "$hf/gpt2_bin"
# A GPT-2 config beside weights without its wpe (one shard of a model, a file saved without it): an error, not a run
# that says "no table" and exits 0 as for a model that has none.
mkdir -p "$tmp/nowpe" && cp "$hf/gpt2/config.json" "$hf/llama/model.safetensors" "$tmp/nowpe/"
expect_error "a GPT-2 folder without its table" "nowpe: no learned position table \(model_type gpt2 keeps a learned table \(wpe.weight\), but it is not among the [0-9]+ tensors found\)" analyze "$tmp/nowpe"
expect_error "--against a folder of two tables" "bart: 2 position tables .*: which one" analyze "$hf/gpt2" --against "$hf/bart"
# export (read back by transformers and TensorBoard in tests/export/test_export.sh): a file that is not a checkpoint.
printf 'x' >"$tmp/bad.pt"
expect_error "export a file that is not a checkpoint" "^error: .*bad.pt" export "$tmp/bad.pt" --out "$tmp/bad"
# an --out that holds files is refused before anything is read or written; --force goes on (to the checkpoint's error)
mkdir -p "$tmp/full" && printf 'mine\n' >"$tmp/full/README.md"
expect_error "export into a folder that holds files" "^error: .*full: already holds 1 file or folder \(README.md\)" \
  export "$tmp/bad.pt" --out "$tmp/full"
expect_error "export --force into it" "^error: .*bad.pt" export "$tmp/bad.pt" --out "$tmp/full" --force
[ "$(cat "$tmp/full/README.md")" = mine ] || { failed=$((failed + 1)); echo "FAIL export: README.md written over"; }

echo "cli_models: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
