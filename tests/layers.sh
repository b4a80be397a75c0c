#!/usr/bin/env bash
# The layering of src/: each folder may include only the folders listed for it (lower layers), so the folder graph
# stays acyclic and reads as the data flow: corpus -> tokens -> batches -> model -> loss -> step -> snapshot ->
# analysis -> report, with the file formats at the bottom and the commands on top. Fails naming every include that crosses the
# layering, and every folder that has no entry here. Usage: tests/layers.sh [SOURCE_DIR]
set -u
cd "${1:-$(dirname "$0")/..}/src" || exit 2
declare -A allowed=(
  [util]=""
  [formats]="util"
  [config]="util"
  [data]="config formats util"
  [ops]="util"
  [model]="ops config util"
  [run]="config formats util"
  [analysis]="run formats util"
  [hf]="analysis formats util"
  [distributed]="util"
  [tune]="model ops data config distributed run formats util"
  [train]="tune model ops data config analysis distributed run formats util"
  [report]="analysis run config formats util"
  [load]="train tune model ops data config analysis hf run formats util"
  [bench]="train tune model ops data config analysis run formats util"
  [extend]="load train tune model data config analysis run formats util"
  [export]="load train tune model data config analysis hf run formats util"
  [sweep]="train tune report run config util"
  [cli]="export extend bench load sweep report train tune model ops data config analysis hf distributed run formats util"
)
bad=0
checked=0
for dir in */; do
  dir=${dir%/}
  if [ -z "${allowed[$dir]+set}" ]; then
    echo "FAIL src/$dir: a folder with no place in the layering: add it to tests/layers.sh"
    bad=$((bad + 1))
    continue
  fi
  while IFS= read -r line; do
    file=${line%%:*}
    target=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$line")
    checked=$((checked + 1))
    [ "$target" = "$dir" ] && continue
    if ! grep -qw -- "$target" <<<"${allowed[$dir]}"; then
      echo "FAIL src/$file includes $target/: $dir/ may include only: ${allowed[$dir]:-nothing}"
      bad=$((bad + 1))
    fi
  done < <(grep -rHE '^#include "[a-z_]+/' "$dir")
done
echo "layers: $checked includes checked, $bad crossing the layering"
[ "$bad" -eq 0 ]
