"""An experiment, as TF Model Garden's `official/core` frames one: its configuration
(`config`: `ExperimentConfig` and its data, model and training parts), the task that builds
its data and model (`task`: `NLITask`), how it is compiled (`optimization`) and the run
directory it writes (`rundir`: `RunDirectory` and every file name of a run)."""
