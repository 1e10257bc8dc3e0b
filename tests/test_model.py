"""Properties of the assembled model: padding, sharing, parameter count, saving."""

import dataclasses
import json

import keras
import numpy as np
import pytest

import families
from helpers import SMALL, config_for, inference, made, random_ids, reloaded_outputs_of

from dsan_tf import DSANConfig, build_model, model_config
from dsan_tf.models import Backbone, NLIClassifier, PairBackbone, registry
from dsan_tf.layers import ClassificationHead
from dsan_tf.models.disan import DiSANConfig, DiSANEncoder
from dsan_tf.models.dsan import DSANEncoder


def batch(rng, batch_size=4, premise_length=7, hypothesis_length=5):
    return {"premise": random_ids(rng, batch_size, premise_length),
            "hypothesis": random_ids(rng, batch_size, hypothesis_length)}


def pad(ids, extra):
    return np.pad(ids, ((0, 0), (0, extra)))


# Every family (the registry's), and those whose backbone encodes one sentence at a time
# (what its `Family.pair_input` says): a new family is checked here without a line of this file.
FAMILIES = registry.names()
SENTENCE_ENCODERS = [name for name in FAMILIES if not registry.family(name).pair_input]


def small(name, small_config, **changes):
    """The family's smallest model (its testing.py's `SMALL`) at the shared test size."""
    return config_for(name, **{**SMALL, **families.small(name),
                               **changes})


def test_inputs_and_outputs(small_config, rng):
    model = build_model("dsan", small_config)
    assert {t.name for t in model.inputs} == {"premise", "hypothesis"}
    assert all(t.dtype == "int32" for t in model.inputs)
    logits = model(batch(rng))
    assert tuple(logits.shape) == (4, 3)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_appending_padding_never_changes_logits(small_config, rng, policy, name):
    keras.config.set_dtype_policy(policy)
    model = build_model(name, small(name, small_config))
    inputs = batch(rng)
    # Ragged real lengths inside the batch, including a one-token premise.
    inputs["premise"][1, 1:] = 0
    inputs["hypothesis"][2, 3:] = 0
    base = inference(model, inputs)
    padded = {"premise": pad(inputs["premise"], 6), "hypothesis": pad(inputs["hypothesis"], 3)}
    out = inference(model, padded)
    assert np.isfinite(base).all()
    # Half precision: 1% of the logits' scale (a family's may be 0.001), where its rounding
    # moves them by 0.05% (an absolute bound could not see a padding leak in small logits).
    tolerance = 1e-5 if policy == "float32" else 1e-2 * float(np.abs(base).max())
    np.testing.assert_allclose(out, base, atol=tolerance)
    # A sentence padded inside a batch gives what it gives alone.
    alone = {"premise": inputs["premise"][1:2, :1], "hypothesis": inputs["hypothesis"][1:2]}
    np.testing.assert_allclose(inference(model, alone)[0], base[1],
                               atol=tolerance)


def test_premise_and_hypothesis_share_one_encoder(small_config):
    model = build_model("dsan", small_config)
    backbones = [layer for layer in model.layers if isinstance(layer, Backbone)]
    assert backbones == [model.backbone]
    assert len(model.backbone._inbound_nodes) == 2  # called on premise and hypothesis
    encoder = model.backbone.encoder
    assert isinstance(encoder, DSANEncoder)
    forward = {id(w) for w in encoder.forward_block.weights}
    backward = {id(w) for w in encoder.backward_block.weights}
    assert forward and not forward & backward


@pytest.mark.parametrize("name", SENTENCE_ENCODERS)
def test_one_pass_of_the_encoder_gives_the_same_logits_and_gradients(small_config, rng, name,
                                                                      tmp_path):
    """`one_pass`: premise and hypothesis as one batch, the shorter padded (half the compiled
    program): the same function of the same weights, whichever side is longer, and its
    `.keras` file reloads to it."""
    if keras.backend.backend() != "tensorflow" and name != "dsan":
        pytest.skip("one family on the other backends: JAX compiles a program per shape")
    config = small(name, small_config)  # each family's smallest (a new one's too)
    keras.utils.set_random_seed(0)
    two = build_model(name, config)
    one = build_model(name, config, one_pass=True)
    one.set_weights(two.get_weights())
    assert one.one_pass and len(one.backbone._inbound_nodes) == 1
    for premise_length, hypothesis_length in ((9, 4), (3, 8)):
        inputs = batch(rng, 5, premise_length, hypothesis_length)
        inputs["premise"][1, 1:] = 0
        inputs["hypothesis"][3, 2:] = 0
        np.testing.assert_allclose(inference(one, inputs), inference(two, inputs), atol=1e-5)
    labels = np.array([0, 1, 2, 0, 1])

    def gradients(model):
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = keras.losses.sparse_categorical_crossentropy(
                labels, model(inputs, training=False), from_logits=True)
        return [tf.convert_to_tensor(gradient)  # a trained embedding's: IndexedSlices
                for gradient in tape.gradient(loss, model.trainable_variables)]

    if keras.backend.backend() == "tensorflow":
        for mine, theirs in zip(gradients(one), gradients(two)):
            np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), atol=1e-5)
    one.save(tmp_path / "one.keras")
    again = keras.saving.load_model(tmp_path / "one.keras")
    assert again.one_pass
    np.testing.assert_allclose(inference(again, inputs), inference(one, inputs), atol=1e-6)


