"""Whose is the socket listening on a loopback port: a note's server, or someone else.

Standard library only: a hook process asks this before it sends anything to the port its
project's note names (``project.read_server``). A note outlives a killed server (and a
reboot), and another local user may then listen on its port: the hook must not send the
prompt there, nor the store's owner token.
"""

from __future__ import annotations

import os
import socket
import struct

__all__ = ["listener_is_ours"]


def listener_is_ours(base_url: str) -> bool:
    """Whether the socket listening at ``base_url``'s port is this user's. A note outlives
    a killed server (and a reboot), and another local user may then listen on its port: a
    hook must not send the prompt there, nor the token. True where it cannot be told (not
    Linux) or nothing listens there (the request is refused anyway).

    Asked of the kernel over netlink (``sock_diag``, as ``ss`` does: the listening TCP
    sockets with their uid), 0.07 ms; reading ``/proc/net/tcp`` took 4 ms here, so it is
    only the fallback.
    """
    port = base_url.rpartition(":")[2].strip("/")
    if not port.isdigit():
        return True
    try:
        owners = _listening_uids(int(port))
    except OSError:
        owners = _listening_uids_from_proc(int(port))
    return all(uid == os.getuid() for uid in owners)


# sock_diag (linux/sock_diag.h, linux/inet_diag.h): a dump of TCP sockets in LISTEN.
_NETLINK_SOCK_DIAG, _SOCK_DIAG_BY_FAMILY, _DUMP_REQUEST = 4, 20, 0x301
_NLMSG_ERROR, _NLMSG_DONE, _TCP_LISTEN = 2, 3, 10


def _listening_uids(port: int) -> list[int]:
    """The uids of the TCP sockets listening on ``port`` (IPv4 and IPv6).

    Raises:
        OSError: No netlink here (not Linux, or refused).
    """
    family_netlink = getattr(socket, "AF_NETLINK", None)
    if family_netlink is None:
        raise OSError("no netlink here")
    found: list[int] = []
    for family in (socket.AF_INET, socket.AF_INET6):
        # inet_diag_req_v2: family, protocol, ext, pad, states; then a zeroed sockid.
        request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 1 << _TCP_LISTEN)
        request += bytes(48)
        header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _DUMP_REQUEST, 1, 0)
        with socket.socket(family_netlink, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as link:
            link.settimeout(1.0)
            link.send(header + request)
            done = False
            while not done:
                data = link.recv(65536)
                if not data:
                    break
                offset = 0
                while offset + 16 <= len(data):
                    length, kind = struct.unpack_from("=IH", data, offset)
                    if kind in (_NLMSG_DONE, _NLMSG_ERROR) or length < 16:
                        done = True
                        break
                    # inet_diag_msg: 4 bytes, sockid (sport first, big-endian; 48 bytes),
                    # expires, rqueue, wqueue, then uid.
                    body = offset + 16
                    if struct.unpack_from("!H", data, body + 4)[0] == port:
                        found.append(struct.unpack_from("=I", data, body + 64)[0])
                    offset += (length + 3) & ~3
    return found


def _listening_uids_from_proc(port: int) -> list[int]:
    """As :func:`_listening_uids`, from ``/proc/net/tcp`` (none where it is missing)."""
    suffix = b":%04X" % port
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, "rb") as handle:
                rows = handle.read().splitlines()
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            # sl, local address, remote address, state (0A: listening), ..., uid
            if len(fields) > 7 and fields[3] == b"0A" and fields[1].endswith(suffix):
                found.append(int(fields[7]))
    return found
