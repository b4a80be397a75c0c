# Shared by the CLI test scripts (sourced): a temporary folder removed at exit, a fresh tokenizer cache, the pass
# and fail counters, expect_error and unwrapped. The sourcing script sets $poslab first.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export POSLAB_CACHE_DIR="$tmp/cache"
passed=0
failed=0

# expect_error NAME PATTERN ARGS...: non-zero exit, stderr matches PATTERN, no crash (exit < 128).
expect_error() {
  local name=$1 pattern=$2
  shift 2
  "$poslab" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -qE -e "$pattern" "$tmp/err"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: exit $rc, stderr:"
    cat "$tmp/err"
  fi
}

# unwrapped FILE: its text on one line, each run of spaces and newlines one space: a phrase that poslab wrapped at
# 80 columns matches whole.
unwrapped() {
  tr '\n' ' ' <"$1" | tr -s ' '
}
