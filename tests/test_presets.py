"""One configuration from the command line to the run record: named configurations inside
the package, the same as the clone's flagfiles; flags derived from the configuration's fields; JSON round
trips for every family; library errors shown as flags."""

import dataclasses
import json
import pathlib

import pytest

import dsan_tf
from dsan_tf.core.config import (DataConfig, ExperimentConfig, RunOutputs, RunPolicy,
                                 TrainingConfig)
from dsan_tf.models import registry
from dsan_tf.models.config import described_fields
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import train
from helpers import ROOT, cli

FLAGS = project_flags.FLAGS
# The named configurations that build on another (their flagfiles are used after its).
LAYERED = {name: config.base for name, config in registry.named_configs().items()
           if config.base}


def _parsed(*argv):
    """The `ExperimentConfig` dsan-train makes of `argv` (in-process)."""
    train.define_flags()
    FLAGS.unparse_flags()
    try:
        FLAGS(["train", *argv])
        return project_flags.experiment_config()
    finally:
        FLAGS.unparse_flags()


def test_a_named_config_is_its_flagfile_read_as_absl_reads_it():
    """A named configuration is written once, as a flagfile in its family's configs/
    folder (dsan_tf/models/configs/ for those every family shares); `--config=NAME` and
    `ExperimentConfig.named(NAME)` read it (its `# base:` first) to the configuration
    absl's `--flagfile` gives. No copy or link of it lives elsewhere: a family's new
    configuration is one file in its folder."""
    named = registry.named_configs()
    for name, config in named.items():
        flagfiles = [f"--flagfile={named[base].path}" for base in (config.base, name) if base]
        from_files = _parsed(*flagfiles)
        assert _parsed(f"--config={name}") == from_files, name
        assert ExperimentConfig.named(name) == from_files, name
        assert pathlib.Path(config.path).parent.name == "configs" and config.description
    shared = {name for name, config in named.items()
              if pathlib.Path(config.path).parent.parent.name == "models"}
    assert shared == {"demo", "snli25k_glove50"}
    copies = [path for path in ROOT.rglob("*.cfg") if path.name in
              {f"{name}.cfg" for name in named} and "dsan_tf" not in path.parts]
    assert not copies, copies
    assert _parsed("--config=snli25k_glove50").model_config.embedding_dim == 50


def test_flags_on_top_of_a_named_config_and_overrides_by_field_name():
    config = _parsed("--config=demo", "--num_heads=2", "--epochs=3")
    assert (config.model_config.num_heads, config.training.epochs) == (2, 3)
    assert config.model_config.ffn_dim == 64  # the configuration's, not the paper's 1200
    assert config == ExperimentConfig.named("demo", num_heads=2, epochs=3)
    # Another family keeps the fields it shares and leaves the configuration's others out.
    afdmn = ExperimentConfig.named("snli25k_glove50", model="afdmn")
    assert (afdmn.model, afdmn.model_config.embedding_dim) == ("afdmn", 50)
    assert not hasattr(afdmn.model_config, "num_heads")
    with pytest.raises(ValueError, match="no field num_head in any configuration"):
        ExperimentConfig.named("demo", num_head=2)
    with pytest.raises(ValueError, match="no configuration 'dem'; the configurations: demo, "):
        ExperimentConfig.named("dem")
    with pytest.raises(ValueError, match="no field num_heads in the configuration of "
                                         "model 'cbow'"):
        ExperimentConfig.from_flat({"model": "cbow", "num_heads": 2})
    assert {"demo", "snli25k_glove50", "dsan_snli"} <= set(dsan_tf.configs())
    assert "word-order" in dsan_tf.configs()["demo"]


def test_every_configuration_round_trips_through_json():
    """`to_dict` -> JSON -> `from_dict` gives the same configuration, for every family's
    defaults and every named configuration, with every data and training field set."""
    configs = [ExperimentConfig(model=name) for name in registry.names()]
    configs += [ExperimentConfig.named(name) for name in list(registry.configs())]
    configs.append(ExperimentConfig.named("demo", max_length=None, patience=2))
    for config in configs:
        again = ExperimentConfig.from_dict(json.loads(json.dumps(config.to_dict())))
        assert again == config and type(again.model_config) is type(config.model_config)
    assert ExperimentConfig().differences(ExperimentConfig().replace(seed=3)) == [
        ("seed", 0, 3)]


