#!/usr/bin/env bash
# The unity build (CMakeLists.txt, poslab_unity) compiles up to 8 files of a target as one translation unit, so two
# files' names in anonymous namespaces meet: the same name twice is a compile error at best, and at worst an overload
# of another file's helper that a call picks silently. This test fails naming every such name (a function, type,
# constant or alias at the top of an anonymous namespace) that two files of one target define, whichever batches
# they fall in today; and every file that scripts/fuzz.sh compiles itself if a batch holds it.
# Usage: tests/unity_names.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
cd "$2" || exit 2
shopt -s nullglob
units=("$build"/unity/*.cpp)
if [ ${#units[@]} -eq 0 ]; then
  echo "FAIL no unity batches in $build/unity: this test belongs to a build configured with -DPOSLAB_UNITY=ON"
  exit 1
fi
# names FILE: the file-local names, one per line as "NAME KEY" (the code's layout: "namespace {" and "}  // namespace"
# at column 0, declarations inside at column 0). KEY is FILE, except for an alias (using X = …, namespace x = …),
# whose KEY is what it names: two files may alias one thing by one name.
names() {
  awk -v file="$1" '
    /^namespace \{/ { anon = 1; next }
    /^\}  \/\/ namespace$/ { anon = 0; next }
    !anon || /^[ \t#\/}]/ || /^$/ || /^template[ <]/ || /^[A-Z_][A-Z0-9_]*\(/ { next }
    match($0, /^(using|namespace) [A-Za-z_][A-Za-z0-9_]* = /) {
      split($0, w, " "); rhs = substr($0, RLENGTH + 1); sub(/;.*/, "", rhs); gsub(/ /, "", rhs); print w[2], rhs; next
    }
    match($0, /^(struct|class|enum class|enum|union) [A-Za-z_][A-Za-z0-9_]*/) {
      n = split(substr($0, 1, RLENGTH), w, " "); print w[n], file; next
    }
    {
      line = $0
      eq = index(line, " = "); par = index(line, "(")
      if (eq > 0 && (par == 0 || eq < par)) head = substr(line, 1, eq - 1)
      else if (par > 0) head = substr(line, 1, par - 1)
      else next
      sub(/\[[^]]*\]$/, "", head)
      if (match(head, /[A-Za-z_][A-Za-z0-9_]*$/)) { name = substr(head, RSTART, RLENGTH); if (name != "operator") print name, file }
    }' "$1" | sort -u
}
failed=0
for target in $(printf '%s\n' "${units[@]}" | sed -E 's|.*/||; s|_[0-9]+\.cpp$||' | sort -u); do
  files=$(cat "$build"/unity/"$target"_[0-9]*.cpp | grep -o '^#include "[^"]*"' | cut -d'"' -f2)
  # one line per (name, key) with the first file that has it; then each name that such lines give in two files
  dups=$(for f in $files; do names "$f" | sed "s|\$| $f|"; done | sort -k1,2 -u | awk '
    index(" " seen[$1] " ", " " $3 " ") == 0 { seen[$1] = seen[$1] " " $3; count[$1]++ }
    END { for (n in count) if (count[n] > 1) print n ":" seen[n] }' | sort)
  if [ -n "$dups" ]; then
    failed=1
    echo "FAIL $target: names in anonymous namespaces of more than one file (rename one: they meet in a unity batch):"
    echo "$dups" | sed 's/^/  /'
  fi
  echo "$target: $(echo "$files" | wc -w) files checked"
done
# scripts/fuzz.sh compiles its sources itself and links the rest of libposlab_lib.a: none of them may sit in a batch.
for src in $(bash scripts/fuzz.sh --sources); do
  if grep -q "^#include \"$src\"" "${units[@]}"; then
    failed=1
    echo "FAIL $src is in a unity batch and compiled by scripts/fuzz.sh: its functions would link twice"
  fi
done
[ "$failed" -eq 0 ]
