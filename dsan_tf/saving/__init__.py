"""Saving and serving trained models: `serving` (the SavedModel a server reads, and
`load`, which opens every saved form as its Keras model, or `SavedModelClassifier` for a
SavedModel alone), `export` (a run's or an ensemble's
export directory, TF Serving's layout) and `model_card` (the card each export carries)."""
