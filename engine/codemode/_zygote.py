"""Starting the sandbox process: bubblewrap when it works here, a plain subprocess otherwise.

The zygote is ``python -I -S -B -c BOOTSTRAP``: the bootstrap receives the sandbox-side modules' source
over the control socket (the sandbox never mounts or reads the project tree), imports them and serves
run requests. Under bubblewrap it runs with every namespace unshared (no network), all capabilities
dropped, uid 65534, and only the interpreter, its libraries and /usr mounted read-only.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ._errors import SandboxUnavailable
from ._wire import FrameError, decode, encode, read_frame

__all__ = ["ISOLATIONS", "Zygote", "bwrap_status", "seccomp_program"]

ISOLATIONS = ("bubblewrap", "subprocess")
SANDBOX_MODULES = (
    "_wire",
    "_facades",
    "_recorder",
    "_compile",
    "_guards",
    "_policy",
    "_scope",
    "_client",
    "_lockdown",
    "_outcome",
    "_child",
)  # in import order: each imports only the ones before it
START_TIMEOUT = 30.0

BOOTSTRAP = """
import json, os, socket, struct, sys, types
fd = int(sys.argv[1])
s = socket.socket(fileno=fd)
def recv(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            sys.exit(3)
        b += c
    return b
init = json.loads(recv(struct.unpack(">I", recv(4))[0]))
s.detach()
sys.path.extend(init["paths"])
pkg = types.ModuleType("_shad_sandbox")
pkg.__path__ = []
sys.modules["_shad_sandbox"] = pkg
for name, src in init["modules"]:
    m = types.ModuleType("_shad_sandbox." + name)
    m.__package__ = "_shad_sandbox"
    m.__file__ = "<sandbox:" + name + ">"
    sys.modules[m.__name__] = m
    exec(compile(src, m.__file__, "exec"), m.__dict__)
sys.modules["_shad_sandbox._child"].zygote_main(fd, init)
"""

# System calls the child may never make. KILL for the ones only an escape would try; EPERM otherwise.
_KILL = ("execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev")
_EPERM = (
    "socket socketpair connect bind listen accept accept4 fork vfork clone kill tkill tgkill "
    "rt_sigqueueinfo rt_tgsigqueueinfo pidfd_open pidfd_send_signal pidfd_getfd setrlimit setpgid setsid "
    "setuid setgid setreuid setregid setresuid setresgid setfsuid setfsgid setgroups capset unshare setns "
    "mount umount2 pivot_root chroot mkdir mkdirat rmdir unlink unlinkat rename renameat renameat2 link "
    "linkat symlink symlinkat chmod fchmod fchmodat chown fchown lchown fchownat truncate ftruncate mknod "
    "mknodat utime utimes utimensat futimesat setxattr lsetxattr fsetxattr removexattr lremovexattr "
    "fremovexattr bpf perf_event_open userfaultfd keyctl add_key request_key io_uring_setup io_uring_enter "
    "io_uring_register init_module finit_module delete_module kexec_load kexec_file_load reboot swapon "
    "swapoff acct quotactl memfd_create name_to_handle_at open_by_handle_at fanotify_init personality "
    "prctl seccomp sethostname setdomainname syslog vhangup settimeofday clock_settime adjtimex "
    "ioperm iopl modify_ldt uselib fsopen fsmount fsconfig move_mount open_tree fspick mount_setattr "
    "shmget shmat shmctl msgget msgsnd msgrcv msgctl semget semop semctl mq_open mq_unlink kcmp "
    "process_madvise mbind migrate_pages move_pages lookup_dcookie"
).split()
_NO_FILES = ("open", "openat", "openat2", "creat")

_lock = threading.Lock()
_cache: dict[str, Any] = {}


def seccomp_program() -> tuple[str | None, str]:
    """The child's seccomp filter as classic BPF (base64), compiled once by libseccomp; or why not."""
    with _lock:
        if "bpf" not in _cache:
            _cache["bpf"] = _compile_bpf()
        return _cache["bpf"]  # type: ignore[no-any-return]


def _compile_bpf() -> tuple[str | None, str]:
    try:
        sc: Any = importlib.import_module("pyseccomp")
    except Exception as exc:  # ImportError, or OSError when libseccomp itself is missing
        return None, f"no libseccomp binding: {type(exc).__name__}: {exc}"
    try:
        import errno
        import termios

        flt = sc.SyscallFilter(defaction=sc.ALLOW)
        for name in _KILL:
            _add(flt, sc.KILL_PROCESS, name)
        for name in _EPERM:
            _add(flt, sc.ERRNO(errno.EPERM), name)
        for name in _NO_FILES:  # imports are done; the child opens nothing at all
            _add(flt, sc.ERRNO(errno.EACCES), name)
        _add(flt, sc.ERRNO(errno.ENOSYS), "clone3")  # glibc then falls back to clone, which is refused
        _add(flt, sc.ERRNO(errno.EPERM), "prlimit64", sc.Arg(2, sc.NE, 0))  # reading limits is fine
        _add(flt, sc.ERRNO(errno.EPERM), "ioctl", sc.Arg(1, sc.EQ, termios.TIOCSTI))
        with tempfile.TemporaryFile() as fh:
            flt.export_bpf(fh)
            fh.seek(0)
            program = fh.read()
        return base64.b64encode(program).decode("ascii"), "libseccomp"
    except Exception as exc:
        return None, f"seccomp filter could not be built: {type(exc).__name__}: {exc}"


def _add(flt: Any, action: int, name: str, *args: Any) -> None:
    with contextlib.suppress(OSError, ValueError, RuntimeError):  # a call this architecture lacks
        flt.add_rule(action, name, *args)


def _mounts() -> list[str]:
    """bubblewrap arguments: the interpreter and its libraries, read-only, and nothing else."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    mounted = ["/usr"]
    wanted = [sys.base_prefix, sys.prefix, str(Path(os.path.realpath(sys.executable)).parent.parent)]
    wanted += _package_paths()
    for p in wanted:
        real = os.path.realpath(p)
        if real == "/" or any(real == m or real.startswith(m + "/") for m in mounted):
            continue
        args += ["--ro-bind", real, real]
        mounted.append(real)
        if real != p and not os.path.islink(p):
            args += ["--ro-bind", p, p]
    return args


def _package_paths() -> list[str]:
    import RestrictedPython
    import yaml

    return sorted({str(Path(m.__file__ or "").resolve().parent.parent) for m in (RestrictedPython, yaml)})


def _bwrap_prefix() -> list[str]:
    return [
        shutil.which("bwrap") or "bwrap",
        "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
        "--unshare-cgroup-try", *_no_nested_userns(), "--cap-drop", "ALL", "--uid", "65534", "--gid", "65534",
        "--hostname", "sandbox", "--clearenv", "--setenv", "LANG", "C.UTF-8", "--setenv", "TZ", "UTC",
        *_mounts(), "--dev", "/dev", "--remount-ro", "/", "--chdir", "/", "--",
    ]  # fmt: skip


def _no_nested_userns() -> list[str]:
    """``--disable-userns`` (bubblewrap >= 0.8) when this bwrap knows it; seccomp refuses unshare anyway."""
    if "userns_flag" not in _cache:
        try:
            text = subprocess.run(["bwrap", "--help"], capture_output=True, timeout=10, check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            text = b""
        _cache["userns_flag"] = ["--disable-userns"] if b"--disable-userns" in text else []
    return list(_cache["userns_flag"])


def _bwrap_argv(ctl_fd: int) -> list[str]:
    return [*_bwrap_prefix(), *_python_argv(ctl_fd)]


def _python_argv(ctl_fd: int) -> list[str]:
    return [sys.executable, "-I", "-S", "-B", "-c", BOOTSTRAP, str(ctl_fd)]


def bwrap_status() -> tuple[bool, str]:
    """Whether bubblewrap works here (probed once per process) and why not."""
    with _lock:
        if "bwrap" not in _cache:
            _cache["bwrap"] = _probe_bwrap()
        return _cache["bwrap"]  # type: ignore[no-any-return]


def _probe_bwrap() -> tuple[bool, str]:
    if not sys.platform.startswith("linux"):
        return False, "bubblewrap needs Linux"
    if shutil.which("bwrap") is None:
        return False, "bwrap is not installed (apt-get install bubblewrap)"
    check = "import sys; sys.path.extend(sys.argv[1:]); import RestrictedPython, yaml"
    argv = [*_bwrap_prefix(), sys.executable, "-I", "-S", "-c", check, *_package_paths()]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=20, env={"LANG": "C.UTF-8"}, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap failed to run: {exc}"
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return False, f"bwrap is not usable here: {detail[-1] if detail else f'exit {proc.returncode}'}"
    return True, "bwrap"


class Zygote:
    """One running sandbox process that forks a child per script."""

    def __init__(self, isolation: str, drop_root: bool = True) -> None:
        self.isolation = isolation
        bpf, self.seccomp_source = seccomp_program()
        self.seccomp = bpf is not None
        parent_sock, child_sock = socket.socketpair()
        self.ctl = parent_sock
        fd = child_sock.fileno()
        argv = _bwrap_argv(fd) if isolation == "bubblewrap" else _python_argv(fd)
        t0 = time.perf_counter()
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=(fd,), start_new_session=True, cwd="/", env={"LANG": "C.UTF-8", "TZ": "UTC"},
            )  # fmt: skip
        except OSError as exc:
            parent_sock.close()
            raise SandboxUnavailable(f"cannot start the sandbox ({isolation}): {exc}") from None
        finally:
            child_sock.close()
        self.buffer = bytearray()
        self.runs = 0
        here = Path(__file__).parent
        init = {
            "paths": _package_paths(),
            "modules": [(m, (here / f"{m}.py").read_text(encoding="utf-8")) for m in SANDBOX_MODULES],
            "bpf": bpf,
            "drop_root": drop_root and isolation == "subprocess",
        }
        try:
            self.ctl.sendall(encode(init))
            ready = self.read(START_TIMEOUT)
        except (OSError, FrameError) as exc:
            ready = {"error": str(exc)}
        if not isinstance(ready, dict) or ready.get("t") != "ready":
            err = self._stderr()
            self.kill()
            raise SandboxUnavailable(
                f"the sandbox ({isolation}) did not start: {err or ready}",
                hint="set SHAD_SANDBOX_ISOLATION=subprocess to skip bubblewrap",
            )
        self.pid = int(ready["pid"])
        self.spawn_ms = (time.perf_counter() - t0) * 1000

    def _stderr(self) -> str:
        try:
            self.proc.wait(timeout=2)
            data = self.proc.stderr.read(8192) if self.proc.stderr else b""
        except (subprocess.TimeoutExpired, OSError, ValueError):
            data = b""
        lines = data.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def read(self, timeout: float) -> Any:
        """Blocking read of one control frame (``None`` at end of stream)."""
        deadline = time.monotonic() + timeout
        while True:
            body = read_frame(self.buffer, 1 << 16)
            if body is not None:
                return decode(body)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise FrameError("timed out waiting for the sandbox")
            self.ctl.settimeout(remaining)
            try:
                data = self.ctl.recv(1 << 16)
            except TimeoutError:
                raise FrameError("timed out waiting for the sandbox") from None
            finally:
                self.ctl.settimeout(None)
            if not data:
                return None
            self.buffer.extend(data)

    def feed(self) -> list[Any]:
        """Non-blocking: frames that have arrived (``[None]`` when the zygote is gone)."""
        try:
            data = self.ctl.recv(1 << 16, socket.MSG_DONTWAIT)
        except BlockingIOError:
            data = b"?"
        except OSError:
            data = b""
        if not data:
            return [None]
        if data != b"?":
            self.buffer.extend(data)
        out = []
        while (body := read_frame(self.buffer, 1 << 16)) is not None:
            out.append(decode(body))
        return out

    def start(self, limits: dict[str, Any], fds: list[int], raw: bool = False) -> int:
        """Ask for a fork running one script; returns the run's id (echoed in its "exit" frame)."""
        self.runs += 1
        socket.send_fds(self.ctl, [encode({"t": "run", "id": self.runs, "limits": limits, "raw": raw})], fds)
        return self.runs

    def request_kill(self) -> None:
        with contextlib.suppress(OSError):
            self.ctl.sendall(encode({"t": "kill"}))

    def kill(self) -> None:
        """SIGKILL the whole process group (zygote, bubblewrap, the child); the child also dies with
        the zygote (PDEATHSIG, or the end of its PID namespace)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        for stream in (self.proc.stderr,):
            if stream:
                stream.close()
        self.ctl.close()

    def close(self) -> None:
        """Ask nicely (end of the control stream), then make sure."""
        with contextlib.suppress(OSError):
            self.ctl.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=1)
        self.kill()
