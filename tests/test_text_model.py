"""The Keras-native task: raw text in `fit`, `evaluate` and `predict`,
`compile()` alone, presets, the ensemble as one model, registration on a task model's import,
and one raw-text path (predict, `dsan_tf.load`, the SavedModel agree)."""

import json
import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest

import dsan_tf
from dsan_tf.data import NLIPreprocessor, Vocabulary
from dsan_tf.data.preprocessor import TruncationWarning
import families
from helpers import ROOT, shared_once

pytestmark = pytest.mark.tensorflow  # text is TensorFlow's strings

PREMISES = ["A man in a red shirt is playing the guitar on a busy street corner.",
            "Two dogs run.", "The woman who sold us the car didn't smile.",
            "Children are swimming in a lake near the mountains at sunset."]
HYPOTHESES = ["A man plays music.", "Cats sleep.", "Someone sold a car.",
              "Nobody is in the water."]
LABELS = ["entailment", "contradiction", "entailment", "contradiction"]


def _classifier(family="dsan", max_length=12, seed=0):
    keras.utils.set_random_seed(seed)
    vocabulary = Vocabulary.build(PREMISES + HYPOTHESES, lowercase=True)
    extra = {"num_heads": 2, "ffn_dim": 16} if family == "dsan" else {}
    config = dsan_tf.model_config(family, vocab_size=vocabulary.size, embedding_dim=8,
                                  classifier_units=16, **extra)
    model = dsan_tf.build_model(family, config)
    model.preprocessor = NLIPreprocessor(vocabulary, max_length=max_length)
    return model


def _ids(model):
    return model.preprocessor({"premise": PREMISES, "hypothesis": HYPOTHESES})