def test_the_flags_are_the_configuration_fields():
    """A flag per field, with the field's default, help, choices and bounds: a
    hyperparameter is described once, in its configuration."""
    train.define_flags()
    for config_class in (DataConfig, TrainingConfig, RunPolicy, RunOutputs):
        for field in described_fields(config_class):
            flag = FLAGS[field.name]
            assert flag.default == field.default
            assert flag.help.endswith(field.metadata["help"])  # enums: "<a|b>: " first
            if "choices" in field.metadata:
                assert list(flag.parser.enum_values) == list(field.metadata["choices"])
    for name in registry.names():
        for field in described_fields(registry.family(name).config):
            assert field.metadata["help"] in FLAGS[field.name].help
    assert FLAGS["batch_size"].parser.lower_bound == 1
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        DataConfig(batch_size=0)
    with pytest.raises(ValueError, match="log_every_steps must be >= 1"):
        RunOutputs(log_every_steps=0)


def test_library_errors_name_fields_and_programs_show_them_as_flags(tmp_path):
    train.define_flags()  # the flags it names (this test may run first in its process)
    assert project_flags.as_flags("embedding_dim=32 must be divisible by num_heads=3.") == \
        "--embedding_dim=32 must be divisible by --num_heads=3."
    assert project_flags.as_flags("dropout must be in [0, 1), got 2.") == \
        "--dropout must be in [0, 1), got 2."
    result = cli("train", "--config=demo", "--num_heads=3", f"--workdir={tmp_path / 'run'}")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: --embedding_dim=32 must be divisible by --num_heads=3.")
    assert not (tmp_path / "run").exists()


