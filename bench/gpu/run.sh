#!/bin/bash
# Builds, tests and benchmarks accel on a bare GPU machine (the device machine of the run tool),
# from the repository root, with the kit made here by bench/gpu/pack.sh carried along:
#
#   run tool: command "bash bench/gpu/run.sh all", carry [".gpukit"]
#
#   bash bench/gpu/run.sh probe|build|test|check|bench|all
#     probe   what the machine has (compilers, make, pkg-config, GPU, CUDA/NCCL, PyTorch) -> env.txt
#     build   unpack .gpukit/debs into a private prefix (never into /), configure with CUDA for sm_90,
#             make -j$(nproc), check with ldd that every library resolves into the prefix or the system
#             core -> build.log
#     test    the GPU tests (tests/gpu_* listed in Makefile.am; GPU_TESTS="..." to choose) -> test.log
#     check   the whole `make check` -> test.log
#     bench   bench/gpu/gpt2_bench.sh: accel_train vs PyTorch eager / Accelerate / torch.compile on
#             GPT-2 124M (on a machine without a GPU: device=cpu and a tiny GPT) -> bench.log
#     all     probe, build, test, bench
#     env     print the environment (eval "$(bash bench/gpu/run.sh env)") to run accel by hand
#
# Everything goes to $OUT (the run tool brings it back; elsewhere .gpubuild/out): summary.txt (phase
# timestamps, results, the benchmark table), env.txt, build.log, test.log, bench.log, and logs.tar.gz
# (config.log, test logs, raw benchmark output): at most 8 files, as the run tool allows.
# The prefix and the build stay in .gpubuild/ (ignored by git): a later call on the same warm machine
# reuses them, so `run.sh bench` after `run.sh build` does not rebuild.
#
# Variables: JOBS (default nproc), NVCC_ARCH (default sm_90 only), CUDA_HOME (default /usr/local/cuda),
# GPU_TESTS, BENCH_* (see gpt2_bench.sh), GPUKIT (kit folder), GPUBUILD (work folder).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
kit=${GPUKIT:-$top/.gpukit}
work=${GPUBUILD:-$top/.gpubuild}
prefix=$work/prefix
build=$work/build
out=${OUT:-$work/out}
jobs=${JOBS:-$(nproc)}
cuda=${CUDA_HOME:-/usr/local/cuda}
multiarch=x86_64-linux-gnu
mkdir -p "$out" "$work/logs"
summary=$out/summary.txt
orig_path=$PATH
orig_ld=${LD_LIBRARY_PATH:-}

# One deadline for the whole call (the run tool stops a command at 600 s): phases and benchmark
# runs get what is left, the benchmark keeps a reserve, so the summary always gets written.
budget=${RUN_BUDGET:-560}
export ACCEL_GPU_DEADLINE=$(( $(date +%s) + budget ))
left() { echo $(( ACCEL_GPU_DEADLINE - $(date +%s) )); }
cap() { # WANTED RESERVE -> seconds a phase may take: WANTED, or what is left minus RESERVE
    local l=$(( $(left) - $2 ))
    [ "$l" -lt "$1" ] && echo $(( l > 10 ? l : 10 )) || echo "$1"
}

say() { printf '[%s +%4ds] %s\n' "$(date -u +%H:%M:%S)" "$SECONDS" "$*" | tee -a "$summary"; }
die() { say "FAILED: $*"; pack_logs; exit 1; }

# Everything detailed that is not one of the main logs goes into one archive (the run tool returns
# at most 8 files from $OUT).
pack_logs() {
    local l=$work/logs
    [ -f "$build/config.log" ] && cp "$build/config.log" "$l/" 2>/dev/null
    [ -f "$build/test-suite.log" ] && cp "$build/test-suite.log" "$l/" 2>/dev/null
    if [ -d "$build/tests" ]; then
        mkdir -p "$l/tests"
        find "$build/tests" -maxdepth 1 \( -name '*.log' -o -name '*.trs' \) -exec cp {} "$l/tests/" \; 2>/dev/null
    fi
    tar czf "$out/logs.tar.gz" -C "$work" logs 2>/dev/null
}

have_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }

