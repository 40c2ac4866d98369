#!/usr/bin/env bash
# Builds the Debian package dist/tocsin_<version>-1_<arch>.deb, which installs on a machine with no
# Swift toolchain (scripts/test-package.sh proves it in a clean Debian 12 root):
#   bash scripts/package.sh              # prints the .deb's path on stdout, the rest on stderr
#   bash scripts/package.sh --print-version
#
# - The binary is scripts/build-release.sh's (its header gives the flags and why: the Swift runtime,
#   standard library, FoundationEssentials, Dispatch and libstdc++ linked in, no run path), stripped.
# - Depends: is computed by dpkg-shlibdeps from the binary's NEEDED entries and the shlibs/symbols
#   files of the Debian packages that provide them, plus the packages of the libraries the binary
#   opens with dlopen (sonames in its strings); no library is typed by hand. The one named
#   dependency is tzdata: zone rules are read from /usr/share/zoneinfo at run time, which no linker
#   sees (Debian 12 has it as a required package, later releases no longer do).
# - The version is Gateway.version in Sources/TocsinGateway/Version.swift, the one source that
#   `tocsin --version` and the D-Bus Version property also show; "-1" is the Debian revision.
# - Files are those scripts/install.sh installs, for PREFIX=/usr and Debian's paths (zsh
#   completions in vendor-completions, the man page gzipped), plus /usr/share/doc/tocsin/copyright
#   (machine-readable, contrib/debian/copyright) and changelog.Debian.gz. There are no maintainer
#   scripts: installing only places files.
# - dpkg-deb, not nfpm: it ships with dpkg on every Debian system, so building needs no download
#   and no second packaging tool, and with --root-owner-group it needs no fakeroot. dpkg-shlibdeps
#   (dpkg-dev) and lintian come from Debian too (scripts/install-deps.sh).
# - Every lintian warning is fixed or explained in contrib/debian/tocsin.lintian-overrides
#   (installed as /usr/share/lintian/overrides/tocsin); lintian's errors and warnings fail this script.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

version="$(sed -n 's/^ *public static let version = "\([0-9][0-9A-Za-z.+~]*\)"$/\1/p' Sources/TocsinGateway/Version.swift)"
if [ -z "$version" ]; then
  echo "package: no 'public static let version = \"...\"' line in Sources/TocsinGateway/Version.swift" >&2
  exit 1
fi
if [ "${1:-}" = "--print-version" ]; then echo "$version"; exit 0; fi

bash scripts/install-deps.sh
say() { echo "package: $*" >&2; }
maintainer="Tocsin maintainers <maintainers@users.noreply.a-seed-b3096576.example>"
debversion="$version-1"
arch="$(dpkg --print-architecture)"
scratch="$root/.build-release-static"
# The commit's time, so a rebuild of the same commit gives the same dates (man page, changelog, mtimes).
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"

say "building tocsin $version (release, Swift runtime linked statically) in $scratch"
# swift-argument-parser's manual generator, built beside it: SwiftPM's generate-manual plugin
# would build the whole package a second time in another configuration. The script fails if
# either still loads a Swift, ICU or C++ runtime library.
bash scripts/build-release.sh tocsin generate-manual >/dev/null
built="$scratch/release/tocsin"

if readelf -d "$built" | grep -E '\((RPATH|RUNPATH)\)' >&2; then
  say "the binary has a run path (above)"; exit 1
fi

work="$scratch/package"
pkg="$work/debian/tocsin"
rm -rf "$work"
umask 022
install -d "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/usr/lib/systemd/user" "$pkg/usr/share/dbus-1/services" \
  "$pkg/usr/share/dbus-1/interfaces" "$pkg/usr/share/bash-completion/completions" \
  "$pkg/usr/share/zsh/vendor-completions" "$pkg/usr/share/fish/vendor_completions.d" \
  "$pkg/usr/share/man/man1" "$pkg/usr/share/tocsin/examples" "$pkg/usr/share/tocsin/sounds" \
  "$pkg/usr/share/doc/tocsin" "$pkg/usr/share/lintian/overrides"

install -m 0755 "$built" "$pkg/usr/bin/tocsin"
strip --strip-all --remove-section=.comment --remove-section=.note "$pkg/usr/bin/tocsin"
if grep -qF "$root" "$pkg/usr/bin/tocsin"; then
  say "the stripped binary still contains the build path $root"; exit 1
