"""A stand-in for signal-cli's daemon process, for the gateway's `command` supervision test
(tests/e2e/signal.rs): it listens where the gateway's `daemon_url` points and forwards every
connection to the in-process signal-cli stand-in. Like a daemon that dies, it exits (status 3,
with a last line on stderr) when the event stream it carried ends: its connection closes, or
its chunked response ends (the connection itself may be kept alive for the next request).

Usage: python3 forward.py LISTEN_PORT TARGET_PORT
"""

import os
import socket
import sys
import threading

listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])


def pipe(src, dst, on_end, on_data=lambda data: None):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
            on_data(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        on_end()


def serve(client):
    first = client.recv(65536)
    upstream = socket.create_connection(("127.0.0.1", target_port))
    upstream.sendall(first)
    is_stream = first.startswith(b"GET /api/v1/events")

    def ended():
        if is_stream:
            print("the event stream ended; exiting", file=sys.stderr, flush=True)
            os._exit(3)

    def watch(data):
        # The last chunk of a chunked response: the stream ended.
        if data.startswith(b"0\r\n\r\n") or b"\r\n0\r\n\r\n" in data:
            ended()

    threading.Thread(target=pipe, args=(upstream, client, ended, watch), daemon=True).start()
    pipe(client, upstream, lambda: None)


server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", listen_port))
server.listen(16)
print(f"forwarding 127.0.0.1:{listen_port} to {target_port}", file=sys.stderr, flush=True)
while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