# ------------------------------------------------------------------ probe
phase_probe() {
    say "probe: $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
    {
        echo "== machine"; uname -a; cat /etc/os-release 2>/dev/null | head -n 2; nproc; free -g 2>/dev/null
        echo "== tools"
        for t in gcc g++ cc make pkg-config pkgconf dpkg dpkg-deb ar tar perl python3 nvcc nvidia-smi cmake ninja; do
            printf '%-12s %s\n' "$t" "$(command -v $t || echo MISSING)"
        done
        gcc --version 2>&1 | head -n 1
        "$cuda/bin/nvcc" --version 2>&1 | tail -n 2
        echo "== GPU"; nvidia-smi 2>&1 | head -n 20
        echo "== CUDA libraries"
        ls "$cuda/lib64/" 2>&1 | grep -E '^lib(cudart|cublas|cublasLt|nccl)\.so' | tr '\n' ' '; echo
        ls "$cuda/include/nccl.h" /usr/include/nccl.h 2>&1
        ldconfig -p 2>/dev/null | grep -E 'libnccl|libcublas|libcuda\.so' | head
        echo "== python"
        python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' 2>&1 | tail -n 1
        python3 -c 'import accelerate; print("accelerate", accelerate.__version__)' 2>&1 | tail -n 1
    } > "$out/env.txt" 2>&1
    say "probe: $(grep -E '^(gcc \(|Cuda|[0-9.]+ torch|accelerate)' "$out/env.txt" | sed 's/Cuda compilation tools, /nvcc /' | tr '\n' ';' | sed 's/;$//; s/;/; /g')"
    if have_gpu; then say "probe: GPU $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -n 1)"
    else say "probe: no GPU (nvidia-smi absent or lists none): CPU build and CPU bench only"; fi
    for t in gcc g++ make pkg-config; do
        command -v $t >/dev/null || say "probe: $t is not installed here$(case $t in make|pkg-config) echo ' (the kit brings one)';; esac)"
    done
}

