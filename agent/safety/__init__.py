"""Every wall in one folder: policy, the command guard, workspace containment, the sandbox, seccomp,
redaction, and display (what a terminal is shown of untrusted text)."""
