#!/usr/bin/env bash
# Lays out the build context of deploy/Containerfile in DIR (created if
# missing, emptied if not): a static courier binary, the build machine's CA
# certificates, passwd and group files naming user courier (10001), an
# empty /tmp (1777), an empty data/ for the image's /data, and the
# Containerfile.
# Then build with any of
#   buildah bud -t courier DIR
#   podman build -t courier DIR
#   docker build -t courier DIR
#
# The binary is linked statically with cgo (mattn/go-sqlite3), so it needs
# gcc and the static C library (Debian: gcc, libc6-dev), and Go's own DNS
# resolver and user lookup (netgo, osusergo). The CA bundle is taken from
# CA_CERTS (default /etc/ssl/certs/ca-certificates.crt, Debian's
# ca-certificates).
set -euo pipefail
dir=${1:?usage: deploy/stage.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
ca=${CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
[ -s "$ca" ] || { echo "stage.sh: no CA bundle at $ca (install ca-certificates or set CA_CERTS)" >&2; exit 1; }

mkdir -p "$dir"
rm -rf "${dir:?}/rootfs" "$dir/data" "$dir/Containerfile"
root=$dir/rootfs
mkdir -p "$root/usr/bin" "$root/etc/ssl/certs" "$root/tmp" "$dir/data"

(cd "$repo" && CGO_ENABLED=1 go build -trimpath \
  -tags 'osusergo netgo sqlite_omit_load_extension' \
  -ldflags '-s -w -linkmode external -extldflags "-static"' \
  -o "$root/usr/bin/courier" ./cmd/courier)
ln -s courier "$root/usr/bin/wakunode"
ln -s courier "$root/usr/bin/wakunode2"

cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\ncourier:x:10001:10001:courier:/data:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\ncourier:x:10001:\n' >"$root/etc/group"
chmod 1777 "$root/tmp"
chmod 0755 "$dir/data"
cp "$here/Containerfile" "$dir/Containerfile"