def test_text_in_fit_evaluate_and_predict_in_every_form_a_keras_user_writes():
    """A dict of lists, a tuple, NumPy strings, a tf.data of string dicts (batched or
    not, with labels): the same probabilities as the ids the preprocessor makes; labels
    as names or ids; fit learns the four pairs."""
    import tensorflow as tf

    model = _classifier()
    model.compile()
    text = {"premise": PREMISES, "hypothesis": HYPOTHESES}
    expected = model.predict(_ids(model))
    assert expected.shape == (4, 3)
    np.testing.assert_allclose(expected.sum(axis=1), 1.0, atol=1e-5)  # probabilities
    logits = np.asarray(model(_ids(model)))
    np.testing.assert_allclose(expected, keras.ops.softmax(logits).numpy(), atol=1e-6)
    # Text to `model(...)`: one sentence on what to call instead.
    with pytest.raises(ValueError, match=r"^dsan\(\.\.\.\) takes token ids and returns "
                       r"logits; for text use dsan\.predict\(\.\.\.\) \(probabilities\), "
                       r"or dsan\(model\.preprocessor\(\.\.\.\)\) for the logits of text\.$"):
        model(text)
    np.testing.assert_allclose(np.asarray(model(model.preprocessor(text))), logits, atol=1e-6)
    forms = [text, (PREMISES, HYPOTHESES),
             {side: np.array(values) for side, values in text.items()},
             {side: np.array(values, dtype=object) for side, values in text.items()},
             tf.data.Dataset.from_tensor_slices(text),
             tf.data.Dataset.from_tensor_slices(text).batch(3)]
    for form in forms:
        np.testing.assert_allclose(model.predict(form), expected, atol=1e-6)
    np.testing.assert_allclose(model.predict_on_batch(text), expected, atol=1e-6)
    history = model.fit(text, LABELS, epochs=30, batch_size=2, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.evaluate(text, [0, 2, 0, 2], verbose=0, return_dict=True)["accuracy"] == 1.0
    labelled = tf.data.Dataset.from_tensor_slices((text, [0, 2, 0, 2])).batch(2)
    assert model.evaluate(labelled, verbose=0, return_dict=True)["accuracy"] == 1.0
    assert list(model.predict(text).argmax(axis=1)) == [0, 2, 0, 2]
    with pytest.raises(ValueError, match=r"label 1 is 'maybe'"):
        model.fit(text, ["entailment", "maybe", "neutral", "neutral"], verbose=0)
    with pytest.raises(ValueError, match=r"hypotheses\[2\] is empty"):
        model.predict({"premise": PREMISES, "hypothesis": ["a", "b", " ", "c"]})
    # Label names inside a tf.data, and keras-hub's
    # ((premises, hypotheses), labels) datasets, in fit, evaluate and predict.
    names = ["entailment", "contradiction", "entailment", "contradiction"]
    trained = model.get_weights()
    for labelled in (tf.data.Dataset.from_tensor_slices((text, names)).batch(2),
                     tf.data.Dataset.from_tensor_slices(((PREMISES, HYPOTHESES), names)),
                     tf.data.Dataset.from_tensor_slices(((PREMISES, HYPOTHESES),
                                                         [0, 2, 0, 2])).batch(4)):
        assert model.evaluate(labelled, verbose=0, return_dict=True)["accuracy"] == 1.0
    # fit reads them through the same path as evaluate: once, on keras-hub's form.
    assert len(model.fit(labelled, epochs=1, verbose=0).history["loss"]) == 1
    model.set_weights(trained)
    pairs = tf.data.Dataset.from_tensor_slices((PREMISES, HYPOTHESES))
    np.testing.assert_allclose(model.predict(pairs), model.predict(text), atol=1e-6)
    wrong = tf.data.Dataset.from_tensor_slices((text, ["entailment", "maybe", "neutral",
                                                       "neutral"])).batch(4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="a label is none of "
                       "entailment, neutral, contradiction"):
        model.evaluate(wrong, verbose=0)


def test_pandas_columns_are_text_and_labels():
    """Pandas Series and DataFrames (pandas 3's string dtype) in predict,
    fit and evaluate, as keras-hub takes them: the probabilities of the lists."""
    pandas = pytest.importorskip("pandas")
    model = _classifier()
    model.compile()
    frame = pandas.DataFrame({"premise": PREMISES, "hypothesis": HYPOTHESES,
                              "label": ["entailment", "contradiction", "entailment",
                                        "contradiction"]})
    expected = model.predict({"premise": PREMISES, "hypothesis": HYPOTHESES})
    np.testing.assert_allclose(model.predict({"premise": frame.premise,
                                              "hypothesis": frame.hypothesis}), expected,
                               atol=1e-6)
    np.testing.assert_allclose(model.predict(frame[["premise", "hypothesis"]]), expected,
                               atol=1e-6)
    history = model.fit(frame[["premise", "hypothesis"]], frame.label, epochs=1,
                        batch_size=2, verbose=0)
    assert len(history.history["loss"]) == 1
    result = model.evaluate(frame[["premise", "hypothesis"]], frame.label, verbose=0,
                            return_dict=True)
    assert 0.0 <= result["accuracy"] <= 1.0


def test_truncation_is_counted_for_text_in_memory_and_in_a_dataset():
    import tensorflow as tf

    model = _classifier(max_length=6)
    text = {"premise": PREMISES, "hypothesis": HYPOTHESES}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, cut = model.predict(text, return_truncated=True)
        model.predict(tf.data.Dataset.from_tensor_slices(text).batch(2))
    # Premise tokens: 16, 4, 11 ("did", "n't"), 12; hypotheses 5, 3, 5, 6: all fit in 6.
    assert list(cut["premise"]) == [10, 0, 5, 6] and list(cut["hypothesis"]) == [0, 0, 0, 0]
    messages = [str(w.message) for w in caught if w.category is TruncationWarning]
    assert messages[0].startswith("3 of 4 pairs were longer than 6 tokens and were cut to "
                                  "it (premise 3, hypothesis 0)")
    assert messages[1].startswith("3 pairs were longer than 6 tokens")


def test_compile_without_arguments_is_the_papers_setup_and_arguments_override_it():
    """A task comes compiled with the paper's setup, as keras-hub's do:
    `fit` works before any `compile()`."""
    model = _classifier()
    assert model.compiled and isinstance(model.optimizer, keras.optimizers.Adam)
    assert len(model.fit(_ids(model), np.array([0, 2, 0, 2]), epochs=1,
                         verbose=0).history["loss"]) == 1
    model = _classifier()
    model.compile()
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    assert float(model.optimizer.learning_rate) == pytest.approx(1e-3)
    assert model.loss.get_config()["from_logits"] is True
    model.fit(_ids(model), np.array([0, 2, 0, 2]), epochs=1, verbose=0)
    assert "accuracy" in model.get_metrics_result()
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    assert isinstance(model.optimizer, keras.optimizers.SGD)


def test_a_preprocessor_leaves_the_step_compiled():
    """The preprocessor's lookup runs in tf.data, outside the step: a model holding it
    supports XLA as one without it does (every layer's `supports_jit`, what Keras reads
    before it compiles a step; JAX ran such a model op by op, 5 times slower on
    docs/API.md's example). The next test's reloaded model compiles on JAX."""
    model = _classifier()
    assert model.preprocessor.lookup in list(model._flatten_layers())
    assert all(layer.supports_jit for layer in model._flatten_layers())


def test_presets_keras_files_and_the_ensemble_give_the_same_numbers(tmp_path):
    """save_to_preset writes keras-hub's layout; from_preset, a `.keras` file and
    `dsan_tf.load` give the same probabilities back; an ensemble of a DSAN and a CBOW with
    different truncation is one Keras model whose probabilities are the members' mean,
    through its own preset and `.keras` file."""
    text = {"premise": PREMISES, "hypothesis": HYPOTHESES}
    dsan, cbow = _classifier(), _classifier("cbow", max_length=5, seed=1)
    expected = dsan.predict(text)
    dsan.compile(optimizer=keras.optimizers.SGD(0.05))
    dsan.save_to_preset(tmp_path / "preset")
    assert sorted(p.name for p in (tmp_path / "preset").iterdir()) == [
        "assets", "config.json", "metadata.json", "model.weights.h5", "preprocessor.json",
        "task.json", "task.weights.h5"]
    metadata = json.loads((tmp_path / "preset" / "metadata.json").read_text())
    assert metadata["class"] == "NLIClassifier" and metadata["family"] == "dsan"
    assert metadata["parameter_count"] == dsan.count_params()
    vocabulary = json.loads((tmp_path / "preset" / "assets" / "preprocessor" /
                             "vocab.json").read_text())
    assert vocabulary["words"] == dsan.preprocessor.vocabulary.words
    again = dsan_tf.NLIClassifier.from_preset(tmp_path / "preset")
    np.testing.assert_allclose(again.predict(text), expected, atol=1e-6)
    assert again.preprocessor.max_length == 12
    # Compiled as it was trained, not with the paper's defaults.
    assert type(again.optimizer).__name__ == "SGD"
    assert float(again.optimizer.learning_rate) == pytest.approx(0.05)
    loaded = dsan_tf.load(str(tmp_path / "preset"))  # the same Keras model, compiled alike
    assert type(loaded) is type(again) and type(loaded.optimizer).__name__ == "SGD"
    np.testing.assert_allclose(loaded.predict(text), expected, atol=1e-6)
    # The labels convenience: the same probabilities, named.
    named = loaded.classify(PREMISES, HYPOTHESES)
    np.testing.assert_allclose(named["probabilities"], expected, atol=1e-6)
    assert named["labels"] == [dsan_tf.LABELS[i] for i in expected.argmax(-1)]
    labels = ["entailment", "contradiction", "neutral", "entailment"]
    report = loaded.evaluate(text, labels, return_dict=True, verbose=0)
    keras_report = again.evaluate(text, labels, return_dict=True, verbose=0)
    assert report["accuracy"] == pytest.approx(keras_report["accuracy"])
    assert report["loss"] == pytest.approx(keras_report["loss"], rel=1e-4)
    dsan.save(tmp_path / "dsan.keras")
    np.testing.assert_allclose(keras.saving.load_model(tmp_path / "dsan.keras").predict(text),
                               expected, atol=1e-6)

    ensemble = dsan_tf.NLIEnsemble([dsan, cbow])
    mean = (expected + cbow.predict(text)) / 2
    np.testing.assert_allclose(ensemble.predict(text), mean, atol=1e-6)
    ensemble.save(tmp_path / "ensemble.keras")
    ensemble.save_to_preset(tmp_path / "ensemble")
    for loaded in (keras.saving.load_model(tmp_path / "ensemble.keras"),
                   dsan_tf.NLIEnsemble.from_preset(tmp_path / "ensemble")):
        assert type(loaded).__name__ == "NLIEnsemble"
        assert [m.preprocessor.max_length for m in loaded.members] == [12, 5]
        np.testing.assert_allclose(loaded.predict(text), mean, atol=1e-6)


def test_the_saved_model_and_load_agree_with_predict(tmp_path):
    """The exported SavedModel (traced preprocessor around the model), `dsan_tf.load` of
    the Keras file and of the SavedModel alone: one set of numbers."""
    import tensorflow as tf

    from dsan_tf.saving import serving

    model = _classifier()
    expected = model.predict((PREMISES, HYPOTHESES))
    serving.export(model, str(tmp_path / "saved"))
    saved = tf.saved_model.load(str(tmp_path / "saved"))
    out = saved.signatures["serving_default"](premise=tf.constant(PREMISES),
                                              hypothesis=tf.constant(HYPOTHESES))
    np.testing.assert_allclose(out["probabilities"].numpy(), expected, atol=1e-5)
    # The Keras model beside it: loaded back as the model it was.
    again = dsan_tf.NLIClassifier.from_preset(tmp_path / "saved")
    np.testing.assert_allclose(again.predict((PREMISES, HYPOTHESES)), expected, atol=1e-6)
    (tmp_path / "saved" / "model.keras").unlink()
    with pytest.raises(ValueError, match="trust_savedmodel=True"):
        serving.load(str(tmp_path / "saved"))  # a program: read only where trusted
    loaded = serving.load(str(tmp_path / "saved"), trust_savedmodel=True)
    assert isinstance(loaded, serving.SavedModelClassifier)  # the signatures alone
    labels = [0, 2, 1, 0]
    assert loaded.evaluate((PREMISES, HYPOTHESES), labels)["accuracy"] == pytest.approx(
        np.mean(expected.argmax(-1) == labels))
    np.testing.assert_allclose(loaded.predict((PREMISES, HYPOTHESES)), expected, atol=1e-5)
    named = loaded.classify(PREMISES, HYPOTHESES)
    np.testing.assert_allclose(named["probabilities"], expected, atol=1e-5)
    assert named["labels"] == [dsan_tf.LABELS[i] for i in expected.argmax(-1)]
    vectors = saved.signatures["encode"](sentences=tf.constant(PREMISES))["embedding"]
    np.testing.assert_allclose(model.encode(PREMISES), vectors.numpy(), atol=1e-5)
    # As a Keras layer: a dict, as a Keras model takes it.
    layer = keras.layers.TFSMLayer(str(tmp_path / "saved"), call_endpoint="serve_pairs")
    out = layer({"premise": tf.constant(PREMISES), "hypothesis": tf.constant(HYPOTHESES)})
    np.testing.assert_allclose(out["probabilities"].numpy(), expected, atol=1e-5)


REGISTERED = """
import sys
{first}
# Registration is plain imports: no finder of ours (absl and six put their own).
assert not [finder for finder in sys.meta_path
            if type(finder).__module__.startswith("dsan_tf")], sys.meta_path
import keras
for path in sys.argv[1:]:
    loaded = keras.{loader}(path)
    print(type(loaded).__name__, type(loaded.preprocessor).__name__, {answers} and
          loaded.predict_on_batch({{"premise": ["a dog runs"], "hypothesis": ["a dog"]}}).shape)
    if hasattr(loaded, "backbone"):  # a backbone alone, by its registered name
        again = keras.saving.deserialize_keras_object(
            keras.saving.serialize_keras_object(loaded.backbone))
        assert type(again) is type(loaded.backbone), again
"""


@pytest.fixture(scope="session")
def keras_files(tmp_path_factory):
    """A `.keras` file of every family and of an ensemble, each with its preprocessor, made
    once per test run (`shared_once`)."""
    from dsan_tf.models import registry

    def save(directory):
        directory.mkdir()
        paths = []
        vocabulary = Vocabulary.build(PREMISES + HYPOTHESES, lowercase=True)
        for family in registry.names():
            # Each family's smallest model (its testing.py's `SMALL`; a file each is saved
            # and loaded).
            config = dsan_tf.model_config(family, vocab_size=vocabulary.size, embedding_dim=10,
                                          **families.small(family))
            model = dsan_tf.build_model(family, config)
            model.preprocessor = NLIPreprocessor(vocabulary)
            model.save(directory / f"{family}.keras")
            paths.append(str(directory / f"{family}.keras"))
        dsan_tf.NLIEnsemble([keras.saving.load_model(paths[0]), keras.saving.load_model(
            paths[2])]).save(directory / "ensemble.keras")
        return json.dumps(paths + [str(directory / "ensemble.keras")])

    return json.loads(shared_once(tmp_path_factory, "keras_files", save)[1])


@pytest.mark.parametrize("first,loader,answers", [
    ("from dsan_tf import NLIClassifier", "saving.load_model", True),
    # The module itself, Keras imported first (registration once waited for a later import).
    ("import keras; from dsan_tf.models.nli_classifier import NLIClassifier",
     "models.load_model", False)])  # the same models: 9 s less
def test_a_task_model_s_import_registers_every_class_for_keras_loaders(keras_files, tmp_path,
                                                                       first, loader, answers):
    """Once a task model's class is imported (before or after Keras), Keras' own loaders read
    every family's `.keras` file and an ensemble's, preprocessor included, Keras finds every
    family's backbone by its registered name, and (once) the models answer text; nothing is
    put on `sys.meta_path`."""
    from dsan_tf.models import registry

    script = REGISTERED.format(first=first, loader=loader, answers=answers)
    result = subprocess.run([sys.executable, "-c", script, *keras_files], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    answer = " (1, 3)" if answers else " False"
    assert result.stdout.strip().splitlines() == [
        f"NLIClassifier NLIPreprocessor{answer}"] * len(registry.names()) + [
        f"NLIEnsemble NLIPreprocessor{answer}"]


# Text of 40 pairs whose longest sentences grow batch by batch (batches of 4), predicted on
# JAX with XLA's compiles counted: each new length would be a program of its own.
COUNTED = """
import logging
import jax
sys.path.insert(0, "tests")
from jax_shapes_probe import Compiles
words = " ".join(sys.argv[2:10]).split()
grown = [" ".join((words * 8)[:n]) for n in range(1, 41)]
jax.config.update("jax_log_compiles", True)
handler = Compiles()
logging.getLogger("jax").addHandler(handler)
m.predict((grown, grown[::-1]), batch_size=4)
print(sum(handler.counts.values()), json.dumps(dict(handler.counts)))
"""


@pytest.mark.jax
def test_text_runs_on_the_jax_backend_with_the_same_numbers(tmp_path):
    """Strings stay in tf.data, the model runs on JAX: the probabilities of a saved model
    are TensorFlow's, from a compiled step (the preprocessor does not turn XLA off). Text
    is padded to a few lengths (`BOUNDED_LENGTHS`), so that 40 pairs of 1 to 40 words in
    10 batches compile a program for each of 8, 12, 16, 24, 32 and 48 tokens at most, not
    one for each batch's longest sentence (10)."""
    model = _classifier(max_length=64)
    expected = model.predict((PREMISES, HYPOTHESES))
    model.save(tmp_path / "m.keras")
    script = ("import sys, json, keras\nfrom dsan_tf import NLIClassifier\n"
              "m = keras.saving.load_model(sys.argv[1])\n"
              "numbers = json.dumps(m.predict((sys.argv[2:6], sys.argv[6:10])).tolist())\n"
              "print(keras.backend.backend(), m.jit_compile, numbers)\n" + COUNTED)
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.keras"),
                             *PREMISES, *HYPOTHESES], cwd=ROOT, capture_output=True,
                            text=True, timeout=600, env={**__import__("os").environ,
                                                         "KERAS_BACKEND": "jax"})
    assert result.returncode == 0, result.stderr[-3000:]
    backend, jit, numbers = result.stdout.strip().splitlines()[-2].split(" ", 2)
    assert (backend, jit) == ("jax", "True")
    np.testing.assert_allclose(json.loads(numbers), expected, atol=1e-5)
    compiles, names = result.stdout.strip().splitlines()[-1].split(" ", 1)
    by_name = json.loads(names)  # the encoder's per length, the head's for batches of 4
    assert 1 <= by_name.get("inference", 0) <= 6 and by_name.get("prediction", 0) <= 1, names


