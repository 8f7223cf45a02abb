"""The chores bench/chores.py runs (chores.toml, fixtures/), the two loops it runs them through
(hearth_side.py, plain.py), the tap that measures both (tap.py) and what the runs add up to (figures.py)."""
