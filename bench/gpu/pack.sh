#!/bin/sh
# Packs what a bare GPU machine needs to build and run accel into .gpukit/ (ignored by git; carried
# to the device machine with the run tool: carry [".gpukit"]). Runs HERE, on Debian 12 with apt.
#
#   sh bench/gpu/pack.sh            (from anywhere inside the repository; about a minute)
#
# .gpukit/debs/      the Debian 12 packages accel's build and run need that a stock CUDA image lacks:
#                    Open MPI + PMIx + hwloc/libevent/libfabric/UCX, parallel HDF5 (Open MPI flavour)
#                    and its libcurl stack, libyaml, xxhash, protobuf-c (+ protoc-c), ISA-L, OpenBLAS (+ libgfortran), Check/subunit,
#                    make and pkgconf. Runtime packages come with the closure of their Depends that is
#                    not in $BASE (assumed present on any glibc system with a compiler); -dev packages
#                    come alone (headers, .pc files, link symlinks). bench/gpu/run.sh dpkg -x's them
#                    into a private prefix there, never into /.
# .gpukit/autotools.tar.gz   configure, Makefile.in, aclocal.m4, build-aux/ ... generated here from the
#                    current working tree, so the device needs no autoconf/automake/libtool.
# .gpukit/inputs.sha256  checksums of configure.ac, Makefile.am and m4/*.m4 they were made from.
# .gpukit/MANIFEST   package versions and sizes, the commit and the date.
#
# Re-run it whenever configure.ac, Makefile.am or m4/ change: the device builds the working tree it
# is sent with these generated files laid over it.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
kit=$top/.gpukit
limit_mib=${GPUKIT_LIMIT_MIB:-50}

# Present on every glibc system that can run a compiler (Debian's "required" core): never carried,
# because a second copy of these on LD_LIBRARY_PATH could shadow the device's newer ones (libc,
# libstdc++, libgcc_s, zlib, zstd, gmp are what gcc, nvcc and PyTorch load too). libudev1 (hwloc),
# libuuid1 and libdb5.3 (SASL) are carried although most systems have them: a minimal image may not.
BASE="libc6 libc-bin libgcc-s1 libstdc++6 gcc-12-base libcrypt1 zlib1g libzstd1 liblzma5 libbz2-1.0
 libgmp10 libselinux1 libpcre2-8-0 libtinfo6 libacl1 libattr1 libaudit1 libaudit-common libcap-ng0
 libcap2 libmd0 libpam0g libpam-modules libpam-modules-bin libpam-runtime libsemanage2
 libsemanage-common libsepol2 passwd adduser login debconf cdebconf dpkg tar install-info perl-base
 coreutils dash bash sed grep mawk base-files base-passwd debianutils util-linux libblkid1
 libmount1 libsmartcols1 libsystemd0 sensible-utils"
# Depended on, but not needed to build or run accel on one node: hwloc's X11/OpenCL/NVML plugins
# (10 MiB with libicu and libX11) and ssh (multi-node launch).
EXCLUDE="libhwloc-plugins openssh-client"
# Runtime roots (with their dependency closure) and development packages (alone). protoc-c is a
# runtime root: the build runs it (src/train/tb_event.proto) and it loads libprotoc/libprotobuf.
RUNTIME="libopenmpi3 openmpi-bin openmpi-common libpmix2 libhdf5-openmpi-103-1 libyaml-0-2 libxxhash0
 libjansson4 libunistring2 libprotobuf-c1 libisal2
 libopenblas0-pthread libsubunit0 make pkgconf protobuf-c-compiler"
DEVEL="libopenmpi-dev libpmix-dev libhdf5-openmpi-dev libyaml-dev libxxhash-dev libjansson-dev libpcre2-dev libunistring-dev libopenblas-pthread-dev
 check libsubunit-dev libprotobuf-c-dev libisal-dev"

command -v apt-cache >/dev/null && command -v apt-get >/dev/null ||
    { echo "pack.sh: needs apt (Debian 12): apt-cache/apt-get not found" >&2; exit 1; }
for t in autoreconf automake libtoolize; do
    command -v $t >/dev/null || { echo "pack.sh: $t not found
--> hint: apt-get install autoconf automake libtool pkg-config autoconf-archive" >&2; exit 1; }
done

in_list() { case " $(echo $2) " in *" $1 "*) return 0;; esac; return 1; }

# Direct Depends/Pre-Depends of the given packages (one apt-cache call), first alternative of each
# "a | b" group; a virtual package resolves to its first provider unless a provider is in BASE.
direct_deps() {
    apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
        --no-enhances "$@" 2>/dev/null | awk -v base=" $(echo $BASE) " '
        function flush() { if (!inbase && provider != "") print provider; pending_virtual = 0 }
        /^  *\|?(Pre)?Depends:/ {
            alt = ($0 ~ /^ *\|/); name = $2
            if (pending_virtual) flush()
            if (ingroup) { if (!alt) ingroup = 0; next }
            if (alt) ingroup = 1
            if (name ~ /^</) { pending_virtual = 1; provider = ""; inbase = 0; next }
            sub(/:any$/, "", name); print name; next }
        /^    [^ ]/ && pending_virtual { p = $1; sub(/:.*/, "", p)
            if (index(base, " " p " ")) inbase = 1; if (provider == "") provider = p; next }
        /^[^ ]/ { if (pending_virtual) flush(); ingroup = 0; next }
        { if (pending_virtual) flush() }
        END { if (pending_virtual) flush() }'
}

