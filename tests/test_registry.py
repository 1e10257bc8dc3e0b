"""Model families by name (`dsan_tf.models.registry`): one package and one registration
each, their own configuration fields, and no family named in code outside its package."""

import dataclasses
import re
import subprocess
import sys

import pytest

from helpers import ENV, ROOT, ok

from dsan_tf.models import registry
from dsan_tf.models.config import ModelConfig

# Study tooling may name the rows it trains (the issue's exception for "the study's list of
# rows"), as tests, configs and docs may.
STUDY_TOOLING = {"experiments/results.py", "experiments/study_report.py",
                 "experiments/afdmn_init.py"}


def test_families_are_listed_in_registration_order_whatever_is_imported_first():
    probe = ("import dsan_tf.models.afdmn, dsan_tf.models.cbow; "
             "import dsan_tf.core.config as c; "
             "from dsan_tf.programs import flags; flags.define_model_flags(); "
             "print(','.join(c.MODELS)); print(flags.FLAGS['model'].default)")
    found = ok(subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=ENV,
                              capture_output=True, text=True, timeout=120)).split()
    assert found == [",".join(registry.PACKAGES), registry.PACKAGES[0]]


def test_a_family_outside_the_registration_list_is_refused():
    stray = registry.Family(name="esim", paper="Chen et al. (2017)", config=ModelConfig,
                            backbone=lambda config, size: None, head=lambda config: {},
                            modules=())
    with pytest.raises(ValueError, match="its package must be named as it, "
                                         "dsan_tf/models/esim/"):
        registry.register(stray)
    with pytest.raises(ValueError, match="model must be one of"):
        registry.family("esim")


@pytest.mark.parametrize("name", registry.PACKAGES)
def test_a_familys_configuration_holds_only_fields_its_code_reads(name):
    """Every field a family adds to `ModelConfig` is read in its own package, or taken by
    its backbone's constructor under its name: a field no code of the family reads would
    be another family's."""
    import inspect

    from dsan_tf import model_config

    family = registry.family(name)
    own = {field.name for field in dataclasses.fields(family.config)} - {
        field.name for field in dataclasses.fields(ModelConfig)}
    source = "".join(path.read_text() for path in
                     (ROOT / "dsan_tf" / "models" / name).glob("*.py")
                     if path.name != "config.py")
    backbone = type(family.backbone(model_config(name, trainable_embeddings=True), 10))
    taken = set(inspect.signature(backbone.__init__).parameters)
    unread = sorted(field for field in own
                    if f"config.{field}" not in source and field not in taken)
    assert not unread, f"{name}'s configuration has fields its code never reads: {unread}"


def test_a_family_is_named_in_code_outside_its_package_in_one_file_at_most():
    """Adding a family is adding its package (`registry.PACKAGES` finds it): no module of
    the library or the programs names it in code (string literals) but the registry, whose
    `ORDER` places the project's own in listings."""
    files = [path for folder in ("dsan_tf", "experiments", "benchmarks")
             for path in (ROOT / folder).rglob("*.py")]
    for name in registry.PACKAGES:
        package = ROOT / "dsan_tf" / "models" / name
        literal = re.compile(rf"""["']{name}["']""")
        naming = sorted(str(path.relative_to(ROOT)) for path in files
                        if package not in path.parents
                        and str(path.relative_to(ROOT)) not in STUDY_TOOLING
                        and literal.search(path.read_text()))
        assert set(naming) <= {"dsan_tf/models/registry.py"}, (name, naming)


def test_every_family_builds_from_its_own_configuration_only():
    """`build_model` refuses another family's configuration, in one sentence naming the
    class it takes."""
    from dsan_tf import build_model, model_config

    with pytest.raises(ValueError, match="configuration class AFDMNConfig, got a DSANConfig"):
        build_model("afdmn", model_config("dsan", vocab_size=5))
    assert isinstance(model_config("afdmn"), registry.family("afdmn").config)


# The hyperparameters of the task model's head (NLIClassifier), which a backbone may lack.
HEAD_FIELDS = ("classifier_units", "classifier_input_dropout", "dropout", "layer_norm_epsilon")


@pytest.mark.parametrize("name", registry.PACKAGES)
def test_a_backbones_constructor_arguments_are_its_configuration(name):
    """keras-hub's rule: the backbone's config (its constructor arguments) holds every
    hyperparameter of the family's configuration under the same name and value (the
    head's may be the head's alone); `.keras` files saved under the older names load;
    `Family.pair_input` is the backbone's."""
    from dsan_tf import build_model, model_config

    fields = {field.name for field in dataclasses.fields(registry.family(name).config)}
    small = {"num_heads": 2, "lstm_units": 4, "matching_blocks": 1, "model_dim": 8,
             "char_dim": 4, "ffn_dim": 16}
    config = model_config(name, vocab_size=20, embedding_dim=8,
                          **{key: value for key, value in small.items() if key in fields})
    backbone = build_model(name, config).backbone
    saved = backbone.get_config()
    # An unset trainable_embeddings is resolved by build_model, and saved so: without
    # word vectors, the embeddings are trained.
    assert saved["trainable_embeddings"] is (
        True if config.trainable_embeddings is None else config.trainable_embeddings)
    differing = {field.name: (getattr(config, field.name), saved.get(field.name, "missing"))
                 for field in config.hyperparameters()
                 if saved.get(field.name, "missing") != getattr(config, field.name)
                 and not (field.name in HEAD_FIELDS and field.name not in saved)
                 and field.name != "trainable_embeddings"}
    assert not differing, differing
    assert type(backbone).from_config(saved).get_config() == saved
    # What the registry says of the backbone before building one (the task's batch shapes
    # and per-length programs read it) is what the backbone is.
    assert registry.family(name).pair_input is backbone.pair_input


