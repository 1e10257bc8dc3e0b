"""Saving and serving trained models: `serving` (the SavedModel a server reads, and
`load`/`LoadedModel`, which open every saved form), `export` (a run's or an ensemble's
export directory, TF Serving's layout) and `model_card` (the card each export carries)."""
