#!/usr/bin/env bash
# Installs headless Chromium and its WebDriver (Debian packages) for the browser test in
# tests/e2e/web/browser.rs, only when they are missing. CI calls this from .ci/run.
set -euo pipefail

if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y chromium chromium-driver
