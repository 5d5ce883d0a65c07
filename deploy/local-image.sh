#!/usr/bin/env bash
# Builds an image from a sweep binary already built on this machine, with no registry and no
# base image: `FROM scratch` plus the binary, the shared libraries it links (from `ldd`), the
# dynamic loader, CA certificates and an empty /tmp. What the container tests use.
#
#   deploy/local-image.sh target/debug/examples/sma_crossover gridtest-local:test
set -euo pipefail
bin=${1:?usage: local-image.sh BINARY TAG}
tag=${2:?usage: local-image.sh BINARY TAG}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/rootfs/tmp" "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/etc/ssl/certs"
cp "$bin" "$ctx/rootfs/usr/local/bin/gridtest-node"
strip "$ctx/rootfs/usr/local/bin/gridtest-node" 2>/dev/null || true
# Every library the binary links, and the loader, at their paths on this machine.
ldd "$bin" | awk '/=> \//{print $3} /^[[:space:]]*\/[^ ]+ \(/{print $1}' | sort -u | while read -r lib; do
    mkdir -p "$ctx/rootfs$(dirname "$lib")"
    cp -L "$lib" "$ctx/rootfs$lib"
done
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    cp /etc/ssl/certs/ca-certificates.crt "$ctx/rootfs/etc/ssl/certs/"
fi
chmod 1777 "$ctx/rootfs/tmp"
cat > "$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY rootfs/ /
ENV TMPDIR=/tmp
EXPOSE 7000 9090
ENTRYPOINT ["/usr/local/bin/gridtest-node"]
DOCKERFILE
docker build -q -t "$tag" "$ctx" >/dev/null
echo "$tag"
