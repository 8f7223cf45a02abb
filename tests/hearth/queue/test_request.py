"""The request contract: every example behaves as labelled, the schemas cannot drift, both shapes map."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hearth.queue.intake import RequestRefused, check, parse_request
from hearth.queue.request import LegacyRequest, Request, schema_text
from tests.conftest import ROOT

SPEC = ROOT / "queue-spec"


def examples(kind: str) -> list[Path]:
    return sorted((SPEC / "examples" / kind).glob("*.json"))


def expected_error(path: Path) -> str:
    return path.with_name(path.name.removesuffix(".json") + ".expected-error.txt").read_text().rstrip("\n")


def refusal(data: bytes, name: str) -> str:
    with pytest.raises(RequestRefused) as caught:
        check(parse_request(data, name).request)
    return str(caught.value)


@pytest.mark.parametrize("path", examples("valid"), ids=lambda p: p.name)
def test_every_valid_example_is_accepted_under_its_file_name(path: Path) -> None:
    parsed = parse_request(path.read_bytes(), path.name)
    check(parsed.request)
    assert parsed.request.id == path.stem


@pytest.mark.parametrize("path", examples("invalid"), ids=lambda p: p.name)
def test_every_invalid_example_is_refused_with_its_labelled_reason(path: Path) -> None:
    assert refusal(path.read_bytes(), path.name) == expected_error(path)


def test_every_invalid_example_has_a_label_and_every_label_an_example() -> None:
    invalid = SPEC / "examples" / "invalid"
    requests = {p.name.removesuffix(".json") for p in invalid.glob("*.json")}
    labels = {p.name.removesuffix(".expected-error.txt") for p in invalid.glob("*.expected-error.txt")}
    assert requests == labels and len(requests) >= 30
    assert {p.suffix for p in invalid.iterdir()} == {".json", ".txt"}


def test_both_shapes_have_valid_examples() -> None:
    shapes = {parse_request(p.read_bytes(), p.name).shape for p in examples("valid")}
    assert shapes == {"v1", "legacy"}


@pytest.mark.parametrize(
    ("model", "file"), [(Request, "request.schema.json"), (LegacyRequest, "legacy-request.schema.json")]
)
def test_the_committed_schema_is_what_the_model_generates(model: type, file: str) -> None:
    committed = (SPEC / file).read_text()
    assert committed == schema_text(model), f"{file} drifted: run `python -m hearth.queue --write queue-spec`"
    schema = json.loads(committed)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False


def test_the_schema_is_printed_by_python_m_hearth_queue() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hearth.queue", "--schema"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert proc.stdout == (SPEC / "request.schema.json").read_text()


def test_the_readme_documents_every_field_of_both_shapes() -> None:
    readme = (SPEC / "README.md").read_text()
    for model in (Request, LegacyRequest):
        missing = [name for name in model.model_fields if f"| `{name}` |" not in readme]
        assert not missing, f"queue-spec/README.md has no table row for {missing}"


def test_the_legacy_shape_maps_field_by_field() -> None:
    body = {
        "name": "builder",
        "model": "qwen2.5-coder:7b",
        "prompt": "Add a flag.",
        "mode": "bypass",
        "creds": " github , pypi ",
        "tools": "read_file,write_file,",
        "allowed_hosts": "pypi.org",
        "swarm": False,
        "marathon": False,
        "checkin": False,
        "evolve": False,
        "grow": False,
    }
    parsed = parse_request(json.dumps(body).encode(), "cc-7.json")
    assert parsed.shape == "legacy"
    assert parsed.request.model_dump(exclude_none=True) == {
        "version": 1,
        "id": "cc-7",
        "goal": "Add a flag.",
        "model": "qwen2.5-coder:7b",
        "agent_name": "default",
        "label": "builder",  # a profile of that name runs it, when one exists (tests/hearth/queue/test_labels.py)
        "mode": "bypass",
        "allowed_tools": ["read_file", "write_file"],
        "timeout_s": 3600,
        "credentials": ["github", "pypi"],
        "egress": ["pypi.org"],
        "source": "command-center",
        "requested_by": "",
        "evolve": False,
    }


def test_empty_legacy_strings_mean_the_field_was_not_given() -> None:
    body = {"name": "", "model": "", "prompt": "hello", "mode": "", "creds": "", "tools": "", "allowed_hosts": " "}
    request = parse_request(json.dumps(body).encode(), "cc-8.json").request
    # absent, not a default: the agent profile (else the host) decides what was not given
    assert (request.agent_name, request.model, request.mode, request.max_iterations) == ("default", None, None, None)
    assert (request.allowed_tools, request.credentials, request.egress) == (None, None, None)


def test_a_body_with_goal_or_version_is_never_read_as_legacy() -> None:
    assert refusal(b'{"id": "x", "goal": "g", "prompt": "p"}', "x.json") == 'unknown field "prompt"'
    assert refusal(b'{"version": 1, "prompt": "p"}', "x.json").startswith('unknown field "prompt"; ')


def test_a_file_over_one_mebibyte_is_refused() -> None:
    data = json.dumps({"id": "big", "goal": "x" * (1 << 20)}).encode()
    assert refusal(data, "big.json") == f"larger than 1 MiB ({len(data)} bytes)"


def test_nesting_deep_enough_to_exhaust_the_stack_is_refused_not_crashed() -> None:
    assert refusal(b"[" * 500_000, "deep.json") == "nested deeper than 8 levels"
    assert refusal(b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "deep.json") == "nested deeper than 8 levels"


def test_a_name_that_is_not_json_is_refused() -> None:
    assert refusal(b'{"id": "x", "goal": "g"}', "x.txt") == "not a .json file; requests are named <id>.json"


def test_several_problems_are_each_reported_once() -> None:
    reason = refusal(b'{"id": "x", "goal": "g", "mode": 1, "max_iterations": "a", "evolve": 0}', "x.json")
    said = reason.split("; ")
    assert [p.split(" ", 1)[0] for p in said] == ["mode", "max_iterations", "evolve"] and len(set(said)) == 3
    assert said[0].startswith("mode must be 'plan', 'auto' or 'bypass', got 1")


@pytest.mark.parametrize(
    "path", [p for p in examples("valid") if not p.name.startswith("legacy")], ids=lambda p: p.name
)
def test_a_request_file_also_validates_as_plain_decoded_json(path: Path) -> None:
    """What a program holding `json.loads(file)` does gives the same request as the queue's parser."""
    assert Request.model_validate(json.loads(path.read_bytes())) == parse_request(path.read_bytes(), path.name).request


def test_a_file_starting_with_a_byte_order_mark_is_refused_saying_so() -> None:
    text = b'{"version": 1, "id": "bom", "goal": "g", "source": "cli"}'
    assert parse_request(text, "bom.json").request.id == "bom"
    reason = refusal(b"\xef\xbb\xbf" + text, "bom.json")
    assert reason == "starts with a UTF-8 byte-order mark; a request is UTF-8 without one"