def test_what_a_keras_hub_user_tries_next_works_or_says_what_to_do():
    """`dataset.map(model.preprocessor)` over unbatched pairs with label names gives
    padded ids and class ids that batch and evaluate as the text does; one-hot labels are
    class ids in memory and in `tf.data`; near misses get one sentence or just work:
    `predict(premises, hypotheses)` names the one-argument forms, a NumPy [N, 2] array of
    strings is pairs, and a model made from its configuration says its preprocessor has
    no vocabulary (not `'NoneType' object has no attribute 'lowercase'`)."""
    import tensorflow as tf

    model = _classifier(max_length=12)
    text = {"premise": PREMISES, "hypothesis": HYPOTHESES}
    expected = model.predict(text)
    pairs = tf.data.Dataset.from_tensor_slices((text, LABELS))
    x, y = next(iter(pairs.map(model.preprocessor).batch(4)))
    assert x["premise"].shape == (4, 12) and y.numpy().tolist() == [0, 2, 0, 2]
    # keras-hub's form, ((premises, hypotheses), labels): the same ids (an AutoGraph
    # traceback, `tuple indices must be integers`).
    keras_hub_form = tf.data.Dataset.from_tensor_slices(((PREMISES, HYPOTHESES), LABELS))
    x_tuple, y_tuple = next(iter(keras_hub_form.map(model.preprocessor).batch(4)))
    assert np.array_equal(x_tuple["premise"], x["premise"]) and \
        np.array_equal(x_tuple["hypothesis"], x["hypothesis"]) and \
        y_tuple.numpy().tolist() == [0, 2, 0, 2]
    np.testing.assert_allclose(model.predict(x), expected, atol=1e-6)
    by_names = model.evaluate(text, LABELS, verbose=0, return_dict=True)
    mapped = model.evaluate(pairs.map(model.preprocessor).batch(2), verbose=0,
                            return_dict=True)
    assert mapped == pytest.approx(by_names, abs=1e-6)
    one_hot = np.eye(3)[[0, 2, 0, 2]]
    assert model.evaluate(text, one_hot, verbose=0, return_dict=True) == pytest.approx(
        by_names, abs=1e-6)
    in_data = tf.data.Dataset.from_tensor_slices((text, one_hot)).batch(2)
    assert model.evaluate(in_data, verbose=0, return_dict=True) == pytest.approx(
        by_names, abs=1e-6)
    with pytest.raises(ValueError, match="soft labels need a categorical loss"):
        model.evaluate(text, np.full((4, 3), 1 / 3), verbose=0)
    with pytest.raises(ValueError, match=r"takes the pairs as one argument: "
                                         r"predict\(\(premises, hypotheses\)\)"):
        model.predict(PREMISES, HYPOTHESES)
    np.testing.assert_allclose(model.predict(np.array(list(zip(PREMISES, HYPOTHESES)))),
                               expected, atol=1e-6)
    copy = dsan_tf.NLIClassifier.from_config(model.get_config())
    with pytest.raises(ValueError, match="has no vocabulary: a configuration"):
        copy.predict(text)