@pytest.mark.parametrize("name, old_names", [
    ("afdmn", {"lstm_units": "units", "matching_blocks": "num_blocks"}),
    ("gaussian_transformer", {"embedding_dim": "word_dim"})])
def test_keras_files_saved_under_the_backbones_older_argument_names_still_load(name, old_names):
    from dsan_tf import build_model, model_config

    small = {"afdmn": dict(lstm_units=4, matching_blocks=1),
             "gaussian_transformer": dict(num_heads=2, model_dim=8, char_dim=4)}[name]
    backbone = build_model(name, model_config(name, vocab_size=20, embedding_dim=8,
                                              **small)).backbone
    saved = backbone.get_config()
    older = {old_names.get(key, key): value for key, value in saved.items()}
    if name == "gaussian_transformer":  # older files left the table's width out
        older.pop("embedding_dim", None)
    assert type(backbone).from_config(older).get_config() == saved


@pytest.mark.parametrize("name", registry.PACKAGES)
def test_a_layers_default_is_its_configuration_fields(name):
    """A hyperparameter's default is declared by its field in the family's
    configuration; a layer or backbone of the family that takes it by the same name keeps
    no other default (None on either side means "derived": from the width, or resolved
    when the model is built)."""
    import importlib
    import inspect

    import keras

    family = registry.family(name)
    fields = {field.name: field.default for field in dataclasses.fields(family.config)}
    differing = []
    for module_name in family.modules:
        module = importlib.import_module(module_name)
        for cls in vars(module).values():
            if not (isinstance(cls, type) and issubclass(cls, keras.layers.Layer)
                    and cls.__module__ == module_name):
                continue
            for parameter in inspect.signature(cls.__init__).parameters.values():
                default = parameter.default
                if (parameter.name in fields and default is not inspect.Parameter.empty
                        and None not in (default, fields[parameter.name])
                        and default != fields[parameter.name]):
                    differing.append(f"{cls.__name__}({parameter.name}={default!r}), field "
                                     f"{fields[parameter.name]!r}")
    assert not differing, differing


@pytest.mark.parametrize("name", registry.PACKAGES)
def test_the_layers_below_a_backbone_keep_no_default_for_a_configuration_field(name):
    """A layer receives every configuration value it uses: a parameter named as one of
    the family's fields (or the shared layers' parameters made from them) has no default,
    so that a value a backbone forgets to pass fails loudly instead of building the
    layer's own (InferSent's `--lstm_units=2048` once trained 512 units so)."""
    import importlib
    import inspect
    import pkgutil

    import keras

    from dsan_tf import layers as shared

    family = registry.family(name)
    fields = {field.name for field in dataclasses.fields(family.config)}
    # The layers' names for fields: the head's width and input dropout, the max pooling's
    # padding, the gate's and source2token's LayerNorm sharing, AF-DMN's width.
    fields |= {"hidden_units", "input_dropout", "padding", "shared_norm", "output_norm",
               "hidden_layer_norm", "activation", "units"}
    modules = [module for module in family.modules if not module.endswith(".backbone")]
    modules += [f"dsan_tf.layers.{info.name}" for info in pkgutil.iter_modules(shared.__path__)]
    defaulted = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        for cls in vars(module).values():
            if not (isinstance(cls, type) and cls.__module__ == module_name and issubclass(
                    cls, (keras.layers.Layer, keras.initializers.Initializer))):
                continue
            defaulted += [f"{cls.__name__}({parameter.name}={parameter.default!r})"
                          for parameter in inspect.signature(cls.__init__).parameters.values()
                          if parameter.name in fields
                          and parameter.default is not inspect.Parameter.empty]
    assert not defaulted, defaulted


def test_with_default_of_a_field_modelconfig_lacks_is_one_sentence():
    """A family's author who gives `with_default` a field of its own (not ModelConfig's)
    is told which fields it takes and how to declare one, not a bare StopIteration."""
    from dsan_tf.models.config import with_default

    assert with_default("dropout", 0.2).default == 0.2
    with pytest.raises(ValueError, match=r"with_default\('lstm_units', \.\.\.\): 'lstm_units' "
                                         r"is no field of ModelConfig \(.*dropout.*\); a "
                                         r"family's own field is declared with hyperparameter"):
        with_default("lstm_units", 300)
