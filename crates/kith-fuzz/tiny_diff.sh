#!/usr/bin/env bash
# The tiny build (RUSTFLAGS="--cfg kith_tiny": vectors, morsels and node
# groups a few values long) must answer every generated query as the normal
# build does. Both test runs of the README's command build the fuzzer's
# binary; this dumps the same queries through each and compares (issue 51).
# Usage: bash crates/kith-fuzz/tiny_diff.sh [queries] [seed]
set -euo pipefail
cd "$(dirname "$0")/../.."
queries="${1:-1500}"
seed="${2:-51}"
normal=target/release/kith-fuzz
tiny=target/tiny/release/kith-fuzz
for b in "$normal" "$tiny"; do
    if [ ! -x "$b" ]; then
        echo "tiny_diff: $b is missing; run the README's test command first" >&2
        exit 2
    fi
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$normal" --dump "$out/normal.txt" --seed "$seed" --queries "$queries"
"$tiny" --dump "$out/tiny.txt" --seed "$seed" --queries "$queries"
"$normal" --compare-dumps "$out/normal.txt" "$out/tiny.txt"
