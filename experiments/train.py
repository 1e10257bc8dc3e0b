"""Trains a DSAN (or CBOW) model, keeps the best dev model, and can export it.

    python -m experiments.train --flagfile=experiments/configs/demo.cfg --workdir=/tmp/demo
    python -m experiments.train --flagfile=experiments/configs/dsan_snli.cfg --workdir=runs/dsan \
        --embeddings=glove.840B.300d.zip
    ... --strategy=mirrored          # every local GPU; --batch_size stays the global batch
    TF_CONFIG=... python -m experiments.train ... --strategy=multi_worker   # on each machine

Run again with the same flags after an interruption (even SIGKILL): training continues from
the last completed epoch. `tensorboard --logdir WORKDIR/tensorboard` shows the run.
"""

import math
import os
import sys

from absl import app

from experiments import flags as project_flags
from experiments import run

FLAGS = project_flags.FLAGS


def read(spec, name):
    from dsan_tf import data

    examples, report = data.read_examples(spec, FLAGS.tfds_data_dir)
    print(f"{name}: {report.summary()}")
    if not examples:
        run.fail(f"--{name}={spec} holds no labelled examples.")
    return examples, report


def vector_file():
    """The path of --embeddings, downloaded first for glove:NAME; None for random."""
    from dsan_tf import data

    if FLAGS.embeddings == "random":
        return None
    if FLAGS.embeddings.startswith("glove:"):  # e.g. glove:840B.300d, downloaded once
        return data.download_glove("glove." + FLAGS.embeddings[len("glove:"):],
                                   os.path.expanduser(FLAGS.embeddings_cache_dir))
    return FLAGS.embeddings


def vocabulary(train, others, source):
    """The run's vocabulary: a resumed run's own; otherwise the training words, then the
    words of `others` (dev/test examples) and the first --vocab_from_vectors words of the
    vector file `source` that have a vector (docs/FIDELITY.md, row 25)."""
    from dsan_tf.data import Vocabulary, extend_vocabulary

    if os.path.exists(run.path(run.VOCAB)):  # a resumed run keeps its ids
        vocab = Vocabulary.load(run.path(run.VOCAB))
        if vocab.lowercase != FLAGS.lowercase:
            run.fail(f"{run.path(run.VOCAB)} was built with lowercase={vocab.lowercase}; "
                     "use a new --workdir to change --lowercase.")
        return vocab
    vocab = Vocabulary.from_examples(train, min_count=FLAGS.min_count,
                                     lowercase=FLAGS.lowercase)
    if source and (FLAGS.extend_vocabulary or FLAGS.vocab_from_vectors):
        extra = (Vocabulary.from_examples(others, lowercase=FLAGS.lowercase).words
                 if FLAGS.extend_vocabulary and others else [])
        training_words = len(vocab.words)
        vocab, added = extend_vocabulary(
            source, vocab, extra, FLAGS.vocab_from_vectors,
            cache_dir=os.path.expanduser(FLAGS.embeddings_cache_dir),
            progress=sys.stderr.isatty())
        print(f"vocabulary: {training_words:,} training words, {added['from_data']:,} more "
              f"dev/test words and {added['from_vectors']:,} more of the vector file's first "
              f"{FLAGS.vocab_from_vectors:,} that have a vector")
    vocab.save(run.path(run.VOCAB))
    return vocab


def embeddings(vocab, source):
    """(matrix or None, trainable, info dict)."""
    from dsan_tf import data

    explicit = FLAGS["trainable_embeddings"].present
    if source is None:
        trainable = FLAGS.trainable_embeddings if explicit else True
        return None, trainable, {"source": "random"}
    cache_dir = os.path.expanduser(FLAGS.embeddings_cache_dir)
    matrix, report = data.load_vectors(source, vocab, cache_dir=cache_dir,
                                       oov_init=FLAGS.oov_init, seed=FLAGS.seed,
                                       progress=sys.stderr.isatty())
    print(f"embeddings: {report.summary()}")
    if report.dim != FLAGS.embedding_dim:
        run.fail(f"--embeddings={FLAGS.embeddings} has {report.dim}-d vectors but "
                 f"--embedding_dim={FLAGS.embedding_dim}.")
    info = {"source": source, "cache": report.cache_path,
            "types_found": report.types_found, "vocab_types": report.vocab_types,
            "tokens_found": report.tokens_found, "tokens_total": report.tokens_total}
    return matrix, FLAGS.trainable_embeddings, info


