"""A loopback port for a server the test starts in another process (it binds the port itself).

A port the kernel handed out for a moment (bind to port 0, close) is in the ephemeral range, where the
kernel also picks the local ports of outgoing connections: between the check and the other process's
bind, a connection of a parallel test can take it, and that server fails to start. So the port is
chosen below the ephemeral range, where only listeners that ask for a port by number go.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10_000
ATTEMPTS = 200


def _ephemeral_start() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default; other systems start higher


def free_port() -> int:
    """A port nothing listens on now, outside the range outgoing connections draw from."""
    top = _ephemeral_start()
    for port in random.sample(range(LOWEST, top), min(ATTEMPTS, max(top - LOWEST, 0))):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:  # no such range here: the kernel's choice
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
