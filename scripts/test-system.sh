#!/bin/sh
# `make test-system`: hearth's units under a real systemd. Builds (once, cached outside the checkout
# keyed by its inputs) a Debian bookworm root with debootstrap and a venv holding hearth's
# dependencies, builds hearth's wheel from this checkout, then runs tests/system/, which boots
# copies of that root with systemd-nspawn and drives them with nsenter (tests/system/container.py).
#
#   HEARTH_SYSTEM_CACHE   where the roots and wheels are kept (default /var/cache/hearth-test-system)
#   HEARTH_SYSTEM_MIRROR  the Debian mirror (default: the first deb.debian.org-style URI apt uses)
#   PYTEST_ARGS           more pytest arguments (-k, -x ...)
#
# Exit 0 all passed, 1 a test failed, 2 a prerequisite is missing (the line says which),
# 77 cannot run here at all (not root), which .ci/run reports as skipped.
set -eu
cd "$(dirname "$0")/.."
CHECKOUT=$(pwd)
CACHE="${HEARTH_SYSTEM_CACHE:-/var/cache/hearth-test-system}"
VENV="${VENV:-.venv}"
SUITE=bookworm
# what the root needs: systemd as PID 1, the system bus and polkit (hearth-spawn starts the run
# units as hearth through them; polkitd needs a logind, which debootstrap does not pick for it:
# libpam-systemd), python3 for the venv, bubblewrap and git for the runs' commands
PACKAGES=systemd,systemd-sysv,dbus,libpam-systemd,polkitd,python3,python3-venv,bubblewrap,git,procps,iproute2

say() { echo "test-system: $*"; }

[ "$(id -u)" = 0 ] || { say "skipped: needs root (debootstrap, systemd-nspawn)"; exit 77; }
for tool in debootstrap systemd-nspawn nsenter; do
  command -v "$tool" >/dev/null 2>&1 || { say "missing $tool (apt-get install debootstrap systemd-container util-linux)"; exit 2; }
done
[ -x "$VENV/bin/python" ] || { say "no $VENV: run make test (or scripts/bootstrap.sh) first"; exit 2; }

mirror() {
  if [ -n "${HEARTH_SYSTEM_MIRROR:-}" ]; then echo "$HEARTH_SYSTEM_MIRROR"; return; fi
  # the mirror apt itself uses for Debian (deb822 URIs: lines or one-line deb entries)
  found=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | sed -n -e 's/^URIs: *\(http[^ ]*\/debian\)\/\{0,1\}$/\1/p' -e 's/^deb  *\(\[[^]]*\] *\)\{0,1\}\(http[^ ]*\/debian\)\/\{0,1\} .*/\2/p' \
    | head -n 1)
  echo "${found:-http://deb.debian.org/debian}"
}
MIRROR=$(mirror)

hash() { sha256sum | cut -c1-16; }
# the root's inputs: the suite, the mirror, the packages and how it is made (bump ROOT_STEPS when
# the steps below change); the deps' inputs: the root's key and pyproject.toml's dependencies
ROOT_STEPS=1
ROOT_KEY=$(echo "$SUITE $MIRROR $PACKAGES $ROOT_STEPS" | hash)
DEPS=$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"])')
DEPS_KEY=$(echo "$ROOT_KEY $DEPS" | hash)
BASE="$CACHE/debian-$SUITE-$ROOT_KEY"
ROOTFS="$CACHE/root-$DEPS_KEY"
WHEELS="$CACHE/wheels-$DEPS_KEY"
BUILD="$CACHE/build-venv"
mkdir -p "$CACHE"

# a build interrupted half way leaves only a .tmp directory, which the next run replaces
if [ ! -d "$BASE" ]; then
  say "debootstrap $SUITE from $MIRROR into $BASE (once; a few minutes)"
  rm -rf "$BASE.tmp"
  debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$BASE.tmp" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
    || { say "debootstrap failed; see $CACHE/debootstrap.log"; tail -n 5 "$CACHE/debootstrap.log"; exit 2; }
  rm -rf "$BASE.tmp/var/cache/apt/archives/"*.deb
  mv "$BASE.tmp" "$BASE"
fi

if [ ! -d "$WHEELS" ]; then
  say "collecting hearth's dependencies as wheels into $WHEELS (once per dependency list)"
  rm -rf "$WHEELS.tmp"
  "$VENV/bin/python" -m pip wheel --disable-pip-version-check -q -w "$WHEELS.tmp" . >"$CACHE/wheels.log" 2>&1 \
    || { say "pip wheel failed; see $CACHE/wheels.log"; exit 2; }
  rm -f "$WHEELS.tmp"/hearth-*.whl
  mv "$WHEELS.tmp" "$WHEELS"
fi

if [ ! -x "$BUILD/bin/python" ]; then
  say "making the wheel builder $BUILD (once)"
  python3 -m venv "$BUILD"
  "$BUILD/bin/python" -m pip install --disable-pip-version-check -q "setuptools>=68" wheel
fi
say "building hearth's wheel from $CHECKOUT"
DIST=$(mktemp -d /tmp/hearth-wheel.XXXXXX)
trap 'rm -rf "$DIST"' EXIT INT TERM
"$BUILD/bin/python" -m pip wheel --disable-pip-version-check -q --no-deps --no-build-isolation -w "$DIST" . >"$DIST/log" 2>&1 \
  || { cat "$DIST/log"; say "building the wheel failed"; exit 2; }
WHEEL=$(ls "$DIST"/hearth-*.whl)

if [ ! -d "$ROOTFS" ]; then
  say "installing hearth's dependencies into a venv in $ROOTFS (once per dependency list)"
  rm -rf "$ROOTFS.tmp"
  cp -a "$BASE" "$ROOTFS.tmp"
  mkdir -p "$ROOTFS.tmp/opt/wheels"
  cp "$WHEELS"/*.whl "$WHEEL" "$ROOTFS.tmp/opt/wheels/"
  # as docs/debian.md says a person does it: a venv in /opt/hearth, its programs linked onto PATH
  chroot "$ROOTFS.tmp" sh -c 'python3 -m venv /opt/hearth && /opt/hearth/bin/pip install --disable-pip-version-check -q --no-index --find-links /opt/wheels hearth' \
    >"$CACHE/venv.log" 2>&1 || { say "the venv failed; see $CACHE/venv.log"; exit 2; }
  rm -rf "$ROOTFS.tmp/opt/wheels"
  mv "$ROOTFS.tmp" "$ROOTFS"
fi

# the booted copy lives here; the tests power it off and remove it, and this trap does it again
# whatever happens to them (the nspawn they started is named in nspawn.pid)
RUN=$(mktemp -d /var/tmp/hearth-system.XXXXXX)
cleanup() {
  if [ -f "$RUN/nspawn.pid" ]; then
    pid=$(cat "$RUN/nspawn.pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      n=0; while kill -0 "$pid" 2>/dev/null && [ $n -lt 60 ]; do sleep 1; n=$((n + 1)); done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -rf "$RUN" "$DIST"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "root $ROOTFS, wheel $(basename "$WHEEL")"
# shellcheck disable=SC2086
HEARTH_SYSTEM_ROOT="$ROOTFS" HEARTH_SYSTEM_WHEEL="$WHEEL" HEARTH_SYSTEM_RUN="$RUN" \
  "$VENV/bin/python" -m pytest -p no:cacheprovider -m system tests/system -v ${PYTEST_ARGS:-}
