"""Evaluations: suites of cases made from the box's own runs, run against models, scored, compared.

    suite.py     $HEARTH_CONFIG_DIR/evals/SUITE.toml: the cases, their start and their checks
    store.py     the audit's eval_runs and eval_results rows (the only code that writes them)
    launch.py    `hearth eval run`: one ordinary queued request per case, model and repeat
    seed.py      a queued eval run's workspace filled before it starts (admission calls it)
    fixture.py   where a case's fixture may come from (under the evals directory, nothing of the state)
    checks.py    one finished run judged by its case's checks
    results.py   the matrix: per case and model, per model; `diff` of two eval runs
    watch.py     a finished run scored; a whole eval finished; the regression alert

Every case runs as an ordinary audited run (source `eval`, requested_by `eval:EVAL_ID`) through the
queue, so the launchers, the walls and the budgets apply as to any other run.
"""