def test_validation_split_splits_text_and_summary_shows_the_preprocessor():
    """`fit(text, labels, validation_split=0.5)` validates on the last half of the pairs,
    as Keras splits arrays (the same accuracy as evaluating them); `summary()` starts
    with the preprocessor, which runs outside the model's graph."""
    model = _classifier(max_length=12)
    history = model.fit((PREMISES, HYPOTHESES), LABELS, validation_split=0.5, epochs=1,
                        verbose=0, shuffle=False)
    last_half = model.evaluate((PREMISES[2:], HYPOTHESES[2:]), LABELS[2:], verbose=0,
                               return_dict=True)
    assert history.history["val_accuracy"] == [pytest.approx(last_half["accuracy"])]
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(
        ({"premise": PREMISES, "hypothesis": HYPOTHESES}, LABELS)).batch(2)
    with pytest.raises(ValueError, match=r"^validation_split splits text or arrays in memory, "
                                         r"as Keras splits only arrays; for a "
                                         r"tf.data.Dataset give validation_data="):
        model.fit(dataset, validation_split=0.2, epochs=1, verbose=0)
    lines = []
    model.summary(print_fn=lambda line, *args, **kwargs: lines.append(line))
    assert lines[0].startswith("Preprocessor: NLIPreprocessor") and \
        "at most 12 tokens a sentence" in lines[0]


