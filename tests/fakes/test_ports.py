"""The test servers' port helper: a free port that outgoing connections cannot take first."""

from __future__ import annotations

import socket

from live_memory.testing.ports import EPHEMERAL_RANGE, free_port


def test_a_free_port_is_bindable_and_below_the_range_outgoing_connections_use() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # nothing holds it
    if EPHEMERAL_RANGE.is_file():
        assert port < int(EPHEMERAL_RANGE.read_text().split()[0])


def test_a_port_in_use_is_never_handed_out() -> None:
    listeners = []
    try:
        for _ in range(20):
            sock = socket.socket()
            sock.bind(("127.0.0.1", free_port()))
            sock.listen()
            listeners.append(sock)
        taken = {s.getsockname()[1] for s in listeners}
        assert len(taken) == 20
        assert free_port() not in taken
    finally:
        for sock in listeners:
            sock.close()