fi
sed 's|/usr/local/bin/|/usr/bin/|g; s|^# Tocsin as a systemd user service.*|# Tocsin as a systemd user service.|' \
  contrib/systemd/tocsin.service > "$pkg/usr/lib/systemd/user/tocsin.service"
# The wake-alarm drop-in only where systemd passes CAP_WAKE_ALARM on (254, 256 and later; 255 and
# older fail the unit), as scripts/install.sh decides; the package is for this machine's release.
systemd_version="$( (systemctl --version 2>/dev/null || true) | awk 'NR == 1 { print $2 }')"
if [ -n "$systemd_version" ] && { [ "$systemd_version" = 254 ] || [ "$systemd_version" -ge 256 ] 2>/dev/null; }; then
  install -d "$pkg/usr/lib/systemd/user/tocsin.service.d"
  install -m 0644 contrib/systemd/tocsin.service.d/wake-alarm.conf "$pkg/usr/lib/systemd/user/tocsin.service.d/"
else
  say "systemd ${systemd_version:-not found}: no wake-alarm drop-in (README, Sleep and wake)"
fi
sed 's|/usr/local/bin/|/usr/bin/|g' contrib/dbus/io.github.tocsin.Gateway.service \
  > "$pkg/usr/share/dbus-1/services/io.github.tocsin.Gateway.service"
