"""One run end to end: the goal, the runner, its services, recorder, prompt, profiles, checkpoints, approvers, live state."""
