#!/bin/bash
# Tries the GPU kit on a bare system here, before spending device time: a Debian 12 minbase chroot
# with only gcc/g++ added (no make, pkg-config, autotools, Python or MPI), the CUDA toolkit
# bind-mounted read-only, a fresh copy of the working tree (new mtimes, as the run tool makes) and
# .gpukit; then `bench/gpu/run.sh MODE` inside it. Needs root, debootstrap (apt-get install
# debootstrap) and the Debian mirror the first time (about 3 minutes; the chroot is kept).
#
#   bash bench/gpu/bare_check.sh [MODE [CHROOT]]     MODE: all (default), build, test, bench, ...
#                                                   CHROOT: /tmp/accel-bare-chroot
# Extra variables for run.sh (GPU_TESTS, BENCH_*, JOBS) pass through. Logs: CHROOT/root/out.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-all}
c=${2:-/tmp/accel-bare-chroot}
[ "$(id -u)" = 0 ] || { echo "bare_check.sh: needs root (chroot, mount)" >&2; exit 1; }
[ -d "$top/.gpukit/debs" ] || { printf 'bare_check.sh: no .gpukit\n--> hint: sh bench/gpu/pack.sh\n' >&2; exit 1; }

if [ ! -x "$c/usr/bin/gcc" ]; then
    command -v debootstrap >/dev/null || { echo "bare_check.sh: apt-get install debootstrap" >&2; exit 1; }
    echo "bare_check.sh: making a minbase chroot in $c (a few minutes)"
    [ -x "$c/bin/sh" ] || debootstrap --variant=minbase bookworm "$c" http://deb.debian.org/debian >/dev/null
    cp /etc/resolv.conf "$c/etc/resolv.conf"
    chroot "$c" sh -c 'apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends gcc g++ libc6-dev >/dev/null'
fi

mounted=""
cleanup() { for m in $mounted; do umount -R "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM
mkdir -p "$c/proc" "$c/dev" "$c/sys"
mount -t proc proc "$c/proc" && mounted="$c/proc $mounted"
mount --rbind /dev "$c/dev" && mount --make-rslave "$c/dev" && mounted="$c/dev $mounted"
mount --bind /sys "$c/sys" && mounted="$c/sys $mounted"
if [ -d /usr/local/cuda/bin ]; then
    cuda=$(readlink -f /usr/local/cuda)
    mkdir -p "$c$cuda"
    mount --bind "$cuda" "$c$cuda" && mount -o remount,bind,ro "$c$cuda" && mounted="$c$cuda $mounted"
    [ "$cuda" = /usr/local/cuda ] || ln -sfn "$cuda" "$c/usr/local/cuda"
fi

echo "bare_check.sh: copying the working tree and .gpukit into $c/root/accel"
rm -rf "$c/root/accel" "$c/root/out"
mkdir -p "$c/root/accel" "$c/root/out"
(cd "$top" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$c/root/accel" 2>/dev/null || true)
cp -r "$top/.gpukit" "$c/root/accel/"

# run.sh's variables that are set here go along.
for v in GPU_TESTS JOBS RUN_BUDGET BENCH_SHAPE BENCH_MICRO BENCH_STEPS BENCH_WARMUP BENCH_MODES BENCH_DEVICE; do
    [ -z "${!v+x}" ] || printf 'export %s=%q\n' "$v" "${!v}"
done > "$c/root/env.sh"
status=0
chroot "$c" env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
    OUT=/root/out bash -c ". /root/env.sh; cd /root/accel && bash bench/gpu/run.sh $mode" || status=$?
echo "bare_check.sh: run.sh $mode exited $status; logs in $c/root/out"
exit $status
