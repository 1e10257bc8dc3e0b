"""Input-pipeline throughput against the model's training throughput.

    python -m experiments.pipeline_benchmark \
        --train_data=../shared/data/snli/snli_1.0_train_0.01.jsonl.gz \
        [--dev_data=../shared/data/snli/snli_1.0_dev.jsonl.gz] [--output=FILE.json]

Reads and encodes the data (timed), then iterates the batched `tf.data` pipeline for a few
epochs (pairs/s, after one warm-up epoch), and trains the model the model flags describe
(the paper's by default) for a few steps on the same batches (pairs/s). The pipeline must be
at least 10x faster than training so that input is never the bottleneck.
"""

import json
import time

from absl import app

from experiments import flags as project_flags
from experiments import run

FLAGS = project_flags.FLAGS


def main(argv):
    run.start(argv, train_data="a data file, tfds:NAME/SPLIT or synthetic:...")
    import keras

    from dsan_tf import build_model, compile_for_training, data

    started = time.perf_counter()
    try:
        examples = []
        for spec in filter(None, (FLAGS.train_data, FLAGS.dev_data)):
            read, report = data.read_examples(spec, FLAGS.tfds_data_dir)
            print(report.summary())
            examples += read
    except data.DataError as error:
        run.fail(str(error))
    vocab = data.Vocabulary.from_examples(examples, min_count=FLAGS.min_count,
                                          lowercase=FLAGS.lowercase)
    pairs = data.encode(examples, vocab, max_length=FLAGS.max_length or None)
    prepare_seconds = time.perf_counter() - started
    print(f"read, vocabulary ({vocab.size:,} ids) and encoding: {prepare_seconds:.1f} s; "
          f"{pairs.report.summary()}")

    dataset = data.make_dataset(pairs, FLAGS.batch_size, shuffle=True, seed=FLAGS.seed,
                                pad_to_bucket=FLAGS.pad_to_bucket)
    for _ in dataset:  # warm-up: tracing and the first shuffle buffer
        pass
    started = time.perf_counter()
    for _ in range(FLAGS.pipeline_epochs):
        for _ in dataset:
            pass
    pipeline_rate = FLAGS.pipeline_epochs * len(examples) / (time.perf_counter() - started)
    padding = data.padding_fraction(dataset)
    plain_padding = data.padding_fraction(
        data.make_dataset(pairs, FLAGS.batch_size, shuffle=True, seed=FLAGS.seed, buckets=None))
    print(f"pipeline: {pipeline_rate:,.0f} pairs/s; padding {padding:.1%} "
          f"(without bucketing {plain_padding:.1%})")

    keras.utils.set_random_seed(FLAGS.seed)
    model = compile_for_training(
        build_model(FLAGS.model, project_flags.model_config(vocab_size=vocab.size)),
        FLAGS.learning_rate)
    batches = dataset.repeat()
    model.fit(batches, steps_per_epoch=5, epochs=1, verbose=0, shuffle=False)  # warm-up and tracing
    started = time.perf_counter()
    model.fit(batches, steps_per_epoch=FLAGS.train_steps, epochs=1, verbose=0,
              shuffle=False)
    train_rate = FLAGS.train_steps * FLAGS.batch_size / (time.perf_counter() - started)
    ratio = pipeline_rate / train_rate
    print(f"model training: {train_rate:,.0f} pairs/s -> pipeline is {ratio:.0f}x faster "
          f"({'OK' if ratio >= 10 else 'TOO SLOW'}: needs 10x)")
    results = {"pairs": len(examples), "prepare_seconds": prepare_seconds,
               "pipeline_pairs_per_sec": pipeline_rate, "train_pairs_per_sec": train_rate,
               "ratio": ratio, "padding_fraction": padding,
               "padding_fraction_without_buckets": plain_padding,
               "batch_size": FLAGS.batch_size,
               "model": project_flags.model_config(vocab_size=vocab.size).to_dict()}
    if FLAGS.output:
        with open(FLAGS.output, "w") as stream:
            json.dump(results, stream, indent=2)


def cli():
    app.run(main)


if __name__ == "__main__":
    cli()
