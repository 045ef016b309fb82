"""Watch the inet sockets of some processes and report any not on loopback.

``LoopbackWatch`` samples ``/proc`` (every socket of every process in the given sessions, and
of this process) on a thread while a block runs: a socket whose local or remote address is
neither loopback nor unset is a violation, so is one listening on all interfaces (``0.0.0.0``
or ``::``, which includes the machine's interface address). Ray's C++ parts (gRPC) open their
sockets below Python, so an audit hook in the driver alone would not see them.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

_TCP_LISTEN = "0A"
_PROTOCOLS = ("tcp", "tcp6", "udp", "udp6")


def _address(field: str) -> tuple[str, int]:
    """``/proc/net/tcp``'s ``0100007F:1F90`` (or a 32-digit IPv6) as ``("127.0.0.1", 8080)``."""
    hexip, hexport = field.split(":")
    raw = bytes.fromhex(hexip)
    # Each 32-bit word is in host (little-endian) order.
    packed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    family = socket.AF_INET if len(packed) == 4 else socket.AF_INET6
    return socket.inet_ntop(family, packed), int(hexport, 16)


def _host(ip: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    parsed = ipaddress.ip_address(ip)
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        return parsed.ipv4_mapped
    return parsed


def sockets() -> dict[int, tuple[str, str, tuple[str, int], tuple[str, int]]]:
    """Every inet socket of this network namespace: inode -> (protocol, state, local, remote)."""
    table = {}
    for proto in _PROTOCOLS:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/net/{proto}").read_text().splitlines()[1:]:
                fields = line.split()
                local, remote, state, inode = fields[1], fields[2], fields[3], int(fields[9])
                table[inode] = (proto, state, _address(local), _address(remote))
    return table


def _session(pid: str) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[4])  # after comm: state ppid pgrp session


def socket_inodes(pid: int) -> set[int]:
    found = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    found.add(int(target[8:-1]))
    return found


def watched_pids(sessions: Iterable[int]) -> set[int]:
    wanted = set(sessions)
    pids = {os.getpid()}
    for pid in os.listdir("/proc"):
        if pid.isdigit() and _session(pid) in wanted:
            pids.add(int(pid))
    return pids


def violation(
    proto: str, state: str, local: tuple[str, int], remote: tuple[str, int]
) -> str | None:
    """Why this socket is off loopback, or None."""
    lhost, rhost = _host(local[0]), _host(remote[0])
    if rhost.is_unspecified and remote[1] == 0:  # not connected: its bound address decides
        if lhost.is_loopback or (lhost.is_unspecified and local[1] == 0 and proto[:3] == "udp"):
            return None
        if proto[:3] == "tcp" and state != _TCP_LISTEN and lhost.is_unspecified:
            return None  # a TCP socket not yet bound or connected
        return f"{proto} bound to {local[0]}:{local[1]}"
    if lhost.is_loopback and rhost.is_loopback:
        return None
    return f"{proto} {local[0]}:{local[1]} -> {remote[0]}:{remote[1]}"


class LoopbackWatch:
    """``with LoopbackWatch([session]) as watch: ...``; then ``watch.off_loopback``."""

    def __init__(self, sessions: Iterable[int], every: float = 0.02) -> None:
        self.sessions = list(sessions)
        self.every = every
        self.off_loopback: set[str] = set()
        self.connected = 0  # connected loopback sockets seen: the watch saw the traffic
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        table = sockets()
        for pid in watched_pids(self.sessions):
            for inode in socket_inodes(pid):
                if inode not in table:
                    continue  # a unix socket, or one closed since the table was read
                proto, state, local, remote = table[inode]
                why = violation(proto, state, local, remote)
                if why is not None:
                    self.off_loopback.add(f"pid {pid}: {why}")
                elif remote[1] != 0:
                    self.connected += 1
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every)

    def __enter__(self) -> LoopbackWatch:
        self.sample()
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
