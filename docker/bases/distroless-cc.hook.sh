#!/bin/sh
# mmdebstrap --extract-hook for the local stand-in of gcr.io/distroless/cc-debian12:nonroot
# (scripts/images.sh). $1 is the root filesystem that `--variant=extract` unpacked: Debian 12's
# base-files, netbase, tzdata, ca-certificates, libc6, libgcc-s1, libstdc++6, libgomp1 and libssl3
# with their dependencies, no maintainer script run. This hook does what distroless' build does
# instead of those scripts: the CA bundle, the users (root, nobody, nonroot 65532), /tmp and the
# home directories; and it removes what apt pulled in as dependencies that distroless does not
# ship (debconf, mawk, the openssl program): no shell, no interpreter, no package manager.
set -eu
root=$1
archives=$root/var/cache/apt/archives

# Files of the dependency packages distroless leaves out (directories stay: they may be shared).
for deb in "$archives"/debconf_*.deb "$archives"/mawk_*.deb "$archives"/openssl_*.deb; do
  [ -e "$deb" ] || continue
  dpkg-deb --fsys-tarfile "$deb" | tar -t | while read -r path; do
    case $path in */) continue ;; esac
    rm -f "$root/${path#./}"
  done
done
rm -rf "$root/usr/sbin/update-ca-certificates" "$root/etc/ssl/openssl.cnf.dist"

# The CA bundle update-ca-certificates would have written, from the Mozilla certificates.
mkdir -p "$root/etc/ssl/certs"
cat "$root"/usr/share/ca-certificates/mozilla/*.crt >"$root/etc/ssl/certs/ca-certificates.crt"

cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
GROUP
mkdir -p "$root/root" "$root/home/nonroot" "$root/tmp"
chmod 0700 "$root/root" "$root/home/nonroot"
chown 65532:65532 "$root/home/nonroot"
chmod 1777 "$root/tmp"

# No package database (nothing was installed through dpkg) and no downloaded packages.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root/var/lib/apt/lists"/* 2>/dev/null || true
