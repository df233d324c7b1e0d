#!/usr/bin/env bash
# Build a root filesystem holding Debian 13's Slurm 24.11 (slurmctld, slurmd, the client commands, munge) for
# `wattplan cluster up --slurm-root DIR`, beside the host's own Slurm; nothing is installed on the host but
# mmdebstrap. Usage: deploy/slurm-rootfs.sh DIR [MIRROR]   (make slurm-rootfs DIR=...)
#
# DIR must be new, empty, or a root filesystem this script built (it holds .wattplan-slurm-rootfs, naming what it
# holds): a finished one is kept as it is, one built with other packages is deleted and built again. The libraries the
# cluster's Python programs need inside it (the interpreter itself is the host's, mounted read-only by cluster up)
# are installed with it. Needs root and Debian's package index (deb.debian.org or MIRROR).
set -euo pipefail

dir=${1:?usage: $0 DIR [MIRROR]}
mirror=${2:-http://deb.debian.org/debian}
suite=trixie
packages=slurmctld,slurmd,slurm-client,munge,procps,util-linux,libssl3t64,libffi8,libsqlite3-0,zlib1g,libbz2-1.0,liblzma5,libreadline8t64,libncursesw6,libuuid1,libexpat1
stamp_name=.wattplan-slurm-rootfs
want="debian $suite: $packages"

if [[ $(id -u) -ne 0 ]]; then
  echo "$0: needs root (mmdebstrap builds the root filesystem as root)" >&2
  exit 2
fi
if [[ -f $dir/$stamp_name ]]; then
  if [[ $(<"$dir/$stamp_name") == "$want" && -x $dir/usr/sbin/slurmctld-wlm ]]; then
    echo "$dir: already built ($want)"
    exit 0
  fi
  echo "$dir: built for something else or half-built; building it again"
  rm -rf --one-file-system -- "$dir"
elif [[ -e $dir ]] && [[ -n $(ls -A -- "$dir") ]]; then
  echo "$0: $dir is neither empty nor a root filesystem this script built ($stamp_name); not touching it" >&2
  exit 2
fi
if ! command -v mmdebstrap >/dev/null; then
  echo "installing mmdebstrap (Debian's package)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap ||
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap; }
fi
# built beside DIR and renamed into place once whole: an interrupted build leaves no DIR that looks finished
mkdir -p -- "$(dirname -- "$dir")"
partial="$dir.partial-$$"
trap 'rm -rf --one-file-system -- "$partial"' EXIT
mmdebstrap --quiet --variant=minbase --include="$packages" "$suite" "$partial" "$mirror"
printf '%s\n' "$want" >"$partial/$stamp_name"
if [[ -d $dir ]]; then rmdir -- "$dir"; fi
mv -- "$partial" "$dir"
trap - EXIT
# shellcheck disable=SC2016 # ${Version} is dpkg-query's format, not the shell's
version=$(chroot "$dir" dpkg-query -W -f '${Version}' slurmctld)
echo "$dir: slurmctld $version, ready for: wattplan cluster up --slurm-root $dir"