def test_a_compile_attaches_the_steps_once_with_the_run_s_choice(monkeypatch):
    """`NLITask.compile` compiles the model once, and the model's `compile` calls
    `speed.steps.attach` by name, once, with the run's `sentence_programs`."""
    from dsan_tf import NLITask, build_model
    from dsan_tf.core.config import ExperimentConfig, RunPolicy
    from dsan_tf.speed import steps
    from helpers import SMALL, config_for

    model = build_model("dsan", config_for("dsan", **SMALL))
    calls = []
    attach = steps.attach
    monkeypatch.setattr(steps, "attach", lambda m, sentence_programs=None: (
        calls.append((m, sentence_programs)), attach(m, sentence_programs))[1])
    task = NLITask(ExperimentConfig(), RunPolicy(sentence_programs=True))
    task.compile(model)
    # The policy resolved for this backend: True on JAX, False where they cannot run.
    assert calls == [(model, task.policy.sentence_programs)]


def test_a_preprocessor_larger_than_the_embedding_and_a_swapped_backbone_are_refused():
    """Both sizes are known when the preprocessor is given: a vocabulary with more ids than
    the backbone's embedding rows is refused in one sentence (TensorFlow failed in GatherV2
    at the first batch, JAX gave NaN). Assigning another backbone, which `predict` ignored
    and after which the saved file did not load, is refused naming what to do instead."""
    vocabulary = Vocabulary.build(PREMISES + HYPOTHESES, lowercase=True)
    small = dsan_tf.build_model("cbow", dsan_tf.model_config(
        "cbow", vocab_size=vocabulary.size - 1, embedding_dim=4))
    with pytest.raises(ValueError, match=f"the preprocessor's vocabulary has "
                                         f"{vocabulary.size} ids, more than the "
                                         f"{vocabulary.size - 1} rows of "):
        small.preprocessor = NLIPreprocessor(vocabulary)
    with pytest.raises(ValueError, match="more than the"):
        dsan_tf.NLIClassifier(small.backbone, preprocessor=NLIPreprocessor(vocabulary))
    fits = dsan_tf.build_model("cbow", dsan_tf.model_config(
        "cbow", vocab_size=vocabulary.size, embedding_dim=4))
    fits.preprocessor = NLIPreprocessor(vocabulary)  # as large as the table: fine
    with pytest.raises(AttributeError, match=r"cbow.backbone cannot be replaced .*"
                                             r"NLIClassifier\(backbone, preprocessor=...\)"):
        fits.backbone = small.backbone
    fits.backbone = fits.backbone  # the same one: nothing changes


