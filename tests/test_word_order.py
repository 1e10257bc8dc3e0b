"""The model learns word order, and the masks are what carries it."""

import dataclasses

import keras
import numpy as np

from dsan_tf import DSANConfig, build_model
from dsan_tf.data import Example, Vocabulary
from dsan_tf.data.synthetic import vocabulary, word_order_pairs

VOCABULARY = Vocabulary(vocabulary())
WORD_IDS = VOCABULARY.word_ids()
CONFIG = DSANConfig(vocab_size=VOCABULARY.size, embedding_dim=32, num_heads=4, ffn_dim=64,
                    classifier_units=32, dropout=0.0, trainable_embeddings=True)


def encode(examples):
    ids = lambda text: [WORD_IDS[w] for w in text.split()]  # noqa: E731
    return ({"premise": np.array([ids(e.premise) for e in examples], "int32"),
             "hypothesis": np.array([ids(e.hypothesis) for e in examples], "int32")},
            np.array([e.label for e in examples], "int32"))


def train_accuracy(config, steps=300, batch_size=32):
    keras.utils.set_random_seed(7)
    inputs, labels = encode(word_order_pairs())
    model = build_model("dsan", config)
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    epochs = int(np.ceil(steps * batch_size / len(labels)))
    model.fit(inputs, labels, batch_size=batch_size, epochs=epochs, verbose=0)
    predictions = np.argmax(model.predict(inputs, batch_size=256, verbose=0), axis=-1)
    return model, float(np.mean(predictions == labels))


def test_order_blind_model_cannot_tell_swapped_sentences_apart():
    """Without direction and distance masks the encoder is a bag of words, exactly."""
    blind = build_model("dsan", dataclasses.replace(CONFIG, use_direction_mask=False,
                                                    distance_prior="none"))
    inputs, _ = encode([Example("the dog chased the cat", "the dog chased the cat", 0),
                        Example("the dog chased the cat", "the cat chased the dog", 2)])
    logits = np.asarray(blind(inputs))
    np.testing.assert_allclose(logits[0], logits[1], atol=1e-5)
    seeing = np.asarray(build_model("dsan", CONFIG)(inputs))
    assert not np.allclose(seeing[0], seeing[1], atol=1e-3)


def test_masks_carry_word_order():
    """With the masks the model learns the task; without them no weights can: the
    entailment and the contradiction of each premise hold the same words, so an order-blind
    encoder (exactly a bag of words, above) gives them the same logits and is right on at
    most half of those pairs, 2/3 of the task at best. Its logits are checked on every pair
    for any weights, so it is not trained."""
    _, with_masks = train_accuracy(CONFIG, steps=150)
    print(f"train accuracy with the masks: {with_masks:.3f}")
    assert with_masks >= 0.97
    blind = build_model("dsan", dataclasses.replace(CONFIG, use_direction_mask=False,
                                                    distance_prior="none"))
    examples = word_order_pairs()
    inputs, labels = encode(examples)
    logits = np.asarray(blind.predict(inputs, batch_size=256, verbose=0))
    by_premise = {}
    for example, row in zip(examples, logits):
        by_premise.setdefault(example.premise, {})[example.label] = row
    assert len(by_premise) == len(labels) // 3
    for rows in by_premise.values():
        np.testing.assert_allclose(rows[0], rows[2], atol=1e-5)  # entailment, contradiction