echo "pack.sh: resolving the dependency closure of the runtime packages"
level=$(echo $RUNTIME) seen=""
while [ -n "$level" ]; do      # breadth first, one apt-cache call per level
    new=""
    for p in $level; do
        p=${p%:amd64}
        in_list "$p" "$seen $new" || in_list "$p" "$BASE" || in_list "$p" "$EXCLUDE" || new="$new $p"
    done
    seen="$seen $new"
    level=""
    [ -z "$new" ] || level=$(direct_deps $new | sort -u | tr '\n' ' ')
done
pkgs=$(echo $seen $DEVEL | tr ' ' '\n' | sort -u)

rm -rf "$kit.new"
mkdir -p "$kit.new/debs"
echo "pack.sh: fetching $(echo $pkgs | wc -w) packages"
cd "$kit.new/debs"
missing=""
for p in $pkgs; do
    v=$(apt-cache policy "$p" | sed -n 's/^ *Candidate: //p')
    # The apt cache often holds the exact file already (epoch ':' is '%3a' in file names).
    f=$(ls /var/cache/apt/archives/${p}_$(echo "$v" | sed 's/:/%3a/')_*.deb 2>/dev/null | head -n1 || true)
    if [ -n "$f" ]; then cp "$f" .; else missing="$missing $p"; fi
done
[ -z "$missing" ] || apt-get download -q -o APT::Sandbox::User=root $missing >/dev/null ||
    { echo "pack.sh: apt-get download failed for:$missing
--> hint: apt-get update" >&2; exit 1; }
for p in $pkgs; do
    ls ${p}_*.deb >/dev/null 2>&1 || { echo "pack.sh: no .deb for $p" >&2; exit 1; }
done
cd "$top"

echo "pack.sh: generating configure and Makefile.in from the working tree"
src=$(mktemp -d)
git -C "$top" ls-files -co --exclude-standard -z | (cd "$top" && xargs -0 cp --parents -t "$src" 2>/dev/null || true)
lists=$(mktemp -d)
trap 'rm -rf "$src" "$lists"' EXIT
(cd "$src" && find . -type f | sed 's|^\./||' | sort > "$lists/before" &&
    autoreconf -fi >/dev/null 2>"$lists/autoreconf.log") ||
    { cat "$lists/autoreconf.log" >&2; echo "pack.sh: autoreconf failed" >&2; exit 1; }
(cd "$src" && find . -type f ! -path './autom4te.cache/*' | sed 's|^\./||' | sort > "$lists/after" &&
    comm -13 "$lists/before" "$lists/after" > "$lists/generated" &&
    tar czf "$kit.new/autotools.tar.gz" -T "$lists/generated")
# What the generated files were made from: run.sh refuses a tree whose build inputs changed since.
(cd "$top" && sha256sum configure.ac Makefile.am $(git ls-files -co --exclude-standard 'm4/*.m4')) \
    > "$kit.new/inputs.sha256"

{
    echo "accel GPU kit made $(date -u '+%Y-%m-%d %H:%M UTC') on $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "working tree at commit $(git -C "$top" rev-parse --short HEAD)$(git -C "$top" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
    echo "autotools: $(autoconf --version | head -n1), $(automake --version | head -n1), $(libtoolize --version | head -n1)"
    echo "generated files: $(tar tzf "$kit.new/autotools.tar.gz" | wc -l)"
    echo "packages (name version KiB):"
    for f in "$kit.new"/debs/*.deb; do
        printf '  %s %s %d\n' "$(dpkg-deb -f "$f" Package)" "$(dpkg-deb -f "$f" Version)" $(( $(stat -c %s "$f") / 1024 ))
    done
} > "$kit.new/MANIFEST"

rm -rf "$kit"
mv "$kit.new" "$kit"
total=$(du -sb "$kit" | cut -f1)
n=$(ls "$kit"/debs/*.deb | wc -l)
printf 'pack.sh: %s: %d packages + autotools files, %.1f MiB in all (limit %d MiB)\n' \
    "$kit" "$n" "$(echo "$total" | awk '{print $1 / 1048576}')" "$limit_mib"
# The run tool sends the working tree (tracked + untracked files git does not ignore) and the carried
# kit, 64 MiB at most.
tree=$(cd "$top" && git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
printf 'pack.sh: working tree %.1f MiB + kit = %.1f MiB to send (the run tool takes 64 MiB)\n' \
    "$(echo "$tree" | awk '{print $1 / 1048576}')" "$(echo "$tree $total" | awk '{print ($1 + $2) / 1048576}')"
[ $((tree + total)) -le $((64 * 1048576)) ] ||
    echo "pack.sh: WARNING: more than 64 MiB would travel: remove or ignore large untracked files" >&2
if [ "$total" -gt $((limit_mib * 1048576)) ]; then
    echo "pack.sh: the kit is larger than $limit_mib MiB: the largest packages are" >&2
    ls -S "$kit"/debs | head -n 5 >&2
    exit 1
fi