def test_no_pairs_predict_to_no_rows_and_a_label_beyond_the_classes_is_one_sentence():
    """`predict` of no pairs gives float32 [0, 3] (it was `KeyError: 'pop from an empty
    set'`), in every form that holds text; a class id beyond the classes given to
    `evaluate` or `fit` is one sentence naming it (a graph traceback from the loss)."""
    model = _classifier(max_length=12)
    for empty in (([], []), {"premise": [], "hypothesis": []}):
        got = model.predict(empty)
        assert got.shape == (0, 3) and got.dtype == np.float32
    got, cut = model.predict(([], []), return_truncated=True)
    assert got.shape == (0, 3) and list(cut["premise"]) == list(cut["hypothesis"]) == []
    for call in (model.evaluate, model.fit):
        with pytest.raises(ValueError, match=r"^label 1 is 3; class ids are 0 to 2 "
                                             r"\(entailment, neutral, contradiction\)\.$"):
            call((PREMISES[:2], HYPOTHESES[:2]), [0, 3], verbose=0)


def test_class_weight_keyed_by_label_names_weighs_as_keyed_by_ids():
    """`class_weight` keyed by the label names trains as keyed by their ids (Keras takes ids
    only: it failed with `can only concatenate str`); an unknown name is one sentence."""
    histories = []
    for weights in ({"entailment": 1.0, "neutral": 3.0, "contradiction": 0.5},
                    {0: 1.0, 1: 3.0, 2: 0.5}):
        keras.utils.set_random_seed(0)
        model = _classifier(max_length=12)
        histories.append(model.fit((PREMISES, HYPOTHESES), LABELS, class_weight=weights,
                                   epochs=1, verbose=0, shuffle=False).history["loss"])
    assert histories[0] == pytest.approx(histories[1])
    with pytest.raises(ValueError, match=r"class_weight has the key 'maybe'; the model's labels: "
                                         r"entailment, neutral, contradiction"):
        model.fit((PREMISES, HYPOTHESES), LABELS, class_weight={"maybe": 1.0}, verbose=0)


