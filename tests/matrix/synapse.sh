#!/usr/bin/env bash
# Start a throwaway Synapse homeserver on 127.0.0.1 for the end-to-end tests.
#
#   eval "$(tests/matrix/synapse.sh [STATE_DIR])"
#
# Prints three `export` lines (URL, registration shared secret, pid) on stdout;
# everything else goes to stderr so the output stays safe to eval.
# Stop it with: kill "$SWITCHBOARD_TEST_SYNAPSE_PID"
# Env: PYTHON (default python3), SYNAPSE_STRICT_RATE=1 (tight message rate limit
# so a test can provoke M_LIMIT_EXCEEDED).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
state="${1:-$(mktemp -d -t synapse.XXXXXX)}"
mkdir -p "$state"
state="$(cd "$state" && pwd)" # Synapse resolves relative paths against its cwd.
# Reusing a STATE_DIR is fine, but not while its server is still up: we would
# rewrite the config under it and lose track of its pid.
if [[ -f "$state/homeserver.pid" ]] && kill -0 "$(cat "$state/homeserver.pid")" 2>/dev/null; then
  echo "synapse.sh: a Synapse from $state is already running (pid $(cat "$state/homeserver.pid"))" >&2
  exit 1
fi
rm -f "$state/homeserver.pid"

# The venv is reused while the pins are unchanged. The stamp is written only
# after a successful install, so an interrupted install is redone next time;
# the lock keeps parallel callers from installing over each other.
stamp="$(cat "$here/requirements.txt" "$here/constraints.txt" | sha256sum | cut -d' ' -f1)"
(
  flock 9
  if [[ "$(cat "$venv/.stamp" 2>/dev/null)" != "$stamp" ]]; then
    echo "synapse.sh: installing Synapse into $venv" >&2
    "${PYTHON:-python3}" -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt" >&2
    echo "$stamp" >"$venv/.stamp"
  fi
) 9>"$here/.venv.lock"
py="$venv/bin/python"

# Port 0 lets the kernel pick a free port. There is a small window before
# Synapse binds it again, which is fine on a test machine.
port="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
secret="$("$py" -c 'import secrets; print(secrets.token_hex(32))')"

# Let Synapse write its own config first: that also creates the signing key and
# the macaroon/form secrets, which we don't want to invent by hand.
# Run it from STATE_DIR, where the (unused) generated log config points.
if [[ ! -f "$state/homeserver.yaml" ]]; then
  (cd "$state" && "$py" -m synapse.app.homeserver --generate-config --report-stats=no \
    --server-name localhost --config-path "$state/homeserver.yaml" \
    --data-directory "$state" >&2)
fi

cat >"$state/log.yaml" <<EOF
version: 1
formatters:
  precise: {format: '%(asctime)s %(levelname)s %(name)s: %(message)s'}
handlers:
  file: {class: logging.FileHandler, filename: '$state/homeserver.log', formatter: precise}
root: {level: WARNING, handlers: [file]}
disable_existing_loggers: false
EOF

# Override the generated config in place. The message rate stays at Synapse's
# default (0.2 a second per user, bursts of 10), as on a real homeserver: the
# gateway must live with it. What only the tests' setup meets is opened wide:
# many logins, registrations, room creations, joins and invites a minute from
# one address. SYNAPSE_STRICT_RATE=1 makes the message rate tighter still (0.5
# a second, bursts of 3) for the flood-control tests.
STATE="$state" PORT="$port" SECRET="$secret" STRICT="${SYNAPSE_STRICT_RATE:-0}" "$py" - <<'EOF'
import os, yaml
path = os.environ["STATE"] + "/homeserver.yaml"
with open(path) as f:
    cfg = yaml.safe_load(f)
state = os.environ["STATE"]
def loose():  # a fresh dict each time, so PyYAML writes no &anchors
    return {"per_second": 10000, "burst_count": 100000}
limits = {k: loose() for k in (
    "rc_registration", "rc_registration_token_validity",
    "rc_3pid_validation", "rc_admin_redaction", "rc_room_creation", "rc_reports",
    "rc_media_create", "rc_third_party_invite", "rc_delayed_event_mgmt",
    "rc_joins_per_room", "rc_key_requests", "rc_user_directory", "rc_profile")}
limits["rc_login"] = {k: loose() for k in ("address", "account", "failed_attempts")}
limits["rc_joins"] = {k: loose() for k in ("local", "remote")}
limits["rc_invites"] = {k: loose() for k in ("per_room", "per_user", "per_issuer")}
limits["rc_presence"] = {"per_user": loose()}
if os.environ["STRICT"] == "1":
    limits["rc_message"] = {"per_second": 0.5, "burst_count": 3}
cfg.update(limits)
cfg.update({
    # Client API only, plain HTTP, no federation listener.
    "listeners": [{"port": int(os.environ["PORT"]), "bind_addresses": ["127.0.0.1"],
                   "type": "http", "tls": False, "x_forwarded": False,
                   "resources": [{"names": ["client"], "compress": False}]}],
    "database": {"name": "sqlite3", "args": {"database": state + "/homeserver.db"}},
    "registration_shared_secret": os.environ["SECRET"],
    "enable_registration": False,
    # No outbound traffic: this machine has no network beyond package registries.
    "trusted_key_servers": [],
    "suppress_key_server_warning": True,
    "presence": {"enabled": False},
    "url_preview_enabled": False,
    "media_store_path": state + "/media_store",
    "max_upload_size": "50M",
    "log_config": state + "/log.yaml",
    "pid_file": state + "/homeserver.pid",
    "report_stats": False,
})
with open(path, "w") as f:
    yaml.safe_dump(cfg, f, sort_keys=False)
EOF

# --daemonize detaches fully (new session, stdio closed), so a caller's
# $(...) does not hang waiting on our stdout. Config errors still surface here
# because they happen before the fork.
(cd "$state" && "$py" -m synapse.app.homeserver -c "$state/homeserver.yaml" --daemonize >&2)

# Wait for the client API (no curl on a fresh machine). Give up early if the
# process dies, and on failure show the log and kill what we started.
if ! STATE="$state" PORT="$port" "$py" - <<'EOF'
import os, sys, time, urllib.request
state, port = os.environ["STATE"], os.environ["PORT"]
deadline = time.time() + 60
pid = None
while time.time() < deadline:
    try:
        pid = pid or int(open(state + "/homeserver.pid").read())
        os.kill(pid, 0)
    except (FileNotFoundError, ValueError):  # not written yet
        pass
    except ProcessLookupError:
        sys.exit("synapse.sh: Synapse exited during startup")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_matrix/client/versions", timeout=2) as r:
            if r.status == 200 and pid:
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.25)
sys.exit("synapse.sh: Synapse not answering after 60 s")
EOF
then
  echo "--- tail of $state/homeserver.log:" >&2
  tail -n 40 "$state/homeserver.log" >&2 || true
  [[ -f "$state/homeserver.pid" ]] && kill "$(cat "$state/homeserver.pid")" 2>/dev/null || true
  exit 1
fi

echo "export SWITCHBOARD_TEST_SYNAPSE=http://127.0.0.1:$port"
echo "export SWITCHBOARD_TEST_SYNAPSE_SECRET=$secret"
echo "export SWITCHBOARD_TEST_SYNAPSE_PID=$(cat "$state/homeserver.pid")"
