"""The ceilings every floor of hearth checks a number against: a leaf (standard library only,
imports nothing of hearth), so the queue's schema, the settings and a run's admission can all
name one value without importing each other."""

# The most iterations any run may have: a request, a profile and HEARTH_MAX_ITERATIONS are each
# checked against it (the queue's schema and the NixOS module's option type say the same).
MAX_ITERATIONS = 100
# How long an approval may wait for a person, at most (a request's, a profile's, HEARTH_APPROVAL_WAIT).
MAX_APPROVAL_WAIT_S = 7 * 86_400
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def parse_duration(text: str | int | float) -> float:
    """Seconds from `90`, `90s`, `30m`, `8h`, `2d` (or a number); ValueError saying the forms."""
    if isinstance(text, bool):
        raise ValueError("a duration is a number of seconds or a text like 90s, 30m, 8h, 2d")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        raw = text.strip().lower()
        unit = raw[-1:] if raw[-1:] in DURATION_UNITS else "s"
        number = raw[:-1] if raw[-1:] in DURATION_UNITS else raw
        try:
            seconds = float(number) * DURATION_UNITS[unit]
        except ValueError:
            raise ValueError(f"{text!r} is not a duration: give seconds or a text like 90s, 30m, 8h, 2d") from None
    if not 0 < seconds <= MAX_APPROVAL_WAIT_S or seconds != seconds:
        raise ValueError(f"{text!r} must be more than 0 and at most {MAX_APPROVAL_WAIT_S // 86_400} days")
    return seconds


# The most tokens one run may be allowed (a request's or a profile's max_tokens).
MAX_RUN_TOKENS = 100_000_000

# A reply's length cap (a request's, a profile's, HEARTH_REPLY_TOKENS): below 16 no tool call fits;
# above 65,536 no local model's window holds the reply with its prompt.
MIN_REPLY_TOKENS = 16
MAX_REPLY_TOKENS = 65_536
