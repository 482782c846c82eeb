#!/usr/bin/env bash
# The docs cannot drift from the tool (issue 37): runs every command shown in README.md and
# docs/*.md, and checks what a reader relies on besides:
#   - README.md is at most 12288 bytes;
#   - every markdown link in README.md and docs/*.md stays inside the repository and names a file
#     that exists (resolved against the page's directory; #anchors are not checked);
#   - every docs/*.md page is listed in the index, docs/README.md;
#   - every fenced block names its language. ```sh blocks are run; ```python blocks are run with
#     PYTHON (they write the models the commands use); every other language (text for sample
#     output, json, yaml, ...) is shown, never run, and a text block must not hold a `$ ` prompt:
#     a command is shown in an sh block, its output in a text block after it. bash/shell/console
#     blocks are refused, so no command block escapes the test by its spelling.
# In an sh block each line (with its `\` continuation lines) is one of:
#   - `gaccum-tune ...`: run with bash -o pipefail, the built binary first on PATH as gaccum-tune,
#     expected to exit 0, or N when the line ends with a comment `# exit N` or the comment line
#     just before it starts with `# exit N`;
#   - `./scripts/...` or `scripts/...`: the set-up commands (install, build, run the main job or the
#     test suite). Not run here: CI runs them itself (.ci/run), and this test is part of them;
#   - blank or a comment;
#   anything else is an error: a command this machine cannot run (a GPU, torchrun, srun, a
#   second node) belongs in a text block introduced by a sentence saying what it needs.
# Pages run in one working directory, README.md first and then docs/ in the index's order, so a
# page may use what an earlier one wrote (encoder.pt, profile.json); examples/, tests/ and bench/
# are symlinks to the repository's, and outputs are relative paths in that directory. The profile
# cache (XDG_CACHE_HOME) is WORK_DIR/cache, never the user's. A command that exits otherwise than
# expected is printed with its output and the test fails after running the rest.
# Usage: run_doc_commands.sh GACCUM_TUNE REPO_ROOT WORK_DIR [PYTHON]
#   PYTHON: a python3 with torch for the ```python blocks (without one, those blocks and the
#   commands with --torchscript are skipped, with a message, as the TorchScript fixture is).
set -u
G=$1 REPO=$2 W=$3 PY=${4:-}
REPO=$(cd "$REPO" && pwd) || exit 2
G=$(cd "$(dirname "$G")" && pwd)/$(basename "$G")
[ -x "$G" ] || { echo "FAIL: $G is not an executable"; exit 2; }
CMD_TIMEOUT=${GACCUM_DOCS_CMD_TIMEOUT:-600}
README_LIMIT=12288

rm -rf "$W" && mkdir -p "$W/bin" "$W/run" "$W/logs" || exit 2
W=$(cd "$W" && pwd)
ln -s "$G" "$W/bin/gaccum-tune"
for d in examples tests bench; do ln -s "$REPO/$d" "$W/run/$d"; done
export XDG_CACHE_HOME="$W/cache"
export PATH="$W/bin:$PATH"
stamp="$W/started"; : > "$stamp"

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

have_torch=0
if [ -n "$PY" ] && [ -x "$PY" ] && "$PY" -c 'import torch' 2>/dev/null; then have_torch=1; fi

# --- README size -------------------------------------------------------------------------------
size=$(wc -c < "$REPO/README.md")
if [ "$size" -gt $README_LIMIT ]; then
  fail "README.md is $size bytes, more than $README_LIMIT: move detail to docs/"
else
  echo "ok    README.md is $size bytes (<= $README_LIMIT)"
fi

# --- the pages: README.md, then docs/ in the index's order -------------------------------------
pages=(README.md)
index="$REPO/docs/README.md"
if [ ! -f "$index" ]; then
  fail "docs/README.md (the index of docs/) is missing"