def test_keras_clone_model_copies_the_graph(small_config, rng):
    """`keras.models.clone_model` (it failed on MatchingFeatures' config):
    new layers, the same function once the weights are copied."""
    model = build_model("dsan", small_config)
    clone = keras.models.clone_model(model)
    assert len(clone.weights) == len(model.weights)
    assert {id(w) for w in clone.weights}.isdisjoint(id(w) for w in model.weights)
    clone.set_weights(model.get_weights())
    inputs = batch(rng)
    np.testing.assert_allclose(np.asarray(clone(inputs)), np.asarray(model(inputs)), atol=1e-6)


def test_swapping_premise_and_hypothesis_changes_logits(small_config, rng):
    """u - v enters as |u - v| but u and v also enter as themselves: order matters."""
    model = build_model("dsan", small_config)
    inputs = batch(rng, premise_length=5, hypothesis_length=5)
    swapped = {"premise": inputs["hypothesis"], "hypothesis": inputs["premise"]}
    assert not np.allclose(model(inputs), model(swapped))


PAPER = DSANConfig(vocab_size=10)


def test_paper_parameter_count():
    parts = build_model("dsan", PAPER).parameter_breakdown()
    assert 4_650_000 <= parts["params_excluding_embeddings"] <= 4_750_000
    assert parts["params_excluding_embeddings"] == sum(
        parts[k] for k in ("forward_block", "backward_block", "source2token", "classifier"))
    assert parts["forward_block"] == parts["backward_block"]
    assert parts["word_embedding"] == 10 * 300


def test_ablation_switches_and_their_parameter_counts():
    def count(**changes):
        model = build_model("dsan", dataclasses.replace(PAPER, **changes))
        return model.parameter_breakdown()["params_excluding_embeddings"]

    paper = count()
    assert count(distance_prior="none") == paper
    assert count(distance_alpha=0.5) == paper
    assert count(use_direction_mask=False) == paper
    assert count(fusion="raw") == paper
    # Single pooling halves the sentence vector: the classifier's first layer shrinks.
    source2token = 2 * (600 * 600 + 600) + 2 * (2 * 600)  # two dense + two LayerNorms
    assert paper - count(pooling="max") == 8 * 300 * 300 + source2token
    assert count(pooling="multi_dim") == paper - 8 * 300 * 300
    assert count(trainable_embeddings=True) == paper
    # One LayerNorm over the 300-wide projection instead of one over each head's 60:
    # 3 (Q, K, V) x 2 (γ, β) x (300 - 60) more per block.
    assert count(qkv_norm="full") == paper + 2 * 3 * 2 * (300 - 60)


def test_disan_parameter_count():
    """DiSAN at d = 300 (Shen et al. report 2.4M): each block is the ELU map (D² + D),
    W1, W2 and b (2D² + D) and the raw fusion gate (2D² + D + 4D of LayerNorm)."""
    d = 300
    parts = build_model("disan", model_config("disan", vocab_size=10)).parameter_breakdown()
    block = (d * d + d) + (2 * d * d + d) + (2 * d * d + d + 4 * d)
    assert parts["forward_block"] == parts["backward_block"] == block
    source2token = 2 * ((2 * d) ** 2 + 2 * d) + 2 * (2 * 2 * d)
    classifier = (4 * 2 * d * 300 + 300) + 2 * 300 + (300 * 3 + 3)
    assert parts["source2token"] == source2token and parts["classifier"] == classifier
    assert parts["params_excluding_embeddings"] == 2 * block + source2token + classifier
    assert 2_300_000 < parts["params_excluding_embeddings"] < 2_400_000


