#!/usr/bin/env bash
# scripts/apt-download.sh SUITE ARCH PACKAGE DIR: fetches one Debian package (a .deb,
# not installed) into DIR and prints its path on stdout.
#
# The machine's own apt sources, state and architectures stay as they are: the
# package list comes from a private sources list naming deb.debian.org's SUITE main
# for ARCH, kept with its index under DIR/apt (used through -o Dir::Etc::SourceList,
# Dir::State::Lists and Dir::Cache). Needs apt-get and Debian's archive keyring
# (/usr/share/keyrings/debian-archive-keyring.gpg, which holds the keys of the
# current and next release). Used by scripts/test-dist.sh (musl:arm64) and
# scripts/compat.sh (Debian 13's libc6, for a server that needs glibc >= 2.38).
# Progress and errors go to stderr; exits non-zero when the download fails.
set -euo pipefail

if [ $# -ne 4 ]; then
  echo "usage: $0 SUITE ARCH PACKAGE DIR" >&2
  exit 2
fi
suite=$1 arch=$2 package=$3 dir=$4
command -v apt-get >/dev/null 2>&1 || {
  echo "apt-download: no apt-get on this machine (a Debian or Ubuntu tool)" >&2
  exit 2
}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || {
  echo "apt-download: no $keyring (install debian-archive-keyring)" >&2
  exit 2
}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
state=$dir/apt
rm -rf "$state"
mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
echo "deb [arch=$arch signed-by=$keyring] http://deb.debian.org/debian $suite main" >"$state/sources.list"
opts=(-o "Dir::Etc::SourceList=$state/sources.list" -o "Dir::Etc::SourceParts=$state/none"
  -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache"
  -o "APT::Architectures::=$arch" -o "Debug::NoLocking=1")
apt-get "${opts[@]}" -qq update >&2
# apt-get download writes into the current directory.
rm -f "$dir/${package%%:*}"_*.deb
(cd "$dir" && apt-get "${opts[@]}" -qq download "$package") >&2
# The index (tens of MB) is needed only for this download.
rm -rf "$state"
deb=$(find "$dir" -maxdepth 1 -name "${package%%:*}_*.deb" | head -n 1)
[ -n "$deb" ] || {
  echo "apt-download: apt-get download $package left no .deb in $dir" >&2
  exit 1
}
echo "$deb"
