r"""Input-pipeline throughput against the model's training throughput.

    python -m benchmarks.pipeline_benchmark \
        --train_data=../shared/data/snli/snli_1.0_train_0.01.jsonl.gz \
        [--dev_data=../shared/data/snli/snli_1.0_dev.jsonl.gz] [--output=FILE.json]

Reads and encodes the data (timed), then iterates the batched `tf.data` pipeline for a few
epochs (pairs/s, after one warm-up epoch), and trains the model the model flags describe
(the paper's by default, its embeddings frozen unless --trainable_embeddings) for a few
steps on the same batches (pairs/s). The pipeline must be at least 10x faster than
training so that input is never the bottleneck.
"""

import dataclasses
import json
import time

from absl import flags

from dsan_tf.core.config import BATCHINGS
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_model_flags()
    project_flags.define_data_flags()
    project_flags.define_training_flags()
    project_flags.define_step_flags()
    project_flags.define_output_flag()
    flags.DEFINE_integer("pipeline_epochs", 3, "Timed passes over the data (after a warm-up).")
    flags.DEFINE_integer("train_steps", 20, "Timed training steps (after a warm-up).")


def prepare(task):
    """Reads --train_data (and --dev_data) and encodes them: (pairs, count, seconds)."""
    started = time.perf_counter()
    examples = []
    for name in ("train_data", "dev_data"):
        spec = getattr(task.config.data, name)
        if spec:
            examples += task.read(spec, name)[0]
    preprocessor = task.build_preprocessor(examples)
    pairs = preprocessor.encode(examples)
    seconds = time.perf_counter() - started
    print(f"read, vocabulary ({preprocessor.vocabulary_size:,} ids) and encoding: "
          f"{seconds:.1f} s; {pairs.report.summary()}")
    return pairs, preprocessor, seconds


def pipeline_rate(dataset, pairs, epochs):
    """Pairs/s of iterating `dataset` for `epochs` passes, after one warm-up pass."""
    for _ in dataset:  # warm-up: tracing and the first shuffle buffer
        pass
    started = time.perf_counter()
    for _ in range(epochs):
        for _ in dataset:
            pass
    return epochs * len(pairs.labels) / (time.perf_counter() - started)


def training_rate(task, dataset, vocabulary_size, steps):
    """Pairs/s of training the task's model on `dataset`, after 5 warm-up steps."""
    import keras

    keras.utils.set_random_seed(task.config.data.seed)
    model = task.compile(task.build_model(vocabulary_size))
    batches = dataset.repeat()
    model.fit(batches, steps_per_epoch=5, epochs=1, verbose=0, shuffle=False)  # tracing
    started = time.perf_counter()
    model.fit(batches, steps_per_epoch=steps, epochs=1, verbose=0, shuffle=False)
    return steps * task.config.data.batch_size / (time.perf_counter() - started)


def task_with(task, **data_settings):
    """The same task with other `DataConfig` settings."""
    from dsan_tf.core.task import NLITask

    data = dataclasses.replace(task.config.data, **data_settings)
    return NLITask(dataclasses.replace(task.config, data=data), task.policy, log=task.log)


@program.main
def main(argv):
    program.check_start(argv, train_data="a data file, tfds:NAME/SPLIT or synthetic:...")
    from dsan_tf import data  # TensorFlow loads here, not for --help
    from dsan_tf.core.task import NLITask
    from benchmarks.benchmark import frozen_embeddings

    task = NLITask(frozen_embeddings(project_flags.experiment_config()),
                   project_flags.run_policy())
    pairs, preprocessor, prepare_seconds = prepare(task)
    dataset = task.build_inputs(pairs, training=True)
    rate = pipeline_rate(dataset, pairs, FLAGS.pipeline_epochs)
    settings = task.config.data
    padding = {name: data.padding_fraction(task_with(task, batching=name).build_inputs(
        pairs, training=True)) for name in BATCHINGS}
    print(f"pipeline (--batching={settings.batching}): {rate:,.0f} pairs/s; padding: " +
          ", ".join(f"{share:.1%} {name}" for name, share in padding.items()))
    train_rate = training_rate(task, dataset, preprocessor.vocabulary_size, FLAGS.train_steps)
    ratio = rate / train_rate
    print(f"model training: {train_rate:,.0f} pairs/s -> pipeline is {ratio:.0f}x faster "
          f"({'OK' if ratio >= 10 else 'TOO SLOW'}: needs 10x)")
    results = {"pairs": len(pairs.labels), "prepare_seconds": prepare_seconds,
               "pipeline_pairs_per_sec": rate, "train_pairs_per_sec": train_rate,
               "ratio": ratio, "batching": settings.batching,
               "padding_fraction": padding[settings.batching],
               **{f"padding_fraction_{name}": share for name, share in padding.items()},
               "batch_size": settings.batch_size, "model": task.config.model,
               "model_config": task.config.model_config.to_dict()}
    if FLAGS.output:
        with open(FLAGS.output, "w") as stream:
            json.dump(results, stream, indent=2)


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
