"""Every wall in one folder: policy, the command guard, workspace containment, the sandbox, seccomp, redaction."""