def test_frozen_and_trainable_embeddings(small_config, rng):
    matrix = rng.normal(size=(small_config.vocab_size, small_config.embedding_dim))
    frozen = build_model("dsan", small_config, word_vectors=matrix)
    embedding = frozen.backbone.token_embedding
    assert not embedding.trainable
    np.testing.assert_allclose(np.asarray(embedding.embeddings)[1:], matrix[1:], rtol=1e-6)
    assert np.all(np.asarray(embedding.embeddings)[0] == 0)
    trainable = build_model("dsan",
                            dataclasses.replace(small_config, trainable_embeddings=True))
    assert trainable.backbone.token_embedding.trainable


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="embedding_dim=30 must be divisible by num_heads"):
        DSANConfig(embedding_dim=30, num_heads=4, vocab_size=10)
    with pytest.raises(ValueError, match="model_dim=30 must be divisible by num_heads"):
        model_config("gaussian_transformer", model_dim=30, num_heads=4, vocab_size=9)
    with pytest.raises(ValueError, match="configuration class GaussianTransformerConfig, got a DSANConfig"):
        build_model("gaussian_transformer", DSANConfig(vocab_size=9))
    with pytest.raises(ValueError, match="pooling"):
        DSANConfig(pooling="mean")
    with pytest.raises(ValueError, match="unknown DSANConfig field"):
        DSANConfig.from_dict({"embeding_dim": 3})
    with pytest.raises(ValueError, match="word vectors have shape"):
        build_model("dsan", DSANConfig(embedding_dim=20, num_heads=4), np.zeros((5, 3)))
    assert DSANConfig.from_json(DSANConfig(num_heads=3).to_json()) == DSANConfig(num_heads=3)


# DSAN's options that change its layers' configuration, beside each family's defaults.
CHANGES = {"dsan": dict(distance_prior="learned", pooling="multi_dim", fusion="raw")}


def test_every_familys_keras_file_reloads_in_a_fresh_process(small_config, rng, tmp_path):
    """Each family's model, its weights moved off their initial values (which a loader
    that ignored the file would reproduce), gives the same logits from its `.keras` file in
    a fresh process (one process for all: a start each is most of the cost)."""
    models, expected = [], []
    inputs = batch(rng)
    inputs["hypothesis"][0, 2:] = 0
    for name in FAMILIES:
        model = build_model(name, small(name, small_config, **CHANGES.get(name, {})))
        model.set_weights([w + rng.normal(scale=0.05, size=np.shape(w)).astype(w.dtype)
                           if np.issubdtype(np.asarray(w).dtype, np.floating) else w
                           for w in model.get_weights()])
        models.append(model)
        expected.append(inference(model, inputs))
    for name, again, logits in zip(FAMILIES, reloaded_outputs_of(models, inputs, tmp_path),
                                   expected):
        np.testing.assert_array_equal(again, logits, err_msg=name)


@pytest.mark.tensorflow
def test_no_training_tensor_is_bigger_than_the_attention_logits(small_config):
    """Every tensor of a training step (forward and backward) has at most 2·B·H·T²
    elements, the attention logits of the two directions (computed as one [2, B, H, T, T]
    tensor): masks are [T, T] grids broadcast over batch and heads, never expanded per
    head."""
    import tensorflow as tf

    batch_size, length = 2, 48  # T large against D (24) and d_ff (48), as at T = 512
    config = dataclasses.replace(small_config, classifier_units=8)
    model = build_model("dsan", config)
    optimizer = keras.optimizers.Adam()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    spec = tf.TensorSpec((batch_size, length), tf.int32)

    @tf.function(input_signature=[spec, spec, tf.TensorSpec((batch_size,), tf.int32)])
    def step(premise, hypothesis, labels):
        with tf.GradientTape() as tape:
            logits = model({"premise": premise, "hypothesis": hypothesis}, training=True)
            loss = loss_fn(labels, logits)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(gradients, model.trainable_variables)
        return loss

    graph = step.get_concrete_function().graph
    limit = 2 * batch_size * config.num_heads * length ** 2  # both directions' logits
    sizes, unknown = [], 0
    for op in graph.get_operations():
        for tensor in op.outputs:
            if tensor.shape.rank is None or not tensor.shape.is_fully_defined():
                unknown += 1
                continue
            sizes.append((tensor.shape.num_elements(), op.name))
    assert max(sizes)[0] == limit, max(sizes)  # the logits exist, and nothing is larger
    assert unknown < 0.05 * len(sizes), "too many tensors of unknown shape to check"


@pytest.mark.parametrize("initializer", [
    "glorot_uniform", keras.initializers.GlorotUniform(seed=3)])
