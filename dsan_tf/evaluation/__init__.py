"""Evaluation and analysis of trained models: scoring a model on a data source
(`evaluator`), the metrics and significance tests (`metrics`), what the attention does
(`analysis`), the drawings (`plots`) and the papers' figures made from runs (`figures`)."""
