"""The curated mutants of `python -m tools.mutation`: one-line changes of what the code
does, each with what a user would see and the test files (or node ids) that must catch it.
Every file named here is part of the default suite (`tools.mutation` checks it).

Each entry: (file, the text replaced (it occurs exactly once), its replacement, what a
user would see, tests).
"""

MUTANTS = [
    # Run directories: identity, refusal, epochs extended.
    ("dsan_tf/rundir.py",
     'MAY_CHANGE = ("tfds_data_dir", "embeddings_cache_dir", "epochs")',
     'MAY_CHANGE = ("tfds_data_dir", "embeddings_cache_dir")',
     "a finished run asked for more epochs is refused as another configuration",
     ["tests/test_training_library.py"]),
    ("dsan_tf/rundir.py", 'row["epoch"] += 1', 'row["epoch"] += 0',
     "an older history.csv counts epochs from 0 in the tables and curves",
     ["tests/test_first_hour.py::test_history_counts_epochs_from_one_also_in_older_files"]),
    # Best epoch.
    ("dsan_tf/training/callbacks.py",
     "value <= self.best:", "value < self.best - 1.0:",
     "best.keras and results.json hold the last epoch, not the best one",
     ["tests/test_training_library.py"]),
    # Schedules.
    ("dsan_tf/training/callbacks.py", "rate.assign(rate * 0.5)", "rate.assign(rate * 0.9)",
     "--halve_on_dev_drop lowers the learning rate by 10%, not half",
     ["tests/test_schedules.py", "tests/test_afdmn.py"]),
    ("dsan_tf/optimization.py", "t_mul=1.0, m_mul=1.0,", "t_mul=2.0, m_mul=1.0,",
     "AdamWR's restarts come at epochs 10, 30, 70 instead of every 10",
     ["tests/test_schedules.py"]),
    # Statistics of the study.
    ("dsan_tf/metrics.py", "    return min(1.0, 2.0 * tail)", "    return min(1.0, tail)",
     "McNemar p-values half as large: differences called significant that are not",
     ["tests/test_metrics.py"]),
    ("dsan_tf/metrics.py",
     "p = min(1.0, 2.0 * min(np.sum(means <= 0), np.sum(means >= 0)) / resamples)",
     "p = min(1.0, min(np.sum(means <= 0), np.sum(means >= 0)) / resamples)",
     "paired-bootstrap p-values one-sided in the results table",
     ["tests/test_metrics.py"]),
    ("dsan_tf/metrics.py",
     "f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0",
     "f1 = precision * recall / (precision + recall) if precision + recall else 0.0",
     "per-class F1 halved in every evaluation report",
     ["tests/test_metrics.py"]),
    # Text, vocabulary, word-vector cache.
    ("dsan_tf/data/vocabulary.py", "key=lambda item: (-item[1], item[0]))",
     "key=lambda item: (item[1], item[0]))",
     "ids by rising frequency: the same data, other ids than every earlier run",
     ["tests/test_text.py"]),
    ("dsan_tf/data/embeddings.py",
     'return hashlib.sha256(f"{text}|{vocabulary.fingerprint()}".encode()).hexdigest()[:20]',
     'return hashlib.sha256(f"{text}".encode()).hexdigest()[:20]',
     "a cached word-vector matrix of another vocabulary is reused: wrong vectors",
     ["tests/test_text.py"]),
    ("dsan_tf/data/preprocessor.py", "return ids[:, :self.max_length], cut",
     "return ids[:, :self.max_length + 1], cut",
     "sentences read one token beyond max_length while the counts say they were cut",
     ["tests/test_text_model.py::test_truncation_is_counted_for_text_in_memory_and_in_a_dataset",
      "tests/test_user_facing.py"]),
    ("dsan_tf/data/preprocessor.py", "            value = LABEL_IDS[value]",
     "            value = 0",
     "labels given as names all train as entailment",
     ["tests/test_text_model.py::test_text_in_fit_evaluate_and_predict_in_every_form_a_keras_user_writes"]),
    # Masks (the model itself).
    ("dsan_tf/masks.py", "        return ops.less(cols, rows)",
     "        return ops.less_equal(cols, rows)",
     "the forward block attends to the word itself (the paper masks the diagonal)",
     ["tests/test_masks.py"]),
    # Serving and the Keras task: probabilities, the ensemble, presets.
    ("dsan_tf/models/text_model.py", "    return exp / exp.sum(axis=-1, keepdims=True)",
     "    return logits",
     "predict returns logits where it promises probabilities",
     ["tests/test_text_model.py::test_text_in_fit_evaluate_and_predict_in_every_form_a_keras_user_writes"]),
    ("dsan_tf/models/ensemble.py",
     "return ops.log(ops.maximum(sum(probabilities) / len(probabilities), 1e-30))",
     "return ops.log(ops.maximum(probabilities[0], 1e-30))",
     "an ensemble answers with its first member alone",
     ["tests/test_text_model.py::test_presets_keras_files_and_the_ensemble_give_the_same_numbers"]),
    ("dsan_tf/serving.py",
     "probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)",
     "probabilities = tf.cast(logits, tf.float32)",
     "the exported SavedModel serves logits as probabilities",
     ["tests/test_text_model.py::test_the_saved_model_and_load_agree_with_predict"]),
    ("dsan_tf/models/preset.py", "    preprocessor.load_assets(os.path.join(path, PREPROCESSOR_ASSETS))",
     "    preprocessor.set_vocabulary(__import__('dsan_tf.data', fromlist=['x']).Vocabulary([]))",
     "a preset loads with an empty vocabulary: every word unknown",
     ["tests/test_text_model.py::test_presets_keras_files_and_the_ensemble_give_the_same_numbers"]),
    # Error paths that must refuse rather than skip.
    ("dsan_tf/data/preprocessor.py",
     "            raise ValueError(f\"{what}[{index}] is empty: a sentence needs at least one word \"",
     "            continue\n            raise ValueError(f\"{what}[{index}] is empty: a sentence needs at least one word \"",
     "an empty sentence is classified from padding alone",
     ["tests/test_user_facing.py", "tests/test_text_model.py::test_text_in_fit_evaluate_and_predict_in_every_form_a_keras_user_writes"]),
]