def test_no_two_kernels_start_equal(small_config, initializer):
    """A seeded initializer must not make W^Q = W^K = W^V (or the forward and backward
    blocks, or the classifier's two layers) identical; the same seed still builds the
    same weights."""
    def kernels(layer_class, input_width, **kwargs):
        config = DiSANConfig() if layer_class is DiSANEncoder else None
        layer = made(layer_class, kernel_initializer=initializer, config=config, **kwargs)
        layer.build((None, None, input_width) if layer_class is not ClassificationHead
                    else (None, input_width))
        return [np.asarray(w) for w in layer.weights if w.path.endswith("kernel")]

    width = small_config.embedding_dim
    for layer_class, kwargs in ((DSANEncoder, {"num_heads": 4}), (DiSANEncoder, {}),
                                (ClassificationHead,
                                 {"hidden_units": width, "num_classes": width})):
        built = kernels(layer_class, width, **kwargs)
        assert len(built) >= 2
        for i, first in enumerate(built):
            for second in built[i + 1:]:
                assert first.shape != second.shape or not np.array_equal(first, second)
        if not isinstance(initializer, str):
            again = kernels(layer_class, width, **kwargs)
            assert all(np.array_equal(a, b) for a, b in zip(again, built))


@pytest.mark.parametrize("name", SENTENCE_ENCODERS)
def test_backbone_alone_embeds_sentences_and_reloads(small_config, rng, tmp_path, name):
    """A sentence-encoder backbone is a model of its own: ids in, one vector per sentence
    out, the same vectors inside the classifier, and a `.keras` file of its own."""
    model = build_model(name, small(name, small_config))
    backbone = model.backbone
    ids = random_ids(rng, 3, 6)
    vectors = np.asarray(backbone(ids, training=False))
    assert vectors.shape == (3, backbone.output_dim)
    assert type(backbone).from_config(backbone.get_config()).get_config() == backbone.get_config()
    backbone.save(tmp_path / "backbone.keras")
    reloaded = keras.models.load_model(tmp_path / "backbone.keras")
    np.testing.assert_allclose(np.asarray(reloaded(ids, training=False)), vectors, atol=1e-6)


@keras.saving.register_keras_serializable(package="dsan_tf_tests")
class JointBagOfWords(PairBackbone):
    """A toy pair backbone: features of premise and hypothesis read together."""

    def __init__(self, vocabulary_size, embedding_dim, trainable_embeddings=True, **kwargs):
        super().__init__(vocabulary_size, embedding_dim, trainable_embeddings, **kwargs)
        self._make_token_embedding()

    def call(self, inputs, training=None):
        premise, hypothesis = (keras.ops.mean(self.token_embedding(inputs[side]), axis=1)
                               for side in ("premise", "hypothesis"))
        return keras.ops.concatenate([premise, hypothesis, premise * hypothesis], axis=-1)

    def compute_output_shape(self, input_shape):
        return (input_shape["premise"][0], 3 * self.embedding_dim)


@keras.saving.register_keras_serializable(package="dsan_tf_tests")
class BuildsItself(JointBagOfWords):
    """A backbone with its own `build`, which can be made to fail."""

    fail = False

    def build(self, inputs_shape=None):
        if BuildsItself.fail:
            raise RuntimeError("this build failed")
        self.token_embedding.build()
        self.built = True


def test_a_backbone_that_cannot_build_while_loading_raises(rng, tmp_path, monkeypatch):
    """Keras' `Model.build_from_config` would warn and load a model whose unbuilt layers
    keep fresh weights (a CI run's AF-DMN answered differently once reloaded); the error of
    the backbone's own `build` reaches the caller instead."""
    model = NLIClassifier(BuildsItself(30, 8), hidden_units=16)
    inputs = {side: ids % 30 for side, ids in batch(rng, batch_size=2).items()}
    expected = np.asarray(model(inputs))
    model.save(tmp_path / "model.keras")
    np.testing.assert_allclose(np.asarray(keras.models.load_model(tmp_path / "model.keras")(
        inputs)), expected, atol=1e-6)
    monkeypatch.setattr(BuildsItself, "fail", True)
    with pytest.raises(RuntimeError, match="this build failed"):
        keras.models.load_model(tmp_path / "model.keras")


