#!/usr/bin/env bash
# Installs headless Chromium and its WebDriver (Debian packages) for the browser test in
# tests/e2e/web/browser.rs, and the headless shell the browser tool drives
# (tests/e2e/browser_tool), only when they are missing. CI calls this from .ci/run.
set -euo pipefail

if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] \
  && [ -x /usr/lib/chromium/chromium-headless-shell ]; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y chromium chromium-driver chromium-headless-shell
