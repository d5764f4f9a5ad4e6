"""Confinement that needs no privilege: Landlock and a seccomp filter for a student process.

Loaded by path into the fork server (server.py, beside it), so it uses only the standard
library. Both steps work for an unprivileged process that has set `PR_SET_NO_NEW_PRIVS`,
which is what Gradescope's container (Docker's default capabilities and seccomp profile)
still allows once namespaces are refused; on the root path they add a second wall behind
the mount namespace. Each is best effort: `confine` says which one took hold.

Why a small ctypes layer rather than a binding: the Landlock binding on PyPI is a
pre-release, and the seccomp one (pyseccomp) wraps libseccomp, a shared library that is not
guaranteed on the image and has been unmaintained since 2021. Both kernel interfaces are a
handful of syscalls and fixed structures, written here once and tested in
tests/test_sandbox_confine.py.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from collections.abc import Iterable

# x86_64 syscall numbers (the seccomp filter and Landlock calls are only installed there).
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
SYS_SECCOMP = 317

LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1

# Landlock file-system rights, and the ABI that introduced each.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FS_ABI1 = (1 << 13) - 1
FS_BY_ABI = {1: FS_ABI1, 2: FS_ABI1 | FS_REFER, 3: FS_ABI1 | FS_REFER | FS_TRUNCATE}
FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
FS_READ = FS_READ_FILE | FS_READ_DIR | FS_EXECUTE
FS_DEVICES = FS_READ_FILE | FS_READ_DIR | FS_WRITE_FILE | FS_IOCTL_DEV

# seccomp-bpf.
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGE_K = 0x35
BPF_JSET_K = 0x45
BPF_RET_K = 0x06
SECCOMP_DATA_NR, SECCOMP_DATA_ARCH, SECCOMP_DATA_ARG0 = 0, 4, 16
AF_UNIX = 1
SYS_SOCKET, SYS_CLONE, SYS_CLONE3 = 41, 56, 435
# clone() flags that create namespaces: a student process has no use for them.
CLONE_NAMESPACE_FLAGS = (
    0x00000080  # CLONE_NEWTIME
    | 0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)
# Syscalls a student process never needs, each a known way to reach other processes, the
# kernel's attack surface or the machine's configuration. They fail with EPERM.
DENIED_SYSCALLS = {
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "pidfd_getfd": 438,
    "kcmp": 312,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "unshare": 272,
    "setns": 308,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_by_handle_at": 304,
    "name_to_handle_at": 303,
    "fanotify_init": 300,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "reboot": 169,
    "swapon": 167,
    "swapoff": 168,
    "acct": 163,
    "quotactl": 179,
    "sethostname": 170,
    "setdomainname": 171,
    "settimeofday": 164,
    "clock_settime": 227,
    "adjtimex": 159,
    "clock_adjtime": 305,
    "syslog": 103,
    "vhangup": 153,
    "lookup_dcookie": 212,
    # System V IPC objects and POSIX message queues outlive the process that made them and
    # are found again by key or name: without an IPC namespace (Docker), one test, or one
    # student of a batch, could leave data there for the next. (DataLoader workers share
    # memory through /dev/shm files and unix sockets, not these.)
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "shmdt": 67,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "semtimedop": 220,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is __attribute__((packed))
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def _syscall(number: int, *args: object) -> int:
    return int(_libc.syscall(ctypes.c_long(number), *args))


def supported() -> bool:
    """Both layers speak the x86_64 syscall table."""
    return platform.machine() == "x86_64"


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0 when none, or refused)."""
    if not supported():
        return 0
    version = _syscall(
        SYS_LANDLOCK_CREATE_RULESET,
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(version, 0)


def _fs_rights(abi: int) -> int:
    if abi >= 5:
        return FS_BY_ABI[3] | FS_IOCTL_DEV
    return FS_BY_ABI[min(abi, 3)]


def _existing(paths: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for path in paths:
        if path and os.path.exists(path) and path not in seen:
            seen.append(path)
    return seen


def _add_path_rule(ruleset: int, path: str, access: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        # A rule on a file may only carry the rights that apply to files.
        if not os.path.isdir(path):
            access &= FS_FILE_RIGHTS
        rule = _PathBeneathAttr(allowed_access=access, parent_fd=fd)
        result = _syscall(
            SYS_LANDLOCK_ADD_RULE,
            ctypes.c_int(ruleset),
            ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
            ctypes.byref(rule),
            ctypes.c_uint32(0),
        )
        if result < 0:
            error = ctypes.get_errno()
            raise OSError(error, f"landlock_add_rule({path}): {os.strerror(error)}")
    finally:
        os.close(fd)


def apply_landlock(
    *, read: Iterable[str], write: Iterable[str], devices: Iterable[str] = ("/dev",)
) -> tuple[int, bool, bool]:
    """Restrict this process (and what it starts) to reading `read` and writing `write`.

    Everything else in the file system is refused, whatever its permissions; where the
    ABI has them, TCP bind and connect are refused outright and signals and abstract unix
    sockets cannot reach outside this process's domain. Returns (abi, network, scoped);
    abi 0 means nothing was applied.
    """
    abi = landlock_abi()
    if abi < 1:
        return 0, False, False
    fs = _fs_rights(abi)
    network = abi >= 4
    scoped = abi >= 6
    attr = _RulesetAttr(
        handled_access_fs=fs,
        handled_access_net=(NET_BIND_TCP | NET_CONNECT_TCP) if network else 0,
        scoped=(SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if scoped else 0,
    )
    size = ctypes.sizeof(ctypes.c_uint64) * (3 if scoped else 2 if network else 1)
    ruleset = _syscall(
        SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    if ruleset < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"landlock_create_ruleset: {os.strerror(error)}")
    try:
        for path in _existing(read):
            _add_path_rule(ruleset, path, FS_READ & fs)
        for path in _existing(devices):
            _add_path_rule(ruleset, path, FS_DEVICES & fs)
        for path in _existing(write):
            _add_path_rule(ruleset, path, fs)
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"PR_SET_NO_NEW_PRIVS: {os.strerror(error)}")
        if _syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            error = ctypes.get_errno()
            raise OSError(error, f"landlock_restrict_self: {os.strerror(error)}")
    finally:
        os.close(ruleset)
    return abi, network, scoped


# One BPF instruction: (label or None, code, k, jump-if-true label, jump-if-false label).
_Step = tuple[str | None, int, int, str | None, str | None]


def _assemble(steps: list[_Step]) -> bytes:
    """Encode `steps`, resolving jump labels into the offsets BPF counts in (forward only)."""
    where = {label: index for index, (label, *_) in enumerate(steps) if label}
    encoded = []
    for index, (_, code, k, if_true, if_false) in enumerate(steps):
        jt = where[if_true] - index - 1 if if_true else 0
        jf = where[if_false] - index - 1 if if_false else 0
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise ValueError(f"BPF jump out of range at instruction {index}")
        encoded.append(struct.pack("=HBBI", code, jt, jf, k))
    return b"".join(encoded)


def seccomp_program() -> bytes:
    """The filter: deny DENIED_SYSCALLS, non-unix sockets, namespace clones; allow the rest."""
    deny = SECCOMP_RET_ERRNO | errno.EPERM
    steps: list[_Step] = [
        (None, BPF_LD_W_ABS, SECCOMP_DATA_ARCH, None, None),
        # Another ABI (i386 through int 0x80) numbers its calls differently: refuse them all.
        (None, BPF_JEQ_K, AUDIT_ARCH_X86_64, None, "deny"),
        (None, BPF_LD_W_ABS, SECCOMP_DATA_NR, None, None),
        (None, BPF_JGE_K, X32_SYSCALL_BIT, "deny", None),
        *((None, BPF_JEQ_K, number, "deny", None) for number in sorted(DENIED_SYSCALLS.values())),
        (None, BPF_JEQ_K, SYS_SOCKET, "socket", None),
        (None, BPF_JEQ_K, SYS_CLONE, "clone", None),
        # clone3 passes its flags in memory a filter cannot read: glibc then falls back to clone.
        (None, BPF_JEQ_K, SYS_CLONE3, "enosys", None),
        (None, BPF_RET_K, SECCOMP_RET_ALLOW, None, None),
        ("enosys", BPF_RET_K, SECCOMP_RET_ERRNO | errno.ENOSYS, None, None),
        # socket(domain, ...): unix sockets only (pipes between DataLoader workers use them).
        ("socket", BPF_LD_W_ABS, SECCOMP_DATA_ARG0, None, None),
        (None, BPF_JEQ_K, AF_UNIX, "allow", "deny"),
        # clone(flags, ...): no namespace flags.
        ("clone", BPF_LD_W_ABS, SECCOMP_DATA_ARG0, None, None),
        (None, BPF_JSET_K, CLONE_NAMESPACE_FLAGS, "deny", "allow"),
        ("allow", BPF_RET_K, SECCOMP_RET_ALLOW, None, None),
        ("deny", BPF_RET_K, deny, None, None),
    ]
    return _assemble(steps)


# Assembled once, where this module is loaded (the sandbox's zygote), rather than in every
# student process: 0.3 of the 1.6 ms that confining a job took.
SECCOMP_PROGRAM = seccomp_program()


def apply_seccomp() -> bool:
    """Install `SECCOMP_PROGRAM` on this process (inherited by everything it starts)."""
    if not supported():
        return False
    program = SECCOMP_PROGRAM
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len=len(program) // 8, filter=ctypes.addressof(buffer))
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    result = _syscall(
        SYS_SECCOMP,
        ctypes.c_uint(SECCOMP_SET_MODE_FILTER),
        ctypes.c_uint(0),
        ctypes.byref(fprog),
    )
    return result == 0


def confine(*, read: Iterable[str], write: Iterable[str]) -> dict[str, int | bool]:
    """Apply Landlock, then seccomp, as far as this machine allows; say what took hold."""
    try:
        abi, network, scoped = apply_landlock(read=read, write=write)
    except OSError:
        abi, network, scoped = 0, False, False
    return {
        "landlock_abi": abi,
        "landlock": abi > 0,
        "landlock_network": network,
        "landlock_scoped": scoped,
        "seccomp": apply_seccomp(),
    }