def test_classifier_accepts_a_pair_backbone(rng, tmp_path):
    """The task does not assume a sentence encoder: a joint backbone's features go straight
    to the head, and the model trains, saves and reloads."""
    model = NLIClassifier(JointBagOfWords(30, 8), hidden_units=16)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(True))
    inputs = batch(rng, batch_size=4)
    inputs = {side: ids % 30 for side, ids in inputs.items()}
    model.fit(inputs, np.array([0, 1, 2, 0]), epochs=1, verbose=0)
    parts = model.parameter_breakdown()
    assert parts["classifier"] == (3 * 8 * 16 + 16) + 2 * 16 + (16 * 3 + 3)
    model.save(tmp_path / "joint.keras")
    reloaded = keras.models.load_model(tmp_path / "joint.keras")
    np.testing.assert_allclose(np.asarray(reloaded(inputs)), np.asarray(model(inputs)),
                               atol=1e-6)


def _other_values(field, value):
    """Values of a hyperparameter field other than `value`, nearest first."""
    from dsan_tf.models.config import value_type

    kind = value_type(field)
    if field.metadata.get("choices"):
        return [choice for choice in field.metadata["choices"] if choice != value]
    if kind is bool:
        return [not value]
    if value is None:
        return []
    if kind is int:
        return [value * 2, value + 1]
    if kind is float:
        return [value * 2 if value else 0.5, value / 2]
    return []


def _built(name, config):
    """What a configuration makes of family `name`, where it computes: each layer without
    sublayers by class and configuration (names aside: Keras numbers them; a layer that
    holds a value without passing it on shows it only in its own), each weight's shape,
    whether it trains and its initial values at one seed, and the logits of two pairs."""
    keras.utils.set_random_seed(0)
    model = build_model(name, config)
    layers = []
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if list(layer._flatten_layers(include_self=False)):
            continue
        try:
            settings = layer.get_config()
        except NotImplementedError:
            settings = {}
        settings.pop("name", None)
        layers.append((type(layer).__name__, json.dumps(settings, sort_keys=True, default=str)))
    weights = [(tuple(w.shape), w.trainable, keras.ops.convert_to_numpy(w.value).tobytes())
               for w in model.weights]
    ids = np.array([[3, 4, 5, 6, 0], [7, 8, 0, 0, 0]], "int32")
    logits = np.asarray(model({"premise": ids, "hypothesis": ids[:, ::-1].copy()}))
    return layers, weights, np.round(logits, 6).tobytes()


# A field that acts only beside another value: (family, field) -> the companion values.
ACTS_WITH = {("dsan", "prior_max_distance"): {"distance_prior": "learned"},
             ("afdmn", "init_scale"): {"initialization": "esim"}}


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="what a configuration builds is the same on every backend: "
                           "checked once, on TensorFlow")
@pytest.mark.parametrize("name", registry.PACKAGES)
def test_every_hyperparameter_reaches_the_model_it_configures(name, small_config):
    """Each hyperparameter of a family (`hyperparameter` fields: they are flags), set to
    another value, changes the model `build_model` makes of it where it computes: a
    layer's configuration, a weight's shape or initial values, or the logits. A field a
    backbone takes and passes on as a constant (or not at all, where its layer still
    had a default of its own: tests/test_registry.py keeps them from having one) fails
    here while config.json would record the flag."""
    from dsan_tf.models.config import check_fields, described_fields, value_type

    family = registry.family(name)
    unchanged, tried, made = [], 0, {}
    for field in described_fields(family.config):
        companions = ACTS_WITH.get((name, field.name), {})
        base = small(name, small_config, **companions)
        if getattr(base, field.name) is None and value_type(field) is bool:
            base = dataclasses.replace(base, **{field.name: True})  # unset: derived
        key = repr(base)
        before = made[key] = made[key] if key in made else _built(name, base)
        for value in _other_values(field, getattr(base, field.name)):
            try:
                other = dataclasses.replace(base, **{field.name: value})
                check_fields(other)
                after = _built(name, other)
            except ValueError:  # not a model this family makes (a width heads cannot split,
                # a field that does not apply to it)
                continue
            tried += 1
            if after == before:
                unchanged.append(f"{field.name}={value!r}")
            break
    assert tried >= len(described_fields(family.config)) - 1
    assert not unchanged, f"{name}: the model is the same with {unchanged}"


@pytest.mark.parametrize("name", registry.PACKAGES)
def test_every_layer_is_built_with_the_model(name, small_config):
    """A model comes with every layer built, weightless ones too: Keras' `predict` on JAX
    otherwise runs the whole model op by op once to build it (16 s of compiles on SNLI
    dev's first batch)."""
    model = build_model(name, small(name, small_config))
    assert [layer.name for layer in model._flatten_layers() if not layer.built] == []
