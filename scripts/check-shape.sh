#!/usr/bin/env bash
# Lists every function longer than a screenful and every class or struct with more data
# members than one can keep in mind, under src/ (or the files and directories named),
# and exits non-zero when anything is over that the allow-list does not name.
#   scripts/check-shape.sh                      check src/ against scripts/shape-allow.txt
#   scripts/check-shape.sh src/cli src/fleet    check only these
#   --max-lines N       longest function allowed (default 80 lines, signature to closing brace)
#   --max-members N     most data members in one class or struct (default 20; static ones
#                       are not counted, they are not per-object state)
#   --allow FILE        the allow-list (default scripts/shape-allow.txt; /dev/null: none)
#   --all               also list what is over but allowed
# Each allow-list line is `PATH:NAME  REASON`, NAME as this script prints it (anonymous
# namespaces left out); a line without a reason is an error, so that every exception says
# why it is one. Entries that no longer match anything over the limits are reported as
# stale, without failing (only when all of src/ is checked). Lambdas count inside their
# function; a lambda is listed on its own only when it is not inside one (a
# namespace-scope initialiser). Exit status: 0 nothing over, 1 something over, 2 misuse.
# Needs Universal Ctags (Debian: universal-ctags; scripts/deps.sh --test installs it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
max_lines=80
max_members=20
allow="$root/scripts/shape-allow.txt"
all=0
paths=()
while [ $# -gt 0 ]; do
  case "$1" in
    --max-lines) max_lines="$2"; shift 2 ;;
    --max-members) max_members="$2"; shift 2 ;;
    --allow) allow="$2"; shift 2 ;;
    --all) all=1; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-shape: unknown option $1" >&2; exit 2 ;;
    *) paths+=("$1"); shift ;;
  esac
done
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "check-shape: needs Universal Ctags (apt-get install universal-ctags)" >&2
  exit 2
fi
if [ ! -r "$allow" ]; then
  echo "check-shape: cannot read the allow-list $allow" >&2
  exit 2
fi
# Every exception says why it is one.
if ! LC_ALL=C awk -v allow="$allow" '
    /^[ \t]*(#|$)/ { next }
    NF < 2 { printf "check-shape: %s:%d: %s has no reason\n", allow, FNR, $1 > "/dev/stderr"; bad = 1 }
    END { exit bad }' "$allow"; then
  exit 2
fi
cd "$root"
whole=0
if [ ${#paths[@]} -eq 0 ]; then paths=(src); whole=1; fi

# One line a tag: file, kind, first line, last line, kind of scope, scope, name, properties.
# Functions, classes, structs, unions and their data members; prototypes are off, so a
# member function declared in its class is not taken for data.
ctags -x --sort=no --_xformat='%F	%K	%n	%{end}	%{scopeKind}	%{scope}	%N	%{C++.properties}' \
  --languages=C++ --fields=+neKZ --fields-C++=+'{properties}' --kinds-C++=fcsmu \
  -R "${paths[@]}" |
LC_ALL=C awk -F'\t' -v max_lines="$max_lines" -v max_members="$max_members" \
  -v allow="$allow" -v all="$all" -v whole="$whole" '
  # Anonymous namespaces and types get ctags names made of a hash: leave them out, so a
  # name stays the same from one run to the next.
  function display(scope, name,    parts, n, i, out) {
    n = split(scope, parts, "::")
    out = ""
    for (i = 1; i <= n; i++) {
      if (parts[i] == "" || parts[i] ~ /^__anon/) continue
      out = out parts[i] "::"
    }
    return out name
  }
  BEGIN {
    while ((getline line < allow) > 0) {
      if (line ~ /^[ \t]*(#|$)/) continue
      split(line, word, /[ \t]+/)
      allowed[word[1] == "" ? word[2] : word[1]] = 1
    }
  }
  $2 == "function" && $4 != "" {
    # A lambda inside a function is part of that function and counted with it.
    if ($7 ~ /^__anon/ && $5 == "function") next
    name = ($7 ~ /^__anon/) ? "lambda in " display($6, "") : display($6, $7)
    sub(/::$/, "", name)
    n = $4 - $3 + 1
    if (n > max_lines) report($1, $3, "function " name, n " lines", $1 ":" name, n)
    next
  }
  $2 == "class" || $2 == "struct" || $2 == "union" {
    start[$1 "\t" ($6 == "" ? "" : $6 "::") $7] = $3
    next
  }
  $2 == "member" && ($5 == "class" || $5 == "struct" || $5 == "union") && $8 !~ /static/ {
    members[$1 "\t" $6]++
    if (!(($1 "\t" $6) in kind)) kind[$1 "\t" $6] = $5
    next
  }
  function report(file, line, what, size, key, n) {
    if (key in allowed) {
      used[key] = 1
      allowed_over++
      if (all) printf "%s:%s: %s: %s (allowed)\n", file, line, what, size
      return
    }
    over++
    printf "%s:%s: %s: %s\n", file, line, what, size
  }
  END {
    for (k in members) {
      if (members[k] <= max_members) continue
      split(k, f, "\t")
      name = display(f[2], "")
      sub(/::$/, "", name)
      if (f[2] ~ /__anon[^:]*$/) name = "in " name
      line = (k in start) ? start[k] : "?"
      report(f[1], line, (f[2] ~ /__anon[^:]*$/ ? "anonymous " : "") kind[k] " " name, members[k] " data members", f[1] ":" name)
    }
    # Only a check of all of src/ can tell that an entry matches nothing.
    for (key in allowed)
      if (whole && !(key in used))
        printf "check-shape: stale allow-list entry (nothing over there): %s\n", key > "/dev/stderr"
    printf "check-shape: %d over (functions over %d lines, classes over %d data members), %d allowed\n",
      over, max_lines, max_members, allowed_over > "/dev/stderr"
    exit over > 0 ? 1 : 0
  }
' | LC_ALL=C sort -t: -k1,1 -k2,2n
