"""The DSAN natural language inference model as a functional Keras model.

Shape legend: B batch, T1 premise tokens, T2 hypothesis tokens, D word width, C classes.
"""

import keras
import numpy as np
from keras import ops

from dsan_tf.config import DSANConfig
from dsan_tf.layers import BagOfWordsEncoder, DiSANEncoder, PairClassifier, SentenceEncoder

MODELS = ("dsan", "disan", "cbow")
EMBEDDING_LAYER = "word_embedding"
ENCODER_LAYER = "sentence_encoder"
CLASSIFIER_LAYER = "pair_classifier"


def build_dsan(config=None, embedding_matrix=None):
    """Builds the DSAN model.

    Token id 0 is padding; the same `SentenceEncoder` (one set of weights) encodes
    premise and hypothesis.

    Args:
        config: `DSANConfig`; the paper's defaults when None.
        embedding_matrix: optional float array [V, D] of word vectors (row 0, padding,
            is set to zeros). Without it the embeddings start random.

    Returns:
        `keras.Model` with int32 inputs `{"premise": [B, T1], "hypothesis": [B, T2]}`
        and float32 logits [B, C] in the order of `dsan_tf.labels.LABELS`.
    """
    config = config or DSANConfig()
    encoder = SentenceEncoder(
        num_heads=config.num_heads, ffn_dim=config.ffn_dim,
        use_direction_mask=config.use_direction_mask,
        distance_prior=config.distance_prior, distance_alpha=config.distance_alpha,
        prior_max_distance=config.prior_max_distance, fusion=config.fusion,
        pooling=config.pooling, qkv_norm=config.qkv_norm, dropout=config.dropout,
        layer_norm_epsilon=config.layer_norm_epsilon, name=ENCODER_LAYER)
    return _pair_model("dsan", encoder, config, embedding_matrix)


def build_cbow(config=None, embedding_matrix=None):
    """The continuous bag-of-words baseline (Table 2): mean word vector per sentence, and
    the same embeddings, classifier, inputs and outputs as `build_dsan`. Only
    `embedding_dim`, `classifier_units`, `dropout`, `trainable_embeddings` and the
    vocabulary of `config` apply."""
    config = config or DSANConfig()
    return _pair_model("cbow", BagOfWordsEncoder(name=ENCODER_LAYER), config, embedding_matrix)


def build_disan(config=None, embedding_matrix=None):
    """The DiSAN baseline (Shen et al., 2017) with DSAN's embeddings, classifier, inputs
    and outputs. Only `embedding_dim`, `dropout`, `layer_norm_epsilon`,
    `classifier_units`, `trainable_embeddings` and the vocabulary of `config` apply."""
    config = config or DSANConfig()
    encoder = DiSANEncoder(dropout=config.dropout, layer_norm_epsilon=config.layer_norm_epsilon,
                           name=ENCODER_LAYER)
    return _pair_model("disan", encoder, config, embedding_matrix)


def build_model(name, config=None, embedding_matrix=None):
    """`build_dsan`, `build_disan` or `build_cbow` by name (one of `MODELS`)."""
    builders = {"dsan": build_dsan, "disan": build_disan, "cbow": build_cbow}
    if name not in builders:
        raise ValueError(f"model must be one of {MODELS}, got {name!r}.")
    return builders[name](config, embedding_matrix)


def _pair_model(name, encoder, config, embedding_matrix):
    vocab_size = config.vocab_size
    if embedding_matrix is not None:
        embedding_matrix = np.array(embedding_matrix, dtype="float32")
        if embedding_matrix.ndim != 2 or embedding_matrix.shape[1] != config.embedding_dim:
            raise ValueError(
                f"embedding matrix has shape {embedding_matrix.shape}, expected "
                f"[vocab_size, {config.embedding_dim}] (embedding_dim).")
        if vocab_size is not None and vocab_size != embedding_matrix.shape[0]:
            raise ValueError(
                f"vocab_size={vocab_size} but the embedding matrix has "
                f"{embedding_matrix.shape[0]} rows.")
        vocab_size = embedding_matrix.shape[0]
        embedding_matrix[0] = 0.0
    if vocab_size is None:
        raise ValueError("give DSANConfig.vocab_size or an embedding matrix.")

    premise = keras.Input(shape=(None,), dtype="int32", name="premise")
    hypothesis = keras.Input(shape=(None,), dtype="int32", name="hypothesis")
    embedding = keras.layers.Embedding(
        vocab_size, config.embedding_dim, trainable=config.trainable_embeddings,
        embeddings_initializer=keras.initializers.RandomUniform(-0.05, 0.05),
        name=EMBEDDING_LAYER)
    classifier = PairClassifier(
        hidden_units=config.classifier_units, num_classes=config.num_classes,
        dropout=config.dropout, layer_norm_epsilon=config.layer_norm_epsilon, name=CLASSIFIER_LAYER)

    vectors = [encoder(embedding(ids), padding_mask=ops.not_equal(ids, 0))
               for ids in (premise, hypothesis)]
    logits = classifier(*vectors)
    model = keras.Model({"premise": premise, "hypothesis": hypothesis}, logits, name=name)
    if embedding_matrix is not None:
        embedding.embeddings.assign(embedding_matrix)
    return model


def compile_for_training(model, learning_rate=1e-3, jit_compile=False):
    """Compiles `model` as the paper trains it (Section 5.2: Adam, cross-entropy on the
    logits) with an accuracy metric, and creates the optimizer's variables now.

    Keras creates them inside the first training step otherwise, and a `tf.function`
    that creates variables is traced twice: building them first halves the tracing that
    the first epoch pays for (a DSAN train step takes seconds to trace).
    """
    model.compile(optimizer=keras.optimizers.Adam(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                  jit_compile=jit_compile)
    model.optimizer.build(model.trainable_variables)
    return model


def _count(weights):
    return int(sum(np.prod(w.shape) for w in weights))


def parameter_breakdown(model):
    """Trainable parameter counts per part of a model built by `build_model`.

    Returns:
        dict with `word_embedding` (all embedding parameters, trainable or not),
        `forward_block`, `backward_block` (and their parts as `<block>.<part>`),
        `source2token`, `classifier`, and
        `params_excluding_embeddings` (trainable parameters outside the embedding).
    """
    embedding = model.get_layer(EMBEDDING_LAYER)
    encoder = model.get_layer(ENCODER_LAYER)
    parts = {"word_embedding": _count(embedding.weights)}
    for block in [getattr(encoder, n) for n in ("forward_block", "backward_block")
                  if hasattr(encoder, n)]:
        parts[block.name] = _count(block.trainable_weights)
        for part in ("token_map", "attention", "fusion_gate", "feed_forward"):
            if getattr(block, part, None) is not None:
                sublayer = getattr(block, part)
                parts[f"{block.name}.{sublayer.name}"] = _count(sublayer.trainable_weights)
    if getattr(encoder, "source2token", None) is not None:
        parts["source2token"] = _count(encoder.source2token.trainable_weights)
    parts["classifier"] = _count(model.get_layer(CLASSIFIER_LAYER).trainable_weights)
    embedding_ids = {id(w) for w in embedding.weights}
    parts["params_excluding_embeddings"] = _count(
        [w for w in model.trainable_weights if id(w) not in embedding_ids])
    return parts
