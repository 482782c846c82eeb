# Shared by the journey scripts (sourced): fail with a file's contents, and read / run the command
# tune printed after "Next:" exactly as printed (gaccum-tune being $G).
fail() { echo "FAIL: $1"; [ -n "${2:-}" ] && cat "$2"; exit 1; }
# next_command TUNE_STDOUT: the printed command without its leading "gaccum-tune ".
next_command() { grep -A1 '^Next:' "$1" | tail -1 | sed -e 's/^  gaccum-tune //'; }
# run_next TUNE_STDOUT OUT_FILE [ARGS...]: runs it with ARGS appended; exits with its exit code.
run_next() {
  local cmd
  cmd=$(next_command "$1")
  local out=$2
  shift 2
  eval "\"$G\" $cmd \"\$@\"" > "$out" 2>&1
}