def test_unfrozen_word_vectors_stay_unfrozen_through_a_file_and_a_preset(tmp_path):
    """Word vectors unfrozen on a built model (`backbone.token_embedding.trainable = True`)
    stay trainable after a `.keras` file (whose optimizer keeps its state: the variables
    match) and a preset; they were frozen again and the optimizer's state dropped."""
    vocabulary = Vocabulary.build(PREMISES + HYPOTHESES, lowercase=True)
    model = dsan_tf.build_model("cbow", dsan_tf.model_config(
        "cbow", vocab_size=vocabulary.size, embedding_dim=8, trainable_embeddings=False))
    model.preprocessor = NLIPreprocessor(vocabulary, max_length=12)
    assert not model.backbone.token_embedding.trainable  # frozen, as built
    model.backbone.token_embedding.trainable = True
    model.compile()
    model.fit((PREMISES, HYPOTHESES), LABELS, batch_size=2, epochs=1, verbose=0)
    steps = int(model.optimizer.iterations)
    model.save(tmp_path / "unfrozen.keras")
    again = keras.saving.load_model(tmp_path / "unfrozen.keras")
    assert again.backbone.token_embedding.trainable
    assert int(again.optimizer.iterations) == steps > 0
    model.save_to_preset(str(tmp_path / "preset"))
    preset = dsan_tf.NLIClassifier.from_preset(str(tmp_path / "preset"))
    assert preset.backbone.token_embedding.trainable


