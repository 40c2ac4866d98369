#!/usr/bin/env bash
# Proof that the Debian package installs and works on a machine that has never seen Swift:
#   bash scripts/test-package.sh [dist/tocsin_<version>-1_<arch>.deb]   (default: scripts/package.sh builds it)
#
# It makes a clean Debian 12 (bookworm) root with mmdebstrap, copies the .deb in, and there:
# `apt install ./tocsin_….deb` (dependencies resolve from the package's own Depends:), checks that
# no Swift file exists anywhere and that every library the binary loads or names for dlopen is
# installed, runs `tocsin --version`, `tocsin check` of the installed examples and `tocsin next` as
# a user, then installs dbus-daemon (a test tool) and, in dbus-run-session, runs `tocsin daemon`,
# `tocsin schedule --after 2s`, waits for the log backend's line of the firing, posts a popup,
# which libnotify must fail to show for want of a notification server (so it loaded), and checks
# `tocsin status`. It stops the
# daemon and lets D-Bus activation start the installed one from its activation file. Last,
# `apt purge tocsin` must leave none of the package's files (`dpkg -L`, captured before).
#
# mmdebstrap rather than debootstrap: it fetches and unpacks with apt in one pass (95 s against
# 144 s for debootstrap here, both --variant=minbase), runs this script's root part as a hook with
# /proc, /dev and /sys mounted and unmounts them itself whatever happens, and with --format=null
# deletes the root afterwards, so nothing is left or cached between runs. --variant=minbase: only
# the Essential packages and apt, i.e. the least a Debian system has, which makes missing
# Depends: show. Recommends are not installed: the proof is that Depends: alone suffices.
# If the root cannot be made (no network, no mirror), this says so and fails; it never skips.
set -euo pipefail

