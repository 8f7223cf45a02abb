"""The operator's leash: budgets, alerts, missions and their calendar."""