else
  pages+=(docs/README.md)
  while read -r target; do
    case "$target" in
      */*|README.md|"") ;;
      *.md) [[ " ${pages[*]} " == *" docs/$target "* ]] || pages+=("docs/$target") ;;
    esac
  done < <(sed -e 's/`[^`]*`//g' "$index" | grep -o '\]([^)#]*' | sed -e 's/^](//')
fi
for f in "$REPO"/docs/*.md; do
  rel=docs/$(basename "$f")
  [[ " ${pages[*]} " == *" $rel "* ]] || fail "$rel is not listed in the index docs/README.md"
done

# --- links -------------------------------------------------------------------------------------
# check_links PAGE: every link target outside code (fenced blocks and `spans`).
check_links() {
  local page=$1 dir target path resolved n=0
  dir=$(dirname "$REPO/$page")
  while read -r target; do
    n=$((n + 1))
    target=${target#<}; target=${target%>}
    case "$target" in
      '#'*) continue ;;
      [a-zA-Z]*:*) fail "$page links out of the repository: $target"; continue ;;
      /*) fail "$page links an absolute path: $target (use a path relative to the page)"; continue ;;
    esac
    path=${target%%#*}; path=${path%%\?*}
    resolved=$(realpath -m "$dir/$path")
    case "$resolved/" in
      "$REPO"/*) ;;
      *) fail "$page links outside the repository: $target (resolves to $resolved)"; continue ;;
    esac
    [ -e "$resolved" ] || fail "$page links a file that does not exist: $target"
  done < <(awk '/^ {0,3}(```|~~~)/ { inside = !inside; next } !inside' "$REPO/$page" |
             sed -e 's/`[^`]*`//g' |
             { grep -oE '\]\([^) ]*( "[^"]*")?\)|^ {0,3}\[[^]]+\]: *[^ ]+|<https?://[^>]*>' || true; } |
             sed -E -e 's/^\]\(//' -e 's/( "[^"]*")?\)$//' -e 's/^ *\[[^]]+\]: *//')
  echo "links $page: $n checked"
}
check_links README.md
for f in "$REPO"/docs/*.md; do check_links "docs/$(basename "$f")"; done

# --- the commands ------------------------------------------------------------------------------
ran=0 setup=0 skipped=0
t_all=$SECONDS

# run_cmd PAGE LINE EXPECTED COMMAND
run_cmd() {
  local page=$1 line=$2 want=$3 cmd=$4 log rc t0
  if [ $have_torch = 0 ] && [[ "$cmd" == *--torchscript* ]]; then
    echo "SKIP  $page:$line (no python3 with torch wrote the model): ${cmd%%$'\n'*}"
    skipped=$((skipped + 1)); return
  fi
  ran=$((ran + 1))
  log="$W/logs/$ran.log"
  t0=$SECONDS
  (cd "$W/run" && timeout "$CMD_TIMEOUT" bash -o pipefail -c "$cmd") < /dev/null > "$log" 2>&1
  rc=$?
  if [ "$rc" = "$want" ]; then
    echo "ok    $page:$line exit $rc ($((SECONDS - t0)) s): ${cmd%%$'\n'*}"
  else
    local why="exit $rc, expected $want"
    [ "$rc" = 124 ] && why="timed out after $CMD_TIMEOUT s (expected exit $want)"
    fail "$page:$line: $why ($((SECONDS - t0)) s)"
    echo "--- command"; echo "$cmd"
    echo "--- output (last 80 lines of $log)"; tail -n 80 "$log"; echo "---"
  fi
}

# run_python PAGE LINE FILE
run_python() {
  local page=$1 line=$2 src=$3 log
  if [ $have_torch = 0 ]; then
    echo "SKIP  $page:$line python block: no python3 with torch (${PY:-none given}; scripts/install-deps --test installs python3-torch)"
    skipped=$((skipped + 1)); return
  fi
  ran=$((ran + 1))
  log="$W/logs/$ran.log"
  if (cd "$W/run" && timeout "$CMD_TIMEOUT" "$PY" "$src") < /dev/null > "$log" 2>&1; then
    echo "ok    $page:$line python block"
  else
    fail "$page:$line: the python block exited $?"
    echo "--- block"; cat "$src"; echo "--- output"; tail -n 80 "$log"; echo "---"
  fi
}

# run_page PAGE: lint its fences and run its sh and python blocks in order.
fence_re='^ {0,3}(```|~~~)(.*)$'
prompt_re='^ *[$] '
exit_re='#[[:space:]]*exit[[:space:]]+([0-9]+)'
run_page() {
  local page=$1 n=0 raw line lang="" inside=0 start=0 cmd="" cmd_line=0 pending="" want trimmed
  local pysrc=""
  while IFS= read -r raw || [ -n "$raw" ]; do
    n=$((n + 1))
    if [[ "$raw" =~ $fence_re ]]; then
      if [ $inside = 0 ]; then
        inside=1 start=$n pending="" cmd=""
        lang=$(echo "${BASH_REMATCH[2]}" | awk '{print $1}')
        case "$lang" in
          "") fail "$page:$n: a fenced block without a language (sh: run by the docs test; text: output, not run)" ;;
          bash|shell|console|zsh|shell-session)
            fail "$page:$n: a \`$lang\` block: use sh (run by the docs test) or text (not run)" ;;
          python) pysrc="$W/logs/python-$(basename "$page" .md)-$n.py"; : > "$pysrc" ;;
        esac
      else
        [ -n "$cmd" ] && fail "$page:$cmd_line: the block ends inside a \\ continuation"
        [ "$lang" = python ] && run_python "$page" "$start" "$pysrc"
        inside=0 lang="" cmd=""
      fi
      continue
    fi
    [ $inside = 1 ] || continue
    case "$lang" in
      python) printf '%s\n' "$raw" >> "$pysrc"; continue ;;
      text) [[ "$raw" =~ $prompt_re ]] &&
              fail "$page:$n: a \`\$ \` prompt in a text block: show the command in an sh block (run), its output in text"
            continue ;;
      sh) ;;
      *) continue ;;
    esac
    # sh: join continuation lines into one command.
    if [ -z "$cmd" ]; then cmd_line=$n; cmd=$raw; else cmd+=$'\n'"$raw"; fi
    [[ "$raw" =~ \\$ ]] && continue
    trimmed=$(sed -e 's/^[[:space:]]*//' <<< "$cmd")
    if [ -z "$trimmed" ]; then
      :
    elif [[ "$trimmed" == '#'* ]]; then
      [[ "$trimmed" =~ ^$exit_re ]] && pending=${BASH_REMATCH[1]}
    elif [[ "$trimmed" == 'gaccum-tune '* ]]; then
      want=${pending:-0}
      [[ "${cmd##*$'\n'}" =~ $exit_re ]] && want=${BASH_REMATCH[1]}
      run_cmd "$page" "$cmd_line" "$want" "$cmd"
      pending=""
    elif [[ "$trimmed" =~ ^(\./)?scripts/ ]]; then
      echo "setup $page:$cmd_line not run here (CI runs it): ${trimmed%%$'\n'*}"
      setup=$((setup + 1)) pending=""
    else
      fail "$page:$cmd_line: not a gaccum-tune command or a set-up script, so the docs test cannot run it: ${trimmed%%$'\n'*}"
      echo "      (show it in a text block introduced by what it needs, e.g. a GPU or a cluster)"
    fi
    cmd=""
  done < "$REPO/$page"
  [ $inside = 0 ] || fail "$page:$start: a fenced block that never ends"
}

for p in "${pages[@]}"; do
  if [ -f "$REPO/$p" ]; then run_page "$p"; else fail "$p is missing"; fi
done

# No documented command may write into the repository through the symlinks.
while read -r f; do
  fail "a documented command wrote into the repository: $f"
done < <(cd "$REPO" && find examples tests bench -type f -newer "$stamp" -not -path '*/__pycache__/*' 2>/dev/null)

echo "$ran command(s) and python block(s) ran in $((SECONDS - t_all)) s; $setup set-up line(s) left to CI;" \
     "$skipped skipped; $failures failure(s)"
[ $skipped = 0 ] || echo "SKIPPED $skipped: no python3 with torch (scripts/install-deps --test installs python3-torch)"
if [ $failures = 0 ]; then echo "DOCS-OK"; exit 0; fi
exit 1
