#!/usr/bin/env bash
# Keeps the architecture invariant of crates/rules: no I/O, async, clock or OS randomness anywhere in
# its dependency tree. Every crate the rules engine is built with must be on this list; adding one
# means reading what it does first.
set -euo pipefail
cd "$(dirname "$0")/.."

allowed=(
  missive-rules
  serde serde_core serde_derive
  thiserror thiserror-impl
  rand_core rand_chacha ppv-lite86 zerocopy zerocopy-derive
  smallvec
  proc-macro2 quote syn unicode-ident
)
# The `testing` feature (the invariant harness the crate's own tests run) adds JSON in memory,
# and nothing else.
testing_only=(serde_json itoa memchr zmij)

check() {
  local features=$1
  shift
  local list=("$@")
  while read -r name; do
    [ -z "$name" ] && continue
    ok=0
    for a in "${list[@]}"; do [ "$a" = "$name" ] && ok=1 && break; done
    if [ "$ok" = 0 ]; then
      echo "crates/rules${features:+ with --features $features} depends on '$name', which is not on the purity allowlist (scripts/check-rules-purity.sh)" >&2
      status=1
    fi
  done < <(cargo tree -p missive-rules -e normal,build ${features:+--features "$features"} --prefix none --format '{p}' --locked | awk '{print $1}' | sort -u)
}

status=0
check "" "${allowed[@]}"
check testing "${allowed[@]}" "${testing_only[@]}"

[ "$status" = 0 ] && echo "rules purity: ok"
exit "$status"
