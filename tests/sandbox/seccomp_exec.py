"""Test-only launcher: make some syscalls fail with a chosen errno (libseccomp), then exec a command.

    python tests/sandbox/seccomp_exec.py openat2=EPERM landlock_create_ruleset=ENOSYS -- CMD ARGS...

It reproduces what container runtimes and systemd's SystemCallFilter= do to syscalls they do not
list (security-notes §2.2, §3.4): the filter is inherited by the exec'd server.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_ACT_ERRNO = 0x00050000


def install(rules: dict[str, int]) -> None:
    lib = ctypes.CDLL("libseccomp.so.2")
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_rule_add.argtypes = (ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint)
    lib.seccomp_load.argtypes = (ctypes.c_void_p,)
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    for name, err in rules.items():
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0 or lib.seccomp_rule_add(ctx, SCMP_ACT_ERRNO | err, nr, 0) != 0:
            raise SystemExit(f"seccomp_exec: cannot add a rule for {name}")
    if lib.seccomp_load(ctx) != 0:
        raise SystemExit("seccomp_exec: seccomp_load failed")


def main() -> None:
    split = sys.argv.index("--")
    rules = {}
    for spec in sys.argv[1:split]:
        name, _, err = spec.partition("=")
        rules[name] = getattr(errno, err)
    install(rules)
    command = sys.argv[split + 1 :]
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