say() { echo "test-package: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

# Bounded wait for a condition (a command), polling it: $1 seconds, then the command.
wait_for() {
  local seconds="$1"; shift
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# ---- Inside the root, as root: install, then hand over to a user. ----
inside() {
  local deb="$1"
  export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
  say "root ready: Debian $(cat /etc/debian_version), $(dpkg-query -W -f='${binary:Package}\n' | wc -l) packages"
  no_swift "before installing"
  cd "$(dirname "$deb")"
  # What a user types; apt warns that its CLI is not stable, which does not matter here.
  { apt install -y --no-install-recommends "./$(basename "$deb")" 2>&1 || fail "apt install of $(basename "$deb") failed"; } \
    | grep -v 'does not have a stable CLI' >&2
  dpkg-query -W -f='${Status}\n' tocsin | grep -qx 'install ok installed' || fail "tocsin is not installed"
  no_swift "after installing"
  if ldd /usr/bin/tocsin | grep -E 'not found|swift' >&2; then fail "/usr/bin/tocsin misses a library (above)"; fi
  # Libraries it opens later with dlopen (named in its strings) must be installed too.
  local soname libraries
  libraries="$(ldconfig -p)"
  for soname in $(grep -a -o -E 'lib[A-Za-z0-9_+-]+(-[0-9.]+)?\.so\.[0-9]+' /usr/bin/tocsin | sort -u); do
    grep -qF $'\t'"$soname (" <<<"$libraries" || fail "/usr/bin/tocsin names $soname, which is not installed"
  done
  dpkg -L tocsin > /tmp/files-before-purge
  local version
  version="$(dpkg-query -W -f='${Version}' tocsin)"
  useradd --create-home --shell /bin/bash tester
  as_user --checks "${version%-*}"
  # A test tool, not a dependency: dbus-run-session and the session bus's configuration.
  apt-get install -y --no-install-recommends dbus-daemon >/dev/null || fail "could not install dbus-daemon in the root"
  # In a PID namespace of its own: when the session ends, the kernel ends whatever it left (a
  # daemon that D-Bus activation started is no child of ours), so nothing outlives the root.
  # (No --mount-proc: in a chroot, / is no mount point to make private; /proc shows the host's pids.)
  unshare --pid --fork bash /tmp/test-package.sh --as-user --session "${version%-*}"
  { apt purge -y tocsin 2>&1 || fail "apt purge tocsin failed"; } | grep -v 'does not have a stable CLI' >&2
  purged
  say "PASSED: the package installs, works and purges cleanly on a clean Debian $(cat /etc/debian_version)"
}

as_user() {
  setpriv --reuid=tester --regid=tester --init-groups \
    env -i HOME=/home/tester USER=tester PATH=/usr/bin:/bin LANG=C.UTF-8 bash /tmp/test-package.sh "$@"
}

no_swift() {
  local found
  found="$(find / -xdev \( -name 'libswift*' -o -name '*.swiftmodule' -o -name 'libFoundation*.so*' -o -name 'libdispatch.so*' \
                        -o -name swift -o -name swiftc \) -print 2>/dev/null || true)"
  [ -z "$found" ] || fail "Swift files in the root ($1): $(head -20 <<<"$found")"
  say "no Swift anywhere in the root ($1)"
}

# Every file of the package is gone; a directory may stay only while another package owns it.
purged() {
  local path left=() state
  state="$(dpkg-query -W -f='${db:Status-Status}' tocsin 2>/dev/null || true)"
  [ -z "$state" ] || [ "$state" = not-installed ] || fail "after apt purge, dpkg has tocsin as '$state'"
  while IFS= read -r path; do
    [ "$path" = "/." ] && continue
    if [ -e "$path" ] || [ -L "$path" ]; then
      if [ -d "$path" ] && [ ! -L "$path" ] && dpkg -S "$path" >/dev/null 2>&1; then continue; fi
      left+=("$path")
    fi
  done < /tmp/files-before-purge
  [ ${#left[@]} -eq 0 ] || fail "apt purge left: ${left[*]}"
  say "apt purge removed all $(grep -c . /tmp/files-before-purge) paths of the package"
}

# ---- Inside the root, as the user: the CLI without a bus. ----
user_checks() {
  local version="$1" out example
  out="$(tocsin --version)"
  [ "$out" = "$version" ] || fail "tocsin --version printed '$out', the package is $version"
  say "tocsin --version: $out"
  for example in /usr/share/tocsin/examples/*.toml; do
    if grep -q '^type = "sound"' "$example"; then
      # A sound player is only suggested: without one, check names what to install.
      if out="$(tocsin check "$example" 2>&1)" || ! grep -q 'no sound player found on PATH (pw-play, paplay, aplay); install pulseaudio-utils' <<<"$out"; then
        fail "tocsin check $example without a sound player: $out"
      fi
      say "tocsin check $example (no sound player here): $(head -1 <<<"$out")"
      continue
    fi
    out="$(tocsin check "$example" 2>&1)" || fail "tocsin check $example: $out"
    say "tocsin check $example: $out"
  done
  out="$(TZ=Europe/Berlin tocsin next 'Mon..Fri 07:30' --count 3)" || fail "tocsin next: $out"
  grep -q 'Iter. #3: .* 07:30:00 CET' <<<"$out" || fail "tocsin next printed: $out"
  echo "$out" >&2
}

# ---- Inside the root, as the user, in dbus-run-session: the daemon. ----
session() {
  local version="$1" log=/tmp/daemon.log daemon out pid
  mkdir -p ~/.config/tocsin
  # The log shows the firing. A popup shows that libnotify loads and runs: there is no
  # notification server in the root, and only libnotify's GLib link, once loaded, says so in
  # the log (a library that does not load is logged as "cannot load libnotify.so.4"); the
  # desktop backend's health then says the same.
  printf '[backend.log]\ntype = "log"\n\n[backend.desktop]\ntype = "libnotify"\n' > ~/.config/tocsin/config.toml
  tocsin daemon > "$log" 2>&1 &
  daemon=$!
  trap 'kill -TERM $daemon 2>/dev/null || true' EXIT
  # Its log says when it serves; a client call before that would have the bus activate a second one.
  wait_for 20 grep -q '^info: started' "$log" || { cat "$log" >&2; fail "the daemon did not start within 20 s"; }
  out="$(tocsin schedule --key packaged --title 'From the package' --after 2s --backend log)"
  [ "$out" = packaged ] || fail "tocsin schedule printed '$out'"
  wait_for 15 grep -q '^tocsin: fired key=packaged' "$log" || { cat "$log" >&2; fail "no firing of 'packaged' in the log within 15 s"; }
  say "the log backend's line: $(grep '^tocsin: fired key=packaged' "$log")"
  out="$(tocsin post --key popup --title 'A popup' --backend desktop)"
  [ "$out" = popup ] || fail "tocsin post printed '$out'"
  wait_for 15 grep -q 'no notification server on the session bus' "$log" ||
    { cat "$log" >&2; fail "the popup's failure (no notification server, found by libnotify) is not in the log within 15 s"; }
  say "the popup, through libnotify: $(grep -m1 'no notification server on the session bus' "$log")"
  status_check "$version" "$daemon"

  # D-Bus activation: with the daemon stopped, a call starts the installed one (Exec=/usr/bin/tocsin daemon).
  kill -TERM "$daemon"
  wait "$daemon" || fail "the daemon exited with $? on SIGTERM"
  trap - EXIT
  out="$(tocsin status)" || fail "D-Bus activation did not start the daemon: $out"
  pid="$(sed -n 's/^ *PID: //p' <<<"$out")"
  [ -n "$pid" ] && [ "$pid" != "$daemon" ] || fail "no new daemon answered after the first stopped: $out"
  say "D-Bus activation started the installed daemon (pid $pid)"
  kill -TERM "$pid"
  wait_for 10 not_running "$pid" || fail "the activated daemon did not stop on SIGTERM"
}

not_running() { ! kill -0 "$1" 2>/dev/null; }

# The same lines as the source build's status check (CLIDisplayTests): running, this version,
# this pid, its config, what it holds, and each backend's health.
status_check() {
  local version="$1" pid="$2" out line
  out="$(tocsin status)" || fail "tocsin status exited $?: $out"
  echo "$out" >&2
  for line in '^Tocsin daemon: running$' "^ +Version: ${version//./\\.}\$" "^ +PID: $pid\$" \
              '^ +Config: /home/tester/\.config/tocsin/config\.toml$' '^ +State: /home/tester/\.local/state/tocsin$' \
              '^ +Pending: [0-9]+ notifications?$' '^ +Backends: log: ok$' '^ +desktop: no notification server$'; do
    grep -qE "$line" <<<"$out" || fail "tocsin status has no line matching '$line'"
  done
}

case "${1:-}" in
  --inside) inside "$2"; exit 0 ;;
  --as-user) shift; as_user "$@"; exit 0 ;;
  --checks) user_checks "$2"; exit 0 ;;
  --session) exec dbus-run-session -- bash /tmp/test-package.sh --in-session "$2" ;;
  --in-session) session "$2"; exit 0 ;;
esac

# ---- On the host. ----
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
deb="${1:-}"
if [ -z "$deb" ]; then deb="$(bash scripts/package.sh)"; fi
[ -f "$deb" ] || fail "no package at '$deb'"
deb="$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"
[ "$(id -u)" -eq 0 ] || fail "making a Debian root needs root (mmdebstrap --mode=root)"

# TOCSIN_DEBIAN_MIRROR: another mirror (a local proxy) for the root's packages.
mirror="${TOCSIN_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
scratch="$PWD/.build-package-test"
rm -rf "$scratch"
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
log="$scratch/mmdebstrap.log"
started=$SECONDS
say "making a clean Debian 12 root (mmdebstrap --variant=minbase) to install $(basename "$deb")"
status=0
TMPDIR="$scratch" mmdebstrap --variant=minbase --mode=root --format=null \
  --customize-hook="upload '$deb' '/tmp/$(basename "$deb")'" \
  --customize-hook="upload '$PWD/scripts/test-package.sh' /tmp/test-package.sh" \
  --customize-hook="chroot \"\$1\" bash /tmp/test-package.sh --inside '/tmp/$(basename "$deb")'" \
  bookworm /dev/null "$mirror" 2>&1 | tee "$log" >&2 || status=$?
if [ "$status" -ne 0 ]; then
  if ! grep -q '^test-package: root ready' "$log" 2>/dev/null; then
    fail "could not make a clean Debian 12 root with mmdebstrap from $mirror (exit $status; its output is above)"
  fi
  fail "the package test in the clean root failed (exit $status; above)"
fi
grep -q '^test-package: PASSED' "$log" || fail "the root's test did not report its result"
say "done in $((SECONDS - started)) s"
