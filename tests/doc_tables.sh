#!/usr/bin/env bash
# The config key tables of the READMEs are generated from the declarations in the code
# (sim/config/schema.h): between "<!-- schema:SECTION:begin -->" and "<!-- schema:SECTION:end -->"
# a README holds exactly `faultline config schema --format markdown SECTION`. Checks that every
# table matches, that every section is in some README, and that each policy's README holds its
# policy.NAME table.
#
# usage: doc_tables.sh <path-to-faultline> <source-dir> [--write]
#   --write rewrites the tables from the binary instead of checking them (then rerun to check).
set -u

if [[ $# -lt 2 || $# -gt 3 || ( $# -eq 3 && $3 != --write ) ]]; then
  echo "usage: $0 <path-to-faultline> <source-dir> [--write]" >&2
  exit 2
fi
FAULTLINE=$1
SOURCE_DIR=$2
WRITE=${3:-}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/faultline-doc-tables.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

DOCS=("$SOURCE_DIR/configs/README.md" "$SOURCE_DIR/experiments/README.md")
for readme in "$SOURCE_DIR"/policies/*/README.md; do DOCS+=("$readme"); done

FAILED=0
problem() {
  FAILED=$((FAILED + 1))
  echo "FAIL: $1"
}

# The sections a README holds tables for, one per line.
sections_in() {
  sed -n 's/^<!-- schema:\(.*\):begin -->$/\1/p' "$1"
}

# The lines between a section's markers.
table_in() {
  awk -v begin="<!-- schema:$2:begin -->" -v end="<!-- schema:$2:end -->" \
    '$0 == end { inside = 0 } inside { print } $0 == begin { inside = 1 }' "$1"
}

# Rewrites the lines between a section's markers with the file $3.
write_table() {
  awk -v begin="<!-- schema:$2:begin -->" -v end="<!-- schema:$2:end -->" -v table="$3" '
    $0 == end { inside = 0 }
    !inside { print }
    $0 == begin { inside = 1; while ((getline line < table) > 0) print line; close(table) }
  ' "$1" >"$WORK/rewritten" && cat "$WORK/rewritten" >"$1"
}

ALL=$("$FAULTLINE" config schema | sed -n 's/^## //p')
if [[ -z $ALL ]]; then
  echo "$0: '$FAULTLINE config schema' printed no sections" >&2
  exit 2
fi
: >"$WORK/documented"
for readme in "${DOCS[@]}"; do
  [[ -f $readme ]] || continue
  rel=${readme#"$SOURCE_DIR"/}
  while IFS= read -r section; do
    echo "$section" >>"$WORK/documented"
    if ! "$FAULTLINE" config schema --format markdown "$section" >"$WORK/want" 2>"$WORK/err"; then
      problem "$rel: no section \"$section\": $(cat "$WORK/err")"
      continue
    fi
    if [[ -n $WRITE ]]; then
      write_table "$readme" "$section" "$WORK/want"
    elif ! diff <(table_in "$readme" "$section") "$WORK/want" >"$WORK/diff"; then
      problem "$rel: the table of $section differs from 'faultline config schema $section'" \
        "(regenerate: tests/doc_tables.sh build/faultline . --write)"
      sed 's/^/      /' "$WORK/diff"
    fi
  done < <(sections_in "$readme")
done

while IFS= read -r section; do
  grep -qxF "$section" "$WORK/documented" || problem "section $section is in no README"
done <<<"$ALL"
for dir in "$SOURCE_DIR"/policies/*/; do
  name=$(basename "$dir")
  sections_in "$dir/README.md" 2>/dev/null | grep -qxF "policy.$name" ||
    problem "policies/$name/README.md lacks the table of policy.$name"
done

if [[ $FAILED -ne 0 ]]; then
  echo "$FAILED problems"
  exit 1
fi
echo "every config key table matches the declarations"
