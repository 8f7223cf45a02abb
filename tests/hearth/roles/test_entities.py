"""Entity types parsed strictly from entity-defs/entities.md, and their ids: deterministic, and never
a path (an id with '/' or '..' is refused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hearth.errors import ConfigError, UsageError
from hearth.roles.entities import checked_id, entity_id, load_types, parse_types

DEFS = """# The household's entities

## bill
```yaml
label: Bill
directory: bills
id: year-sequence
slug_from: payee
fields:
  payee: {type: string, required: true}
  amount: {type: number, required: true}
  status: {type: string, default: open}
files:
  notes.md: templates/bill-notes.md
status_field: status
```

## household
```yaml
label: The household
directory: household
id: singleton
```
"""


def test_the_declared_types_are_read_with_their_fields_and_files(tmp_path: Path) -> None:
    (tmp_path / "entity-defs").mkdir()
    (tmp_path / "entity-defs" / "entities.md").write_text(DEFS)
    bill, home = load_types(tmp_path)
    assert (bill.key, bill.label, bill.directory, bill.id, bill.prefix, bill.slug_from) == (
        "bill", "Bill", "bills", "year-sequence", "bill", "payee",
    )  # fmt: skip
    assert [(f.name, f.type, f.required, f.default) for f in bill.fields] == [
        ("payee", "string", True, None),
        ("amount", "number", True, None),
        ("status", "string", False, "open"),
    ]
    assert bill.files == {"notes.md": "templates/bill-notes.md"} and bill.status_field == "status"
    assert (home.key, home.id) == ("household", "singleton")
    assert load_types(tmp_path / "nowhere") == []


@pytest.mark.parametrize(
    ("change", "line", "said"),
    [
        (("id: year-sequence", "id: random"), 7, "bill.id: must be one of prefixed-slug, year-sequence, singleton"),
        (("label: Bill\n", "label: Bill\ncolour: red\n"), 6, "bill.colour: unknown key"),
        (("directory: bills", "directory: ../bills"), 6, "bill.directory: one directory name"),
        (("  amount: {type: number", "  amount: {type: money"), 11, "bill.fields.amount.type: must be one of"),
        (("status_field: status", "status_field: state"), 15, "bill.status_field: 'state' is not a declared field"),
        (("  notes.md: templates/", "  notes.md: ../../etc/"), 14, "bill.files.notes.md: a template path inside"),
        (("label: Bill\n", "label: [Bill\n"), 6, "bill: not valid YAML"),
        (("slug_from: payee\n", ""), 5, "bill.slug_from: required for id year-sequence"),
        (("## household", "## bill"), 18, "bill: the type is declared twice"),
    ],
)
def test_a_mistake_is_one_line_naming_the_file_the_line_and_the_key(
    tmp_path: Path, change: tuple[str, str], line: int, said: str
) -> None:
    path = tmp_path / "entities.md"
    with pytest.raises(ConfigError) as caught:
        parse_types(DEFS.replace(*change), path)
    assert str(caught.value).startswith(f"{path}:{line}: {said}"), str(caught.value)
    assert "\n" not in str(caught.value)


def test_ids_are_decided_by_the_types_strategy_and_the_same_fields_give_the_same_id(tmp_path: Path) -> None:
    bill, home = parse_types(DEFS, tmp_path / "entities.md")
    fields = {"payee": "Gas & Co.", "amount": 84.2}
    assert entity_id(bill, fields, [], 2026) == "2026-001-gas-co"
    assert entity_id(bill, fields, ["2026-001-gas-co"], 2026) == "2026-001-gas-co"
    assert entity_id(bill, {"payee": "Water"}, ["2026-001-gas-co", "2025-007-rent"], 2026) == "2026-002-water"
    assert entity_id(home, {}, [], 2026) == "household"
    with pytest.raises(UsageError, match="payee must have letters or digits"):
        entity_id(bill, {"payee": "../.."}, [], 2026)


@pytest.mark.parametrize("bad", ["../record", "bills/2026-001", "..", "a..b", "Bill", "", "x" * 200])
def test_an_entity_id_with_a_path_or_outside_its_letters_is_refused(bad: str) -> None:
    with pytest.raises(UsageError, match="is refused"):
        checked_id(bad)


def test_a_roles_run_creates_records_through_its_tools_and_finds_them_again(tmp_path: Path) -> None:
    import io
    import json

    from hearth.run.goal import GoalRequest
    from hearth.run.runner import run_goal
    from tests.fake_ollama import FakeOllama, final_answer, tool_call
    from tests.roles_support import make_role, rows, settings_for

    make_role(tmp_path / "config", "household", 'home = true\nmodel = "qwen2.5-coder"\n')
    (tmp_path / "config" / "entity-defs" / "templates").mkdir(parents=True)
    (tmp_path / "config" / "entity-defs" / "entities.md").write_text(DEFS)
    (tmp_path / "config" / "entity-defs" / "templates" / "bill-notes.md").write_text("Notes on {id}, {payee}\n")
    bill = {"payee": "Gas Co", "amount": 84.2}
    script = [
        tool_call("create_bill_record", bill),
        tool_call("create_bill_record", {**bill, "amount": 90}),  # the same payee: the same id
        tool_call("entity_lookup", {"type": "bill", "field": "status", "value": "open"}),
        tool_call("entity_lookup", {"type": "bill", "id": "../../agent"}),
        final_answer("filed"),
    ]
    with FakeOllama(script) as fake:
        settings = settings_for(tmp_path, fake.url)
        run_id, outcome = run_goal(GoalRequest("file the bill", agent_name="household"), settings, out=io.StringIO())
    assert outcome.status == "done"
    tools = {t["function"]["name"] for t in fake.requests[0]["tools"]}
    assert {"create_bill_record", "create_household_record", "entity_lookup"} <= tools
    year = __import__("datetime").date.today().year
    record = tmp_path / "state" / "roles" / "household" / "entities" / "bills" / f"{year}-001-gas-co"
    assert (record / "record.md").read_text() == (
        f"---\nid: {year}-001-gas-co\ntype: bill\npayee: Gas Co\namount: 84.2\nstatus: open\n---\n# Bill {year}-001-gas-co\n"
    )
    assert (record / "notes.md").read_text() == f"Notes on {year}-001-gas-co, Gas Co\n"
    results = [json.loads(s["output"]) if s["output"].startswith("{") else s["output"] for s in rows(
        settings, "select output from steps where run_id = ? and kind = 'tool' order by id", run_id
    )]  # fmt: skip
    assert results[1].startswith(f"Bill {year}-001-gas-co exists already") and "nothing written" in results[1]
    assert results[2] == f"{year}-001-gas-co: payee=Gas Co, amount=84.2, status=open"
    assert "is refused" in results[3]