def test_a_named_config_needs_no_clone(tmp_path):
    """`dsan-train --config=demo` from any directory: the configuration is in the
    package."""
    result = cli("train", "--config=demo", "--epochs=1", "--steps_per_epoch=2",
                 "--workdir=run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1].startswith("dev accuracy ")
    flags_txt = (tmp_path / "run" / "flags.txt").read_text().split()
    assert "--embedding_dim=32" in flags_txt and "--epochs=1" in flags_txt
    recorded = json.loads((tmp_path / "run" / "config.json").read_text())
    assert recorded["training"]["steps_per_epoch"] == 2
    assert dataclasses.asdict(ExperimentConfig.named("demo").data) == recorded["data"]
    assert recorded["policy"]["jit_compile"] is False  # decided for TensorFlow
    # flags.txt repeats the run: the same configuration, so the finished run is found.
    again = cli("train", "--flagfile=run/flags.txt", "--workdir=run", cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "is a finished run of this configuration: nothing trained" in again.stdout


# Loaded by name in a fresh process, as a user's first three lines after `pip install`.
FRESH = """
import json, sys
import dsan_tf

name = sys.argv[1]
loaded = dsan_tf.load(name)
probes = json.loads(sys.argv[2])
out = loaded.classify([p["premise"] for p in probes], [p["hypothesis"] for p in probes])
model = dsan_tf.NLIClassifier.from_preset(name)
again = model.predict({"premise": [p["premise"] for p in probes],
                       "hypothesis": [p["hypothesis"] for p in probes]})
print(json.dumps({"labels": out["labels"], "probabilities": out["probabilities"].tolist(),
                  "again": again.tolist(), "optimizer": type(model.optimizer).__name__,
                  "learning_rate": float(model.optimizer.learning_rate),
                  "presets": dsan_tf.presets()}))
"""


@pytest.mark.parametrize("name", sorted(registry.trained_presets()))
def test_a_shipped_preset_loads_by_name_and_gives_its_recorded_numbers(name):
    """A trained preset inside the package, loaded by name in a fresh
    process with no training and no data, gives the probabilities recorded when it was
    shipped (`tools/ship_preset.py`), compiles with its run's optimizer, and its card
    quotes the accuracies it was measured at."""
    import subprocess
    import sys

    import numpy as np

    folder, description = registry.trained_presets()[name]
    recorded = json.loads((pathlib.Path(folder) / "results.json").read_text())
    done = subprocess.run([sys.executable, "-c", FRESH, name, json.dumps(recorded["probes"])],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Warning" not in done.stderr  # no optimizer state skipped, nothing cut
    # Nor TensorFlow's start-up C++ lines: Python use is as quiet as
    # the programs (`dsan_tf.common.quiet`).
    assert "oneDNN" not in done.stderr and "I0000" not in done.stderr, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    expected = [probe["probabilities"] for probe in recorded["probes"]]
    np.testing.assert_allclose(seen["probabilities"], expected, atol=1e-5)
    np.testing.assert_allclose(seen["again"], expected, atol=1e-5)
    assert seen["labels"] == [probe["label"] for probe in recorded["probes"]]
    assert (seen["optimizer"], seen["learning_rate"]) == ("Adam", pytest.approx(1e-3))
    assert seen["presets"][name] == description and description
    card = (pathlib.Path(folder) / "MODEL_CARD.md").read_text()
    for source, result in recorded["sources"].items():
        assert (f"- {source}: accuracy {result['accuracy']:.4f} on {result['pairs']:,} "
                "pairs") in card
    assert f"python -m tools.ship_preset --check={name}" in card


def test_the_studys_dsan_ships_and_scores_its_card_on_snli_dev():
    """The study's DSAN is a shipped preset whose card gives SNLI dev and MultiNLI
    dev-matched accuracy; SNLI dev is measured again on the shipped files (skipped without
    ../shared/data)."""
    folder, _ = registry.trained_presets()["dsan_snli25k_glove50"]
    recorded = json.loads((pathlib.Path(folder) / "results.json").read_text())["sources"]
    snli, multinli = sorted(recorded, key=lambda source: "multinli" in source)
    assert "snli_1.0_dev" in snli and "multinli_1.0_dev_matched" in multinli
    assert recorded[snli]["pairs"] == 9_842 and recorded[multinli]["pairs"] == 9_815
    if not (ROOT / snli).exists():
        pytest.skip(f"{snli} is not here (../shared/data beside the clone)")
    from tools import ship_preset

    again = ship_preset.evaluate("dsan_snli25k_glove50", [str(ROOT / snli)])
    assert again[str(ROOT / snli)]["accuracy"] == pytest.approx(recorded[snli]["accuracy"],
                                                                abs=1e-4)


def test_from_preset_takes_keras_hubs_arguments_and_honours_the_global_policy():
    """keras-hub's `from_preset` arguments on a shipped preset: `cls.presets` lists it;
    `compile=False` gives an uncompiled model; `num_classes=2` a new, untrained head of
    two classes on the trained backbone, compiled with the paper's Adam 1e-3;
    `load_weights=False` the architecture with fresh weights; a global
    `mixed_float16` policy (or `dtype=`) the layers in that policy with the same
    probabilities to half precision; `Backbone.from_preset` the trained backbone alone."""
    import keras
    import numpy as np

    from dsan_tf.models import Backbone, NLIClassifier

    name = "dsan_snli25k_glove50"
    assert NLIClassifier.presets == dsan_tf.presets() and name in NLIClassifier.presets
    text = {"premise": ["A man is playing a guitar on stage."] * 2,
            "hypothesis": ["A man is playing an instrument.", "A man is sleeping."]}
    trained = NLIClassifier.from_preset(name)
    assert [layer.name for layer in trained._flatten_layers() if not layer.built] == []
    expected = trained.predict(text)
    weights = [w.numpy() for w in trained.backbone.weights]
    assert trained.compiled and not NLIClassifier.from_preset(name, compile=False).compiled
    two = NLIClassifier.from_preset(name, num_classes=2)
    assert two.predict(text).shape == (2, 2) and two.head.num_classes == 2
    assert type(two.optimizer).__name__ == "Adam"
    assert float(two.optimizer.learning_rate) == pytest.approx(1e-3)
    for mine, theirs in zip(two.backbone.weights, weights):
        np.testing.assert_array_equal(mine.numpy(), theirs)
    fresh = NLIClassifier.from_preset(name, load_weights=False)
    assert not np.allclose(fresh.backbone.weights[-1].numpy(), weights[-1])
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        half = NLIClassifier.from_preset(name)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    attention = half.backbone.encoder.forward_block.attention
    assert (half.backbone.dtype_policy.name, attention.compute_dtype) == ("mixed_float16",
                                                                          "float16")
    np.testing.assert_allclose(half.predict(text), expected, atol=2e-3)
    assert NLIClassifier.from_preset(name, dtype="bfloat16").head.dtype_policy.name == \
        "bfloat16"
    backbone = Backbone.from_preset(name)
    assert type(backbone).__name__ == "DSANBackbone"
    for mine, theirs in zip(backbone.weights, weights):
        np.testing.assert_array_equal(mine.numpy(), theirs)


def test_a_new_head_names_its_own_labels_through_training_saving_and_serving(tmp_path):
    """`from_preset(num_classes=2, label_names=...)`: `classify` reports the new names,
    `fit` and `evaluate` take them (the NLI names refused in one sentence, as ids past the
    head), and a `.keras` file, a preset and a SavedModel keep them; without names a head
    of two names its classes class_0 and class_1. A preprocessor naming more classes than
    the head has is refused."""
    import keras
    import numpy as np

    from dsan_tf.data import NLIPreprocessor
    from dsan_tf.models import NLIClassifier
    from dsan_tf.saving import serving

    name = "dsan_snli25k_glove50"
    text = {"premise": ["A man is playing a guitar on stage.", "A dog runs."] * 4,
            "hypothesis": ["A man is playing an instrument.", "A cat sleeps."] * 4}
    names = ["entails", "does not entail"]
    assert NLIClassifier.from_preset(name, num_classes=2).classify(
        "A dog runs.", "An animal moves.")["label_names"] == ["class_0", "class_1"]
    two = NLIClassifier.from_preset(name, num_classes=2, label_names=names)
    assert two.classify("A dog runs.", "An animal moves.")["label_names"] == names
    labels = ["entails", "does not entail"] * 4
    two.fit(text, labels, epochs=1, verbose=0, class_weight={"entails": 2.0,
                                                             "does not entail": 1.0})
    assert 0 <= two.evaluate(text, labels, verbose=0, return_dict=True)["accuracy"] <= 1
    with pytest.raises(ValueError, match="label 1 is 'neutral'; the model's labels: "
                                         "entails, does not entail."):
        two.fit(text, ["entails", "neutral"] * 4, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="class ids are 0 to 1"):
        two.evaluate(text, [0, 2] * 4, verbose=0)
    expected = two.predict(text)
    two.save(tmp_path / "two.keras")
    two.save_to_preset(str(tmp_path / "preset"))
    for again in (keras.saving.load_model(tmp_path / "two.keras"),
                  NLIClassifier.from_preset(str(tmp_path / "preset"))):
        assert again.label_names == names and again.num_classes == 2
        np.testing.assert_allclose(again.predict(text), expected, atol=1e-6)
    if keras.backend.backend() == "tensorflow":
        serving.export(two, str(tmp_path / "export"), keras_file=False)
        served = dsan_tf.load(str(tmp_path / "export"), trust_savedmodel=True)
        result = served.classify(text)
        assert result["label_names"] == names and set(result["labels"]) <= set(names)
        assert served.evaluate(text, labels)["pairs"] == 8
    three = NLIClassifier.from_preset(name)
    with pytest.raises(ValueError, match="the preprocessor names 3 labels .* head has 2 "
                                         "classes"):
        NLIClassifier(three.backbone, num_classes=2, preprocessor=three.preprocessor)
    with pytest.raises(ValueError, match="give two or more different names"):
        NLIPreprocessor(three.preprocessor.vocabulary, label_names=["a", "a"])


def test_from_preset_takes_the_constructors_arguments_and_reports_its_dtype():
    """keras-hub passes `from_preset`'s other keyword arguments to the constructor: a
    preprocessor of None (ids only), another dropout (the trained weights kept: the same
    predictions), and one sentence naming an argument the model does not take. The task
    reports the policy its layers run. `NLIEnsemble.from_preset` of one model's preset is
    refused in one sentence."""
    import numpy as np

    from dsan_tf.models import NLIClassifier, NLIEnsemble

    name = "dsan_snli25k_glove50"
    text = {"premise": ["A man is playing a guitar on stage."],
            "hypothesis": ["A man is playing an instrument."]}
    trained = NLIClassifier.from_preset(name)
    assert NLIClassifier.from_preset(name, preprocessor=None).preprocessor is None
    other = NLIClassifier.from_preset(name, dropout=0.3)
    assert other.dropout == 0.3 and other.get_config()["dropout"] == 0.3
    np.testing.assert_allclose(other.predict(text), trained.predict(text), atol=1e-6)
    with pytest.raises(ValueError, match="NLIClassifier.from_preset takes no activation: "
                                         "its model's arguments are dropout, "):
        NLIClassifier.from_preset(name, activation="softmax")
    half = NLIClassifier.from_preset(name, dtype="bfloat16")
    assert (half.dtype_policy.name, half.head.dtype_policy.name) == ("bfloat16", "bfloat16")
    assert trained.dtype_policy.name == "float32"
    with pytest.raises(ValueError, match=f"{name} holds one NLIClassifier, not an ensemble"):
        NLIEnsemble.from_preset(name)


def test_the_programs_take_a_presets_name_and_its_card_commands_run_anywhere(tmp_path):
    """`--workdir=NAME` of a shipped preset: evaluate scores it (its family from the
    preset's metadata), and the card's "Repeat the evaluation" command names the preset,
    not a folder of the machine that made it."""
    import re

    folder, _ = registry.trained_presets()["dsan_snli25k_glove50"]
    card = (pathlib.Path(folder) / "MODEL_CARD.md").read_text()
    repeat = re.search(r"Repeat the evaluation: `dsan-evaluate (.*?)`", card).group(1)
    assert repeat.split()[0] == "--workdir=dsan_snli25k_glove50", repeat
    output = tmp_path / "eval.json"
    done = cli("evaluate", "--workdir=dsan_snli25k_glove50", "--data=synthetic:word_order/dev",
               f"--output={output}")
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(output.read_text())
    assert results["model"] == "dsan" and results["workdir"] == "dsan_snli25k_glove50"
    assert 0 <= results["sources"]["synthetic:word_order/dev"]["accuracy"] <= 1
    missing = cli("evaluate", "--workdir=dsan_snli25k_glove5", "--data=synthetic:word_order/dev")
    assert missing.returncode == 1 and "dsan_snli25k_glove5: no such directory" in \
        missing.stderr


def test_a_preset_loads_by_name_in_a_fresh_process_through_any_entry():
    """The preset loader registers the classes its files name before reading them: a
    fresh process that imports only it (as `dsan-evaluate --workdir=NAME` does) loads the
    shipped preset, and so does the program itself."""
    import subprocess
    import sys

    from helpers import cli_process

    name = sorted(registry.trained_presets())[0]
    script = ("from dsan_tf.models import preset\n"
              f"print(type(preset.load({name!r}, compile=False)).__name__)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "NLIClassifier", done.stderr[-2000:]
    predicted = cli_process("predict", f"--workdir={name}", "--premise=A man sleeps.",
                            "--hypothesis=A person rests.")
    assert predicted.returncode == 0 and "entailment" in predicted.stdout, \
        predicted.stderr[-2000:]


def test_an_ensemble_comes_compiled_as_a_classifier_does():
    """`NLIEnsemble(members)` is compiled when built, as `NLIClassifier` is: `evaluate` on
    labelled text works at once (it said "You must call `compile()`"); `compile=False` and
    `from_preset(..., compile=False)` leave it uncompiled."""
    from dsan_tf.models import NLIClassifier, NLIEnsemble

    member = NLIClassifier.from_preset("dsan_snli25k_glove50", compile=False)
    ensemble = NLIEnsemble([member, member])
    text = (["A man sleeps.", "A dog runs."], ["A man rests.", "A cat sleeps."])
    scores = ensemble.evaluate(text, ["entailment", "contradiction"], verbose=0,
                               return_dict=True)
    assert ensemble.compiled and 0 <= scores["accuracy"] <= 1
    assert not NLIEnsemble([member], compile=False).compiled
