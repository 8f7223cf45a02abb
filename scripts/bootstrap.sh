#!/bin/sh
# Install what hearth needs on a fresh Debian machine: system packages through apt when run as
# root (skipped with a message otherwise), then a virtualenv with hearth and its test tools.
set -eu
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"

missing=""
want() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
want bwrap bubblewrap
want git git
want nix-instantiate nix-bin
want systemd-analyze systemd
want openssl openssl  # tests/agent/net/test_tls.py makes a throwaway certificate
want chromium chromium  # tests/hearth/web/test_browser.py drives it with Playwright (its own browser download cannot work here)
want redis-server redis-server  # tests/hearth/fleet/ start their own broker on a loopback port
want /usr/sbin/dovecot dovecot-imapd  # tests/hearth/channels/test_email_*.py: the IMAP server mail arrives in
/usr/bin/python3 -c 'import aiosmtpd' >/dev/null 2>&1 || missing="$missing python3-aiosmtpd"  # their SMTP server
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$missing python3-venv"

if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing system packages:$missing"
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
  else
    echo "bootstrap: not root (or no apt-get): skipping system packages:$missing"
    echo "bootstrap: the tests that need them are skipped with a reason; install them to run everything"
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: making the virtualenv $VENV"
  python3 -m venv "$VENV"
fi
# pip's own lines are the progress: a first install fetches ~60 packages (about half a minute)
echo "bootstrap: installing hearth and its test tools into $VENV with pip"
"$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar on -e '.[test]'
touch "$VENV/.installed"
echo "bootstrap: done: $VENV/bin/hearth and $VENV/bin/hearth-loop are installed"
