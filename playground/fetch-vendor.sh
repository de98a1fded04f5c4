#!/usr/bin/env bash
# Re-fetches the playground's vendored JavaScript from the npm registry: the built ES module
# of each package, and its licence, into playground/static/vendor/. The binary embeds those
# files, so nobody needs npm to build or run Phaseflow; only this script does.
#
# To move to a new version: change it below, run the script, set the printed sha256 of the
# new tarball in place of the old one, run it again, check the page (go test ./tests -run
# Browser), and update the versions in README.md.
set -euo pipefail
cd "$(dirname "$0")"

# name  version  sha256 of the npm tarball  file in the tarball  name in vendor/
packages=(
  "marked    18.2.1 d66c5213fc203466186060105b01f51896764ba64b3797d2620d02e28e34b8ca lib/marked.esm.js   marked.esm.js"
  "dompurify 3.4.18 8b86f79c6481fec23dd81d4de32179422668912ed033c0c47e786a6e70cb3379 dist/purify.es.mjs  purify.es.mjs"
  "js-yaml   4.3.2  c7b241d2224cf9253ff53854aa4cee87da91bd889c4d0fa3a3ffd1041ecee5b1 dist/js-yaml.mjs    js-yaml.mjs"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=static/vendor
mkdir -p "$out"
for line in "${packages[@]}"; do
  read -r name version sum file target <<<"$line"
  tarball=$(cd "$work" && npm pack --silent "$name@$version")
  got=$(sha256sum "$work/$tarball" | cut -d' ' -f1)
  if [ "$got" != "$sum" ]; then
    echo "fetch-vendor: $name@$version tarball has sha256 $got, want $sum" >&2
    exit 1
  fi
  mkdir -p "$work/$name"
  tar -xzf "$work/$tarball" -C "$work/$name"
  # The source map is not vendored; drop the comment naming it, so a browser's developer
  # tools do not ask the server for a file it does not have.
  sed '/^\/\/# sourceMappingURL=/d' "$work/$name/package/$file" >"$out/$target"
  cp "$work/$name/package/LICENSE" "$out/$name.LICENSE.txt"
  echo "fetch-vendor: $name@$version -> $out/$target"
done
