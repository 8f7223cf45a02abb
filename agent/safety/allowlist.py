"""What a sandboxed command may see: an allow list of the host's filesystem, nothing else.

A command sees the workspace (read-write), a private /tmp and /run, its home, and read-only:
- the system's programs and libraries: /usr, /bin, /sbin, /lib*, and on NixOS the Nix store and
  /run/current-system (where every program and the module's extraPackages live);
- from /etc only what programs need to work: the loader's cache, name resolution, TLS
  certificates, locale and time zone data, Debian's command links (`alternatives`), MIME and
  magic tables, the OS release, Python's site config, NixOS's /etc/static (store contents);
- the paths the operator adds (``SandboxPolicy.expose``, HEARTH_SANDBOX_EXPOSE): a tool that
  lives anywhere else, such as /opt/tool or a pyenv tree.
Under bwrap /etc/passwd and /etc/group are generated: root and the sandbox user, nothing of the
host's accounts. Nothing else exists for the command: no /root, /home, /var, /srv, /etc/shadow,
ssh keys, hearth's state or other runs. Landlock gets the same list as read rules (plus the host's
own passwd and group files, which it cannot replace).
"""

from __future__ import annotations

import functools
import os

__all__ = [
    "ETC",
    "SANDBOX_GID",
    "SANDBOX_HOME",
    "SANDBOX_UID",
    "SYSTEM",
    "etc_paths",
    "group",
    "passwd",
    "system_paths",
]

SANDBOX_UID = SANDBOX_GID = 65534  # nobody: inside the user namespace, whoever runs hearth
SANDBOX_HOME = "/home/nobody"
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/nix/store", "/run/current-system")
ETC = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d",  # the dynamic loader finds libraries through these
    "resolv.conf", "hosts", "host.conf", "nsswitch.conf", "gai.conf", "services", "protocols",  # names
    "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "pki/tls/certs",  # TLS
    "pki/ca-trust", "crypto-policies",
    "localtime", "timezone", "zoneinfo", "locale.alias", "locale.conf", "default/locale",  # time zone and locale
    "alternatives", "mime.types", "magic", "magic.mime", "os-release", "terminfo",
    "python3", "python3.11", "python3.12", "python3.13",  # Debian's site config for its Python
    "static",  # NixOS: what /etc links to, in the store (world-readable by design)
)  # fmt: skip


@functools.cache
def system_paths() -> tuple[tuple[str, str | None], ...]:
    """(path, symlink target or None) for each system path that exists here.

    A merged-/usr host's /bin is a symlink to usr/bin: it is recreated as that symlink, so
    /bin/sh keeps working without a second mount. /run/current-system is bound by its target.
    """
    found: list[tuple[str, str | None]] = []
    for path in SYSTEM:
        if not os.path.lexists(path):
            continue
        if os.path.islink(path) and path != "/run/current-system":
            found.append((path, os.readlink(path)))
        elif os.path.exists(path):
            found.append((path, None))
    return tuple(found)


@functools.cache
def etc_paths() -> tuple[str, ...]:
    """The /etc entries of ETC that exist here. /etc/ssl/private (keys) is never among them."""
    return tuple(f"/etc/{name}" for name in ETC if os.path.exists(f"/etc/{name}"))


def passwd(home: str) -> bytes:
    return f"root:x:0:0:root:/root:/sbin/nologin\nnobody:x:{SANDBOX_UID}:{SANDBOX_GID}:nobody:{home}:/bin/sh\n".encode()


def group() -> bytes:
    return f"root:x:0:\nnobody:x:{SANDBOX_GID}:\n".encode()