def test_text_for_an_xla_step_on_tensorflow_is_padded_to_bounded_lengths():
    """`compile(jit_compile=True)` on TensorFlow: XLA compiles per input shape, so text
    batches are padded to `BOUNDED_LENGTHS` there as on JAX (padded to each batch's own
    longest sentence, a text `fit` of 192 pairs took 101.8 s against 9.5 s); the traced
    step without XLA keeps each batch's own length. Padding changes no number."""
    from dsan_tf.data.preprocessor import BOUNDED_LENGTHS

    words = " ".join(PREMISES).split()
    grown = [" ".join((words * 4)[:n]) for n in range(1, 41)]
    text = (grown, grown[::-1])
    widths, compiled = {}, None
    for jit in (False, True):
        model = _classifier(max_length=64)
        model.compile(jit_compile=jit)
        batches, _ = model._text_batches(text, None, None, 4)
        widths[jit] = {int(ids["premise"].shape[1]) for ids in batches}
        widths[jit, "probabilities"] = model.predict(text, batch_size=4)
        compiled = model.jit_compile
    if keras.backend.backend() == "tensorflow":
        assert len(widths[False]) == 10  # each batch its own longest sentence
    if compiled:
        assert widths[True] <= set(BOUNDED_LENGTHS) and len(widths[True]) <= 6, widths[True]
    else:  # Keras turns XLA off once TensorFlow's op determinism is on (an earlier run)
        assert widths[True] == widths[False]
    np.testing.assert_allclose(widths[True, "probabilities"], widths[False, "probabilities"],
                               atol=1e-5)


CACHED_FIT = """
import os, sys, json
import jax, keras
if sys.argv[2] == "own":
    jax.config.update("jax_compilation_cache_dir", sys.argv[3])
elif sys.argv[2] == "off":
    jax.config.update("jax_enable_compilation_cache", False)
from dsan_tf import NLIClassifier
m = keras.saving.load_model(sys.argv[1])
m.compile()
m.fit((sys.argv[4:8], sys.argv[8:12]), [0, 1, 2, 0], epochs=1, verbose=0)
print(json.dumps([jax.config.jax_compilation_cache_dir, jax.config.jax_enable_compilation_cache]))
"""


@pytest.mark.slow
@pytest.mark.jax
def test_a_task_model_keeps_jaxs_compiled_steps_from_python_too(tmp_path):
    """On JAX a task model's `compile` turns JAX's persistent compilation cache on in
    ~/.cache/dsan_tf/jax, as dsan-train does (from Python, a fresh process's first text `fit`
    compiled every step again: 2.1x TensorFlow's time, 4x under load): the first process
    fills it, a second one loads its steps from it and adds nothing. A cache folder the
    process set itself, or JAX's switch turned off, is left as chosen."""
    model = _classifier(max_length=16)
    model.save(tmp_path / "m.keras")
    home = tmp_path / "home"
    cache = home / ".cache" / "dsan_tf" / "jax"

    def fit(choice="default", own=""):
        done = subprocess.run(
            [sys.executable, "-c", CACHED_FIT, str(tmp_path / "m.keras"), choice, own,
             *PREMISES, *HYPOTHESES], cwd=ROOT, capture_output=True, text=True, timeout=600,
            env={**__import__("os").environ, "KERAS_BACKEND": "jax", "HOME": str(home)})
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert fit() == [str(cache), True]
    kept = sorted(path.name for path in cache.iterdir())
    assert kept  # the steps compiled, kept
    assert fit() == [str(cache), True]
    assert sorted(path.name for path in cache.iterdir()) == kept  # loaded, none new
    own = tmp_path / "own"
    assert fit("own", str(own)) == [str(own), True] and any(own.iterdir())
    assert fit("off")[1] is False
    assert sorted(path.name for path in cache.iterdir()) == kept
