"""Locking down a forked sandbox child (prctl, rlimits, dropping root, the seccomp filter): the OS layers,
kept apart from the restricted policy so that each holds on its own. Loaded inside the sandbox."""

from __future__ import annotations

import ctypes
import os
import resource
from typing import Any

__all__ = [
    "PR_SET_DUMPABLE",
    "PR_SET_PDEATHSIG",
    "drop_root",
    "load_seccomp",
    "prctl",
    "set_limits",
]

NOBODY = 65534
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


_libc = ctypes.CDLL(None, use_errno=True)


def prctl(option: int, arg: Any) -> None:
    """``prctl(option, arg)``, raising OSError when the kernel refuses."""
    if _libc.prctl(option, arg, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}) failed: {os.strerror(err)}")


def load_seccomp(bpf: bytes) -> None:
    """Install a classic-BPF seccomp program (compiled by libseccomp in the parent)."""
    count = len(bpf) // ctypes.sizeof(_SockFilter)
    program = (_SockFilter * count).from_buffer_copy(bpf)
    prog = _SockFprog(count, ctypes.cast(program, ctypes.POINTER(_SockFilter)))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter not installed: {os.strerror(err)}")


def set_limits(limits: dict[str, Any]) -> None:
    """CPU and memory from the run's limits; no files written, few descriptors, no processes, no core."""
    cpu = int(limits["cpu_seconds"])
    mem = int(limits["memory_bytes"])
    for res, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_FSIZE, (0, 0)),
        (resource.RLIMIT_NOFILE, (16, 16)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NPROC, (0, 0)),
        (resource.RLIMIT_MEMLOCK, (0, 0)),
        (resource.RLIMIT_MSGQUEUE, (0, 0)),
    ):
        resource.setrlimit(res, value)


def drop_root() -> None:
    """Become nobody (uid and gid 65534, no groups) when running as root."""
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