# ------------------------------------------------------------------ prefix + environment
unpack_prefix() {
    ls "$kit"/debs/*.deb >/dev/null 2>&1 || die "no packages in $kit/debs
--> hint: run 'sh bench/gpu/pack.sh' on the development machine and carry .gpukit"
    local stamp
    stamp=$(cat "$kit/MANIFEST" | cksum)
    if [ -f "$prefix/.stamp" ] && [ "$(cat "$prefix/.stamp")" = "$stamp" ]; then
        say "prefix: $prefix is up to date"; return 0
    fi
    rm -rf "$prefix"; mkdir -p "$prefix"
    local f n=0
    for f in "$kit"/debs/*.deb; do
        if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$f" "$prefix" || die "dpkg-deb -x $f"
        else  # no dpkg: a .deb is an ar archive holding data.tar.*
            (cd "$work" && rm -rf deb.tmp && mkdir deb.tmp && cd deb.tmp && ar x "$f" &&
             tar xf data.tar.* -C "$prefix") || die "unpacking $f with ar/tar"
        fi
        n=$((n + 1))
    done
    rm -rf "$work/deb.tmp"
    # What Debian's maintainer scripts would have made with update-alternatives.
    for f in "$prefix"/usr/bin/*.openmpi; do ln -sf "$(basename "$f")" "${f%.openmpi}"; done
    ln -sf ../openblas-pthread/pkgconfig/openblas.pc "$prefix/usr/lib/$multiarch/pkgconfig/openblas.pc"
    ln -sf ../openblas-pthread/cblas.h "$prefix/usr/include/$multiarch/cblas.h"
    ln -sf ../libpsm1/libpsm_infinipath.so.1.16 "$prefix/usr/lib/$multiarch/libpsm_infinipath.so.1"
    echo "$stamp" > "$prefix/.stamp"
    say "prefix: $n packages unpacked into $prefix ($(du -sm "$prefix" | cut -f1) MiB)"
}

setup_env() {
    local p=$prefix ld
    # Every folder of the prefix that holds shared libraries (plugin folders hold mca_*.so only).
    ld=$(find "$p" \( -type f -o -type l \) -name 'lib*.so*' -printf '%h\n' | sort -u | tr '\n' ':')
    export PATH=$p/usr/bin:$orig_path
    export LD_LIBRARY_PATH=${ld%:}${orig_ld:+:$orig_ld}
    export CPATH=$p/usr/include
    export LIBRARY_PATH=$p/usr/lib/$multiarch:$p/lib/$multiarch
    export PKG_CONFIG=$p/usr/bin/pkg-config
    export PKG_CONFIG_LIBDIR=$p/usr/lib/$multiarch/pkgconfig:$p/usr/share/pkgconfig
    export PKG_CONFIG_SYSROOT_DIR=$p
    # Relocated Open MPI and PMIx find their components, help files and orted here.
    export OPAL_PREFIX=$p/usr
    export PMIX_PREFIX=$p/usr/lib/$multiarch/pmix2 PMIX_INSTALL_PREFIX=$p/usr/lib/$multiarch/pmix2
    # PMIx 4.2 does not relocate its component folder from those (it then prints "help-pcompress.txt:
    # No such file" and runs without its plugins): name it.
    export PMIX_MCA_mca_base_component_path=$PMIX_PREFIX/lib/pmix
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
    # One node, no InfiniBand: shared memory + TCP; no UCX/OFI probing (their providers are not carried).
    export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_osc=^ucx OMPI_MCA_mtl=^ofi
    export OMPI_MCA_btl_base_warn_component_unused=0
    # Open MPI 4 refuses to start even a local daemon (mpirun, singletons) when its rsh agent is
    # missing ("plm_rsh_agent: ssh : rsh ... could not be found"); one node never calls it.
    command -v ssh >/dev/null || command -v rsh >/dev/null || export OMPI_MCA_plm_rsh_agent=false
    # For tools that must not see the prefix's libraries (PyTorch): the environment before it.
    export ACCEL_GPU_ORIG_LD_LIBRARY_PATH=$orig_ld ACCEL_GPU_ORIG_PATH=$orig_path
}

# NCCL and cuBLAS outside the toolkit (e.g. only in the PyTorch wheels, site-packages/nvidia/*):
# -I and -L flags, with a folder of unversioned link names, so configure finds them.
find_cuda_extras() {
    extra_cppflags="" extra_ldflags=""
    local sites site d lib
    sites=$( { LD_LIBRARY_PATH=$orig_ld PATH=$orig_path python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null
               ls -d /opt/torch/.venv/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages 2>/dev/null; } | sort -u)
    # name  header  library  (all three must be missing from the toolkit and the system first)
    while read -r name header lib; do
        [ -f "$cuda/include/$header" ] || [ -f "/usr/include/$header" ] || ls "$cuda"/lib64/$lib.so >/dev/null 2>&1 && continue
        for site in $sites; do
            d=$site/nvidia/$name
            [ -f "$d/include/$header" ] && ls "$d"/lib/$lib.so.* >/dev/null 2>&1 || continue
            mkdir -p "$work/links"
            for l in "$d"/lib/lib*.so.*; do b=$(basename "$l"); ln -sf "$l" "$work/links/${b%%.so.*}.so"; done
            extra_cppflags="$extra_cppflags -I$d/include"
            extra_ldflags="$extra_ldflags -L$work/links -Wl,-rpath,$d/lib"
            say "build: $name from the PyTorch wheel ($d)"
            break
        done
    done <<'LIST'
nccl nccl.h libnccl
cublas cublas_v2.h libcublas
LIST
}

# ------------------------------------------------------------------ build
phase_build() {
    local t0=$SECONDS
    unpack_prefix
    setup_env
    command -v gcc >/dev/null || die "no C compiler (gcc) on this machine: the kit does not carry one"
    mpicc -showme >/dev/null 2>&1 || die "the relocated mpicc does not work: $(mpicc -showme 2>&1 | head -n 3)"
    say "build: mpicc -> $(mpicc -showme | cut -c1-150)"
    # Generated autotools files over the working tree, checked against what they were made from.
    [ -f "$kit/autotools.tar.gz" ] || die "no $kit/autotools.tar.gz
--> hint: run 'sh bench/gpu/pack.sh' on the development machine and carry .gpukit"
    if [ -f "$kit/inputs.sha256" ] && ! (cd "$top" && sha256sum --quiet -c "$kit/inputs.sha256" >/dev/null 2>&1); then
        die "configure.ac, Makefile.am or m4/ changed since pack.sh generated configure
--> hint: run 'sh bench/gpu/pack.sh' again before sending the tree"
    fi
    [ -f "$top/config.status" ] && die "$top is configured in place (config.status): the build here is out of tree
--> hint: run 'make distclean' in $top"
    tar xzf "$kit/autotools.tar.gz" -C "$top" || die "unpacking autotools.tar.gz"
    # Newer than their inputs (which arrived with the tree), in dependency order: make must not
    # try to re-run aclocal/automake/autoconf, which this machine lacks.
    touch "$top/aclocal.m4"; sleep 1
    touch "$top/configure" "$top/build_config.h.in"; sleep 1
    touch "$top/Makefile.in"
    mkdir -p "$build"
    local cuda_arg=--without-cuda
    if [ -x "$cuda/bin/nvcc" ]; then cuda_arg=--with-cuda=$cuda; fi
    find_cuda_extras
    local arch=${NVCC_ARCH:--gencode arch=compute_90,code=sm_90}
    local tmo
    tmo=$(cap "${BUILD_TIMEOUT:-360}" 120)
    local t1 t2 rc
    (
        echo "== configure $cuda_arg NVCC_ARCH=$arch"
        cd "$build" &&
        "$top/configure" $cuda_arg NVCC_ARCH="$arch" CPPFLAGS="$extra_cppflags" LDFLAGS="$extra_ldflags"
    ) > "$out/build.log" 2>&1
    rc=$?
    t1=$SECONDS
    if [ $rc = 0 ]; then
        {
            echo "== make -j$jobs" && (cd "$build" && timeout "$tmo" make -j"$jobs") &&
            echo "== make -j$jobs check programs" && (cd "$build" && timeout "$tmo" make -j"$jobs" check TESTS=)
        } >> "$out/build.log" 2>&1
        rc=$?
    fi
    t2=$SECONDS
    grep -A 14 'configuration summary' "$out/build.log" | sed 's/^/  /' | tee -a "$summary" >/dev/null
    [ $rc = 0 ] || { tail -n 30 "$out/build.log"; die "build (rc $rc); see build.log"; }
    say "build: done in $((SECONDS - t0)) s (-j$jobs): prefix + configure $((t1 - t0)) s, make $((t2 - t1)) s"
    # A library that does not resolve is reported, but the tests and the benchmark still run:
    # they show whether it matters (an unused Open MPI plugin does not).
    check_libraries || say "build: WARNING: see the ldd report at the end of build.log"
}

# Every library the built programs load must come from the prefix, the CUDA toolkit/driver, or
# the system's core (pack.sh's BASE: libc, libstdc++, libgcc_s, zlib, zstd, gmp, udev ...):
# nothing else of the machine is assumed, and nothing may be missing.
core_libs='/(ld-linux[^/]*|lib(c|m|dl|rt|pthread|resolv|util|stdc\+\+|gcc_s|z|zstd|lzma|bz2|gmp|crypt|selinux|pcre2-8|cap|cap-ng|audit|md|udev|systemd|acl|attr|tinfo|uuid|blkid|mount)\.so[.0-9]*)$'
check_libraries() {
    local f bad=0 report=$work/logs/ldd.txt
    : > "$report"
    for f in "$build"/.libs/libaccel.so.0 "$build"/.libs/accel_train "$build"/.libs/accel \
             "$build"/.libs/accel_data "$prefix"/usr/bin/orted "$prefix"/usr/bin/pkgconf "$prefix"/usr/bin/make; do
        [ -f "$f" ] || continue
        echo "== $f" >> "$report"
        LD_LIBRARY_PATH=$build/.libs:$LD_LIBRARY_PATH ldd "$f" >> "$report" 2>&1
    done
    # Plugins of Open MPI and PMIx are loaded at run time: they must resolve too.
    for f in $(find "$prefix" -name 'mca_*.so' -o -name 'pmix_mca_*.so'); do
        ldd "$f" 2>&1 | grep -q 'not found' && { echo "== $f" >> "$report"; ldd "$f" >> "$report" 2>&1; }
    done
    if grep -q 'not found' "$report"; then
        say "build: UNRESOLVED libraries: $(grep 'not found' "$report" | awk '{print $1}' | sort -u | tr '\n' ' ')"
        bad=1
    fi
    local outside
    outside=$(grep '=>' "$report" | grep -v 'not found' | awk '{print $3}' | grep -v -e "^$prefix/" -e "^$build/" |
              grep -v -E -e "^$cuda/|/cuda|nvidia" -e "$core_libs" | sort -u)
    [ -z "$outside" ] || say "build: libraries from the machine outside the prefix and the core: $(echo $outside)"
    cat "$report" >> "$out/build.log"
    [ $bad = 0 ] && say "build: ldd: every library of accel and Open MPI/PMIx resolves (prefix + core + CUDA)"
    return $bad
}

ensure_built() {
    if [ -x "$build/accel_train" ] && [ -f "$prefix/.stamp" ]; then setup_env; return 0; fi
    phase_build
}

# ------------------------------------------------------------------ tests
phase_test() {
    local which=$1 t0=$SECONDS list rc
    ensure_built || return 1
    if [ "$which" = all ]; then list=""
    else
        list=${GPU_TESTS:-$(grep -o 'tests/gpu_[A-Za-z0-9_]*\.sh' "$top/Makefile.am" | sort -u | tr '\n' ' ')}
        if [ -z "$list" ]; then
            say "test: no tests/gpu_* in Makefile.am yet: running tests/unit.sh as a smoke test"
            list=tests/unit.sh
        fi
    fi
    local tmo
    tmo=$(cap "${TEST_TIMEOUT:-240}" $([ "$mode" = all ] && echo 240 || echo 15))
    say "test: ${list:-the whole make check} (one at a time: they share the GPU; at most $tmo s)"
    if [ -z "$list" ]; then (cd "$build" && timeout "$tmo" make -j"$jobs" check) > "$out/test.log" 2>&1
    else (cd "$build" && timeout "$tmo" make -j1 check TESTS="$list") > "$out/test.log" 2>&1; fi
    rc=$?
    [ $rc = 124 ] && say "test: STOPPED after $tmo s (TEST_TIMEOUT); the log so far is in test.log"
    grep -E '^(PASS|FAIL|SKIP|XFAIL|XPASS|ERROR):|^# (TOTAL|PASS|SKIP|FAIL|ERROR)' "$out/test.log" | tee -a "$summary"
    # Skips say why (e.g. no CUDA device): keep their reasons in the summary.
    for f in $list; do
        grep -q ':test-result: SKIP' "$build/${f%.sh}.trs" 2>/dev/null &&
            say "  skipped $(basename "$f"): $(grep -v -e '^SKIP tests/' -e '^-----' "$build/${f%.sh}.log" | tail -n 1 | cut -c1-200)"
    done
    say "test: rc $rc in $((SECONDS - t0)) s"
    return $rc
}

# ------------------------------------------------------------------ benchmark
phase_bench() {
    local t0=$SECONDS rc
    ensure_built || return 1
    say "bench: $(have_gpu && echo 'GPU: GPT-2 124M' || echo 'no GPU: tiny GPT on the CPU')"
    BENCH_RAW=$work/logs/bench bash "$top/bench/gpu/gpt2_bench.sh" "$build" > "$out/bench.log" 2>&1
    rc=$?
    sed -n '/^==== table/,$p' "$out/bench.log" | tee -a "$summary"
    say "bench: rc $rc in $((SECONDS - t0)) s"
    return $rc
}

mode=${1:-all}
if [ "$mode" = env ]; then  # for other commands in the kit's environment: eval "$(bash bench/gpu/run.sh env)"
    [ -f "$prefix/.stamp" ] || unpack_prefix >/dev/null
    setup_env
    for v in PATH LD_LIBRARY_PATH CPATH LIBRARY_PATH PKG_CONFIG PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR \
             OPAL_PREFIX PMIX_PREFIX PMIX_INSTALL_PREFIX PMIX_MCA_mca_base_component_path \
             ACCEL_GPU_ORIG_LD_LIBRARY_PATH ACCEL_GPU_ORIG_PATH $(compgen -e | grep '^OMPI_MCA_\|^OMPI_ALLOW'); do
        [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
    done
    exit 0
fi
: > "$summary"
say "run.sh $mode in $top (kit $(head -n 2 "$kit/MANIFEST" 2>/dev/null | tr '\n' ' '))"
status=0
case $mode in
    probe) phase_probe ;;
    build) phase_probe; phase_build || status=1 ;;
    test) phase_test gpu || status=1 ;;
    check) phase_test all || status=1 ;;
    bench) phase_bench || status=1 ;;
    all) phase_probe
         phase_build || status=1
         if [ $status = 0 ]; then
             phase_test gpu || status=1
             phase_bench || status=1
         fi ;;
    -h|--help|help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "usage: $0 probe|build|test|check|bench|all" >&2; exit 2 ;;
esac
pack_logs
say "run.sh $mode: $([ $status = 0 ] && echo OK || echo 'FAILED (see the logs in $OUT)') after $SECONDS s"
exit $status
