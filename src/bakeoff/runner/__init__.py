"""The runner: run context, bake-off orchestration, costs, results and configuration."""
