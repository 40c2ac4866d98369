#!/usr/bin/env bash
# Builds products the way they ship, in .build-release-static (so it never rebuilds the
# development .build); scripts/package.sh packages what this builds, and the footprint benchmark
# measures it (docs/BENCHMARKS.md, "Footprint"):
#   bash scripts/build-release.sh [PRODUCT...]     default: tocsin; prints the directory of the binaries
#
# - --static-swift-stdlib: the Swift runtime, standard library, FoundationEssentials and Dispatch
#   are linked in, so nothing of a Swift toolchain is loaded at run time.
# - libstdc++ is linked in too. The Swift runtime is its only user, and loading the shared library
#   (with its 4,300 symbol relocations) took about a fifth of each command's start-up. The static
#   standard library's link line asks for `-lstdc++`; a linker script of that name, found first on
#   the search path, makes that one word GCC's static archive. GCC's runtime library exception
#   allows this for any program.
# - --disable-local-rpath: no $ORIGIN run path, since nothing is loaded from beside the binary.
# - -z now: every symbol is resolved at start-up, so the GOT can be read-only (lintian's
#   hardening-no-bindnow).
# - The rest keeps the idle daemon's resident pages down (docs/BENCHMARKS.md "Footprint", 1.1-1.3 MB
#   together): -z pack-relative-relocs (DT_RELR, glibc >= 2.36; package.sh raises the libc6
#   dependency to match) writes the ~48,000 relative relocations of the position-independent
#   binary as a 9 kB bitmap instead of a 1.1 MB table the loader reads at every start;
#   --no-export-dynamic undoes the --export-dynamic swiftc passes, which put all ~10,000 of the
#   binary's symbols in its dynamic symbol table (0.9 MB, searched by the loader for every symbol
#   the C libraries bind), when nothing looks them up by name (the libraries loaded with dlopen are
#   opened RTLD_LOCAL and call nothing of ours). lld, since swiftc's default linker, gold, cannot
#   write DT_RELR, and GNU ld put Swift's writable .rodata where RELRO can no longer cover the
#   relocated data.
# - libdbus is linked in from its static archive (libdbus-1-dev ships it). The shared library
#   brings libsystemd, and with it libgcrypt, libgpg-error, liblzma, libzstd, liblz4 and libcap:
#   seven more libraries mapped and about 1,500 symbol relocations done at every start of every
#   command, for two functions libdbus calls only to listen on sockets systemd passed it
#   (`systemd:` server addresses, which Tocsin never uses). Those two, sd_listen_fds and
#   sd_is_socket, are defined here as libsystemd answers without passed sockets (none, so the
#   second is never reached). SwiftPM links what pkg-config says, so a dbus-1.pc of this build's
#   own, first on PKG_CONFIG_PATH, names a directory whose libdbus-1.so is a linker script for the
#   archive and the two functions. A security fix to libdbus then reaches Tocsin with its next
#   build, as one to the Swift runtime does. About 0.5-1 MB less in the idle daemon and a fifth to
#   a quarter of each command's time (docs/BENCHMARKS.md "Footprint").
# - Every function in a section of its own (-function-sections, and -ffunction-sections for the C
#   targets), laid out in the order scripts/tocsin.link-order lists: the functions a desktop
#   session runs, packed together, those of the idle daemon first. The kernel maps code 64 KB
#   around each page a process runs, so packed code is fewer resident pages: the idle daemon's
#   code went from about 8 MB to 5 MB, then to 3.3 MB (docs/BENCHMARKS.md "Footprint").
#   The list orders functions by name, so every function the daemon runs must have one:
#   -disable-llvm-merge-functions-pass keeps the compiler from folding identical functions into
#   one body behind unnamed thunks (about 1,200 of them, 0.1 MB more code), and a linker script
#   puts the ~560 functions Swift leaves unnamed anyway (closure contexts' destroyers, metadata
#   accessors; sections .text..L*, 35 kB) just before .text, beside the packed code.
#   The list ends with the constants and zeroed data (.rodata, .bss) the idle daemon touches,
#   packed the same way: 0.2 MB fewer resident pages of .rodata and 76 kB less .bss memory.
#   scripts/link-order.sh regenerates the list; this prints how much of it still names symbols
#   of the binary. The binary is linked again on every run, because SwiftPM does not see the list
#   as an input of the link.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$PWD/.build-release-static"
products=("$@")
[ ${#products[@]} -gt 0 ] || products=(tocsin)

# The archive of the GCC installation the toolchain's clang links with (swiftc links through it).
clang="$(dirname "$(readlink -f "$(command -v swift)")")/clang"
archive="$("$clang" -print-file-name=libstdc++.a)"
if [ ! -f "$archive" ]; then
  echo "build-release: $clang finds no static libstdc++ (libstdc++.a); install libstdc++-12-dev" >&2
  exit 1
fi
stdcxx="$scratch/static-libstdc++"
mkdir -p "$stdcxx"
echo "INPUT($archive)" > "$stdcxx/libstdc++.so"

# libdbus from its archive (above).
dbuslib="$(pkg-config --variable=libdir dbus-1)"
if [ ! -f "$dbuslib/libdbus-1.a" ]; then
  echo "build-release: no $dbuslib/libdbus-1.a (libdbus-1-dev ships it)" >&2
  exit 1
fi
staticdbus="$scratch/static-libdbus"
mkdir -p "$staticdbus/pkgconfig"
cat > "$staticdbus/sd-daemon.c" <<'EOF'
/* libsystemd's answers when systemd passed no sockets (LISTEN_FDS unset), for the static libdbus
 * of scripts/build-release.sh: its only calls into libsystemd, made for `systemd:` addresses. */
int sd_listen_fds(int unset_environment) { (void)unset_environment; return 0; }
int sd_is_socket(int fd, int family, int type, int listening) {
    (void)fd; (void)family; (void)type; (void)listening;
    return 0;
}
EOF
"$clang" -O2 -fPIE -c "$staticdbus/sd-daemon.c" -o "$staticdbus/sd-daemon.o"
# An archive, not the object: the link names -ldbus-1 once per module that imports it.
rm -f "$staticdbus/libsd-daemon.a"
ar rcs "$staticdbus/libsd-daemon.a" "$staticdbus/sd-daemon.o"
echo "INPUT($dbuslib/libdbus-1.a $staticdbus/libsd-daemon.a)" > "$staticdbus/libdbus-1.so"
cat > "$staticdbus/pkgconfig/dbus-1.pc" <<EOF
Name: dbus-1
Description: libdbus linked in from its archive (scripts/build-release.sh)
Version: $(pkg-config --modversion dbus-1)
Libs: -L$staticdbus -ldbus-1
Cflags: $(pkg-config --cflags dbus-1)
EOF
export PKG_CONFIG_PATH="$staticdbus/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

# The functions Swift leaves unnamed, which the ordering list cannot name (above).
unnamed="$scratch/unnamed-functions.ld"
cat > "$unnamed" <<'EOF'
SECTIONS { .text.unnamed : { *(.text..L*) } } INSERT BEFORE .text;
EOF

order="$PWD/scripts/tocsin.link-order"
flags=(-c release --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker now
       -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic
       -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections
       -Xswiftc -Xfrontend -Xswiftc -disable-llvm-merge-functions-pass
       -Xlinker "--symbol-ordering-file=$order" -Xlinker --no-warn-symbol-ordering
       -Xlinker "--script=$unnamed"
       -Xlinker "-L$stdcxx" --scratch-path "$scratch")
# SwiftPM recompiles nothing when only flags passed to the frontend change (seen with
# -disable-llvm-merge-functions-pass), so the build starts afresh unless the last build in the
# scratch directory was this script's with these flags: the stamp is written after a build
# succeeds, and any later build (by hand, or by an older checkout's script) rewrites release.yaml.
stamp="$scratch/build-release.flags"
if [ "$(cat "$stamp" 2>/dev/null)" != "${flags[*]}" ] || [ "$scratch/release.yaml" -nt "$stamp" ]; then
  rm -rf "$scratch/release" "$scratch"/*/release "$stamp"
fi
for product in "${products[@]}"; do
  rm -f "$scratch/release/$product"
  swift build "${flags[@]}" --product "$product" >&2
  dynamic="$(readelf -d "$scratch/release/$product")"
  if grep -E 'NEEDED.*(swift|Foundation|dispatch|BlocksRuntime|icu|stdc\+\+|dbus|systemd)' <<<"$dynamic" >&2; then
    echo "build-release: $product still loads a library linked in statically (above)" >&2
    exit 1
  fi
  if [ "$product" = tocsin ]; then
    listed=$(grep -vc '^#' "$order")
    found=$(nm --defined-only "$scratch/release/$product" | awk '{ print $3 }' | sort -u |
            grep -cxF -f - <(grep -v '^#' "$order") || true)
    echo "build-release: $found of the $listed names scripts/tocsin.link-order lists are in tocsin" \
         "(when far fewer, regenerate it: scripts/link-order.sh)" >&2
  fi
done
printf '%s' "${flags[*]}" > "$stamp"
echo "$scratch/release"
