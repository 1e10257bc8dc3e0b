"""What a clone holds beside the library: `python -m experiments.NAME` for each program of
`dsan_tf.programs` (train, evaluate, ensemble, embed, export, predict, summary, visualize),
the study (`results`, `study_report`) and the benchmarks (`benchmark`, `pipeline_benchmark`,
`backends`, `tokenizer_agreement`, `afdmn_init`). Not installed: `pip install` ships
`dsan_tf` and its console scripts only."""