def weights_digest(model):
    """SHA-256 of the model's weights, to compare runs (e.g. the workers of one run)."""
    import hashlib

    import numpy as np

    digest = hashlib.sha256()
    for weights in model.get_weights():
        digest.update(np.ascontiguousarray(weights).tobytes())
    return digest.hexdigest()


def main(argv):
    run.start(argv, workdir="the run directory", train_data="the training data (see --helpfull)",
              dev_data="the development data (see --helpfull)",
              embeddings="a GloVe file, glove:840B.300d or random")
    import keras
    import tensorflow as tf

    from dsan_tf import build_model, compile_for_training, data, parameter_breakdown
    from dsan_tf.serving import TextPairClassifier
    from experiments import callbacks, distribute

    if FLAGS.logical_cpus > 1:
        distribute.split_cpu(FLAGS.logical_cpus)
    strategy = distribute.make_strategy(FLAGS.strategy, FLAGS.tpu)
    if FLAGS.batch_size % strategy.num_replicas_in_sync:
        run.fail(f"--batch_size={FLAGS.batch_size} (the global batch) is not divisible by the "
                 f"{strategy.num_replicas_in_sync} replicas of --strategy={FLAGS.strategy}.")
    print(f"strategy: {FLAGS.strategy}, {strategy.num_replicas_in_sync} replica(s), "
          f"{FLAGS.batch_size // strategy.num_replicas_in_sync} pairs each per step")
    if FLAGS.strategy == "multi_worker":
        FLAGS.workdir = distribute.worker_dir(FLAGS.workdir)
    if FLAGS.mixed_precision != "none":
        keras.config.set_dtype_policy(FLAGS.mixed_precision)
    os.makedirs(FLAGS.workdir, exist_ok=True)
    keras.utils.set_random_seed(FLAGS.seed)
    if FLAGS.deterministic:
        tf.config.experimental.enable_op_determinism()

    try:
        train, train_report = read(FLAGS.train_data, "train_data")
        dev, dev_report = read(FLAGS.dev_data, "dev_data")
        test = read(FLAGS.test_data, "test_data")[0] if FLAGS.test_data else None
        source = vector_file()
        vocab = vocabulary(train, dev + (test or []), source)
        matrix, trainable, embedding_info = embeddings(vocab, source)
    except data.DataError as error:
        run.fail(str(error))
    FLAGS.trainable_embeddings = trainable  # resolved, so that flags.txt repeats the run
    with open(run.path("flags.txt"), "w") as stream:
        stream.write("\n".join(run.resolved_flags()) + "\n")
    config = project_flags.model_config(vocab_size=vocab.size)
    max_length = FLAGS.max_length or None
    encoded = {name: data.encode(examples, vocab, max_length)
               for name, examples in (("train", train), ("dev", dev), ("test", test))
               if examples is not None}
    for name, pairs in encoded.items():
        print(f"{name} tokens: {pairs.report.summary()}")
    static_shapes = FLAGS.strategy == "tpu"  # TPUs compile one program per shape
    batches = dict(batch_size=FLAGS.batch_size, deterministic=FLAGS.deterministic,
                   pad_to_bucket=FLAGS.pad_to_bucket or static_shapes)
    train_ds = data.make_dataset(encoded["train"], shuffle=FLAGS.shuffle, seed=FLAGS.seed,
                                 drop_remainder=static_shapes, **batches)
    if FLAGS.steps_per_epoch:
        train_ds = train_ds.take(FLAGS.steps_per_epoch)
    dev_ds = data.make_dataset(encoded["dev"], **batches)
    padding = data.padding_fraction(train_ds)
    print(f"vocabulary: {vocab.size:,} ids; training batches hold {padding:.1%} padding")

    with strategy.scope():
        model = build_model(FLAGS.model, config, matrix)
        compile_for_training(model, FLAGS.learning_rate, FLAGS.jit_compile)
    parts = parameter_breakdown(model)
    print(f"model: {FLAGS.model}, {parts['params_excluding_embeddings']:,} trainable "
          "parameters excluding word embeddings")
    run.write_json(run.CONFIG, {
        "model": FLAGS.model, "model_config": config.to_dict(), "max_length": max_length,
        "lowercase": vocab.lowercase, "vocab_size": vocab.size, "embeddings": embedding_info,
        "parameters": parts, "padding_fraction": padding,
        "mixed_precision": FLAGS.mixed_precision, "strategy": FLAGS.strategy,
        "replicas": strategy.num_replicas_in_sync, "provenance": run.provenance(),
        "data": {"train": train_report.summary(), "dev": dev_report.summary()}})
    nan_guard = callbacks.StopOnNaN()
    hparams = dict(config.to_dict(), model=FLAGS.model, learning_rate=FLAGS.learning_rate,
                   batch_size=FLAGS.batch_size, embeddings=embedding_info["source"],
                   seed=FLAGS.seed, strategy=FLAGS.strategy,
                   mixed_precision=FLAGS.mixed_precision)
    extra = []
    if FLAGS.probe_sentence:
        if FLAGS.model != "dsan":
            run.fail("--probe_sentence needs --model=dsan (the figures show attention).")
        tokens = [t.decode() for t in data.tokenize([FLAGS.probe_sentence],
                                                    vocab.lowercase).to_list()[0]]
        extra.append(callbacks.ProbeFigures(run.path("tensorboard/probe"), tokens,
                                            vocab.ids([FLAGS.probe_sentence]).to_list()[0]))
    shared = [
        callbacks.EpochSeconds(),
        nan_guard,
        callbacks.KeepBest(run.path(run.BEST), run.path(run.BEST_INFO)),
        keras.callbacks.CSVLogger(run.path("history.csv"), append=True),
        keras.callbacks.TensorBoard(run.path("tensorboard"), update_freq=FLAGS.log_every_steps),
        callbacks.HParams(run.path("tensorboard"), hparams,
                          trial=os.path.basename(os.path.abspath(FLAGS.workdir))),
        *extra,
    ]
    if FLAGS.patience:
        shared.append(keras.callbacks.EarlyStopping("val_accuracy", patience=FLAGS.patience,
                                                    mode="max"))
    if FLAGS.strategy == "multi_worker":  # model.fit fails there (keras-team/keras#20585)
        distribute.fit_multi_worker(model, strategy, train_ds, dev_ds, FLAGS.epochs, shared,
                                    run.path("backup"))
    else:
        model.fit(train_ds, validation_data=dev_ds, epochs=FLAGS.epochs, shuffle=False,
                  verbose=1 if sys.stdout.isatty() else 2,
                  callbacks=[keras.callbacks.BackupAndRestore(run.path("backup"),
                                                              delete_checkpoint=False),
                             *shared])
    if nan_guard.message:
        run.fail(nan_guard.message)
    if not os.path.exists(run.path(run.BEST)):
        run.fail(f"no epoch finished with a finite dev accuracy; nothing saved in {FLAGS.workdir}.")

    best = keras.models.load_model(run.path(run.BEST))
    best_info = run.read_json(run.BEST_INFO)
    results = {"best_epoch": best_info["epoch"], "parameters": parts,
               "best_weights_sha256": weights_digest(best)}
    results["dev_accuracy"] = best.evaluate(dev_ds, verbose=0, return_dict=True)["accuracy"]
    if test is not None:
        results["test_accuracy"] = best.evaluate(
            data.make_dataset(encoded["test"], **batches), verbose=0,
            return_dict=True)["accuracy"]
    history = callbacks.read_history(run.path("history.csv"))
    seconds = [row["seconds"] for row in history if not math.isnan(row.get("seconds", math.nan))]
    results["seconds_per_epoch"] = sum(seconds) / len(seconds) if seconds else None
    results["epochs"] = len(history)
    run.write_json("results.json", results)
    if FLAGS.export_dir:
        TextPairClassifier(best, vocab, max_length).export(FLAGS.export_dir)
        print(f"SavedModel: {FLAGS.export_dir}")
    test_text = (f", test accuracy {results['test_accuracy']:.4f}"
                 if "test_accuracy" in results else "")
    print(f"dev accuracy {results['dev_accuracy']:.4f} (best epoch {results['best_epoch']})"
          f"{test_text}; model: {run.path(run.BEST)}")


def cli():
    app.run(main)


if __name__ == "__main__":
    cli()