install -m 0644 contrib/io.github.tocsin.Gateway1.xml contrib/io.github.tocsin.Backend1.xml "$pkg/usr/share/dbus-1/interfaces/"
install -m 0644 contrib/examples/*.toml "$pkg/usr/share/tocsin/examples/"
find contrib/sounds -maxdepth 1 -type f \( -name '*.wav' -o -name '*.oga' -o -name '*.ogg' \) \
  -exec install -m 0644 {} "$pkg/usr/share/tocsin/sounds/" \;
# bash-completion sources the file: a #! line would only mislead (lintian's bash-completion-with-hashbang).
"$built" --generate-completion-script bash | sed '1{/^#!/d}' > "$pkg/usr/share/bash-completion/completions/tocsin"
"$built" --generate-completion-script zsh > "$pkg/usr/share/zsh/vendor-completions/_tocsin"
"$built" --generate-completion-script fish > "$pkg/usr/share/fish/vendor_completions.d/tocsin.fish"
mkdir -p "$work/man"
"$scratch/release/generate-manual" "$built" --date "$(date -u -d "@$SOURCE_DATE_EPOCH" +%F)" \
  --output-directory "$work/man" >&2
gzip -9n < "$work/man/tocsin.1" > "$pkg/usr/share/man/man1/tocsin.1.gz"

install -m 0644 contrib/debian/copyright "$pkg/usr/share/doc/tocsin/copyright"
# libdbus is linked in from its archive by scripts/build-release.sh (no libdbus-1.so.3 among the
# binary's NEEDED entries): its notice and licences then come with the package.
if ! readelf -d "$built" | grep -F '[libdbus-1.so.3]' >/dev/null; then
  cat contrib/debian/copyright-libdbus >> "$pkg/usr/share/doc/tocsin/copyright"
fi
# ICU comes with Foundation's internationalization; its notice is needed only when it is linked in.
# (grep without -q reads all of nm's output: under pipefail, nm killed by SIGPIPE would fail the test.)
if nm "$built" 2>/dev/null | grep -E ' icudt[0-9]+_dat$' >/dev/null; then
  cat contrib/debian/copyright-icu >> "$pkg/usr/share/doc/tocsin/copyright"
fi
{
  echo "tocsin ($debversion) unstable; urgency=medium"
  echo
  echo "  * Tocsin $version, packaged by scripts/package.sh; CHANGELOG.md in the"
  echo "    source tells what the release holds."
  echo
  echo " -- $maintainer  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$pkg/usr/share/doc/tocsin/changelog.Debian.gz"
install -m 0644 contrib/debian/tocsin.lintian-overrides "$pkg/usr/share/lintian/overrides/tocsin"

# Depends: from the libraries the binary loads. dpkg-shlibdeps wants a debian/control naming the
# package, run from the directory that holds it.
printf 'Source: tocsin\n\nPackage: tocsin\nArchitecture: any\n' > "$work/debian/control"
depends="$(cd "$work" && dpkg-shlibdeps -O -e debian/tocsin/usr/bin/tocsin | sed -n 's/^shlibs:Depends=//p')"
if [ -z "$depends" ]; then say "dpkg-shlibdeps found no dependencies"; exit 1; fi
# A library the binary opens with dlopen (its soname is in the binary's strings, not among its
# NEEDED entries) is invisible to dpkg-shlibdeps: the package that ships it, with the version its
# shlibs file asks, joins Depends: too, so a lazily loaded libnotify still comes with the package.
needed="$(readelf -d "$built" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')"
for soname in $(grep -a -o -E 'lib[A-Za-z0-9_+-]+(-[0-9.]+)?\.so\.[0-9]+' "$pkg/usr/bin/tocsin" | sort -u); do
  grep -qxF "$soname" <<<"$needed" && continue
  owner="$( (dpkg-query -S "*/$soname" 2>/dev/null || true) | sed -n "s/^\([^:]*\):$arch: .*/\1/p;T;q")"
  if [ -z "$owner" ]; then say "the binary names $soname (for dlopen), which no installed $arch package ships"; exit 1; fi
  if grep -qE "(^|, )$owner( |,|$)" <<<"$depends"; then continue; fi
  shlibs="$(dpkg-query --control-path "$owner:$arch" shlibs)" dep=""
  if [ -n "$shlibs" ]; then
    dep="$(awk -v n="${soname%%.so.*}" -v v="${soname##*.so.}" '$1 == n && $2 == v { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }' "$shlibs")"
  fi
  say "the binary opens $soname with dlopen: Depends: ${dep:-$owner}"
  depends+=", ${dep:-$owner}"
done
# Packed relocations (DT_RELR, see scripts/build-release.sh) need glibc 2.36, which the binary states as a
# version with no symbol, GLIBC_ABI_DT_RELR; dpkg-shlibdeps counts only the versions of symbols
# used, so the libc6 requirement is raised here to the version libc6's symbols file gives it.
if grep 'Name: GLIBC_ABI_DT_RELR' <<<"$(readelf -V "$built")" >/dev/null; then
  relr="$(sed -n 's/^ GLIBC_ABI_DT_RELR@GLIBC_ABI_DT_RELR \([^ ]*\).*/\1/p' "$(dpkg-query --control-path "libc6:$arch" symbols)")"
  have="$(sed -n 's/.*libc6 (>= \([^)]*\)).*/\1/p' <<<"$depends")"
  if [ -z "$relr" ] || [ -z "$have" ]; then say "cannot find libc6's version for GLIBC_ABI_DT_RELR or in '$depends'"; exit 1; fi
  if dpkg --compare-versions "$have" lt "$relr"; then depends="${depends/"libc6 (>= $have)"/"libc6 (>= $relr)"}"; fi
  say "the binary's relocations are packed (DT_RELR): Depends: libc6 (>= $relr) at least"
fi
depends+=", tzdata"

(cd "$pkg" && find usr -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum) > "$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN/md5sums"
cat > "$pkg/DEBIAN/control" <<EOF
Package: tocsin
Version: $debversion
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --apparent-size "$pkg/usr" | cut -f1)
Depends: $depends
Recommends: default-dbus-session-bus | dbus-session-bus
Suggests: pipewire-bin | pulseaudio-utils | alsa-utils, notification-daemon
Section: utils
Priority: optional
Description: notification gateway: scheduled notifications, alarms and reminders
 Desktop apps, scripts and services ask Tocsin to tell them something at a
 time: once, on a systemd calendar expression ("Mon..Fri 09:25"), or hours
 before a deadline. The daemon keeps the schedule in SQLite, so it survives
 a crash without firing an occurrence twice, serves a D-Bus API on the
 session bus, and delivers through desktop popups, an alarm sound that rings
 until someone reacts, D-Bus signals, programs and the log.
 .
 The package holds the daemon and its CLI (tocsin), a systemd user unit,
 D-Bus activation, shell completions, a manual page and example configs.
EOF
find "$pkg" -depth -newermt "@$SOURCE_DATE_EPOCH" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +

mkdir -p dist
deb="$root/dist/tocsin_${debversion}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >&2

# What no package of ours may hold: a file outside /usr (a build path), under /usr/local, a Swift module.
listing="$(dpkg-deb -c "$deb" | awk '{ print $6 }')"
if grep -vE '^\./(usr/.*)?$' <<<"$listing" >&2 || grep -E '^\./usr/local|\.swiftmodule' <<<"$listing" >&2; then
  say "$deb holds files it must not (above)"; exit 1
fi
say "running lintian"
lintian --fail-on error,warning --display-info "$deb" >&2
say "$deb: $(du -h --apparent-size "$deb" | cut -f1) ($(stat -c %s "$deb") bytes), Depends: $depends"
echo "$deb"
