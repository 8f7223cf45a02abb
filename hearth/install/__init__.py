"""`hearth install --systemd`: hearth's units and system user on a plain systemd Linux (Debian, Ubuntu).

    units.py    the unit files, rendered from units.toml (nix/units.toml, which the NixOS module
                renders too: one source for every directive, hardening setting and limit)
    plan.py     what an install writes: users, groups, directories with their modes, files; each
                step idempotent, printed instead of done under --dry-run
    system.py   carrying a plan out on a root (`/`, or a directory for tests and images)

NixOS does all of this from nix/module.nix; this package is the same appliance for everyone else.
"""
