r"""Sentence embeddings of a file, from a trained sentence encoder (DSAN, DiSAN, CBOW).

    dsan-embed --workdir=RUN --input=sentences.txt --output=vectors.npy \
        [--projector_dir=DIR --projector_sample=1000]

--input: a .txt file (one sentence per line) or a .jsonl file (the --field of each line,
sentence1 by default); row i of the [N, E] float32 .npy file is line i's vector, blank lines
included (an empty sentence gets a vector too), so nothing is dropped. --workdir may also be
an export (`dsan_tf.load`). The file is read twice (count, then embed in batches into a
memory-mapped .npy), so memory stays bounded; a progress bar runs on stderr. With
--projector_dir, a sample of the vectors and their sentences go to TensorBoard's projector:
`tensorboard --logdir DIR`.
"""

import json
import os
import sys
import time
import warnings

import numpy as np
from absl import flags

import dsan_tf  # light: its names (dsan_tf.load, ...) load TensorFlow on first use
from dsan_tf.common import progress
from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS
# Sentences read per call of the model, which batches them itself
# (dsan_tf.data.preprocessor.PREDICTION_BATCH_SIZE): the progress line moves per chunk.
CHUNK = 4096


def define_flags():
    project_flags.define_finished_workdir_flag()
    flags.DEFINE_string("input", None, "A .txt file (a sentence per line) or .jsonl file.")
    project_flags.require_existing("input")
    flags.DEFINE_string("field", "sentence1", "The field of each .jsonl line to embed.")
    flags.DEFINE_string("output", None, "The .npy file to write ([N, E] float32).")
    project_flags.require_output_file("output")
    flags.DEFINE_boolean("trust_savedmodel", False, "Read an export that holds only a "
                         "SavedModel (no model.keras): its graph is a program that runs "
                         "as it loads, so give this only for a SavedModel you trust.")
    project_flags.refuse_onto_inputs("output", "input")
    flags.DEFINE_string("projector_dir", None, "Also write a TensorBoard projector view here.")
    flags.DEFINE_integer("projector_sample", 1000, "Sentences in the projector view (the "
                         "first N).", lower_bound=1)


def _nonempty(text, path, number):
    if not text.strip():
        raise program.UsageError(f"{path}:{number}: the sentence is empty; a sentence needs "
                                 "at least one word (the output has a vector per line).")
    return text


def sentences(path, field):
    """Yields each line's sentence; `UsageError` naming the file and line of a bad one."""
    jsonl = path.endswith(".jsonl")
    try:
        with open(path, encoding="utf-8") as stream:
            for number, line in enumerate(stream, start=1):
                if not jsonl:
                    yield _nonempty(line.rstrip("\n"), path, number)
                    continue
                try:
                    value = json.loads(line)[field] if line.strip() else ""
                except (json.JSONDecodeError, KeyError, TypeError) as error:
                    raise program.UsageError(f"{path}:{number}: expected a JSON object with "
                                             f"the field {field!r} ({error}).") from None
                if not isinstance(value, str):
                    raise program.UsageError(f"{path}:{number}: {field!r} is not a string.")
                yield _nonempty(value, path, number)
    except FileNotFoundError:
        raise program.UsageError(f"input file {path} does not exist.") from None
    except UnicodeDecodeError:
        raise program.UsageError(f"{path} is not valid UTF-8.") from None


def write_projector(directory, vectors, texts):
    """A TensorBoard projector view of `vectors` [N, E] labelled by `texts`."""
    from dsan_tf.common.frameworks import tf  # only for --projector_dir
    from tensorboard.plugins import projector

    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "metadata.tsv"), "w", encoding="utf-8") as stream:
        for text in texts:  # one label per line: tabs and newlines would split it
            stream.write((text.replace("\t", " ").replace("\n", " ") or "(empty)") + "\n")
    checkpoint = tf.train.Checkpoint(embedding=tf.Variable(vectors))
    checkpoint.save(os.path.join(directory, "embedding.ckpt"))
    config = projector.ProjectorConfig()
    embedding = config.embeddings.add()
    embedding.tensor_name = "embedding/.ATTRIBUTES/VARIABLE_VALUE"
    embedding.metadata_path = "metadata.tsv"
    projector.visualize_embeddings(directory, config)


@program.main(required={"workdir": program.TRAINED_MODEL, "input": "the sentences to embed",
                        "output": "the .npy file to write"})
def main(argv):
    count = sum(1 for _ in sentences(FLAGS.input, FLAGS.field))
    if not count:
        raise program.UsageError(f"{FLAGS.input} holds no sentences.")
    try:
        model = dsan_tf.load(FLAGS.workdir, trust_savedmodel=FLAGS.trust_savedmodel)
        width = model.encode(["."]).shape[1]  # any sentence: the width
    except ValueError as error:
        raise program.UsageError(f"--workdir={FLAGS.workdir}: {error}") from None
    vectors = np.lib.format.open_memmap(FLAGS.output, mode="w+", dtype="float32",
                                        shape=(count, width))
    sample, row, cut, started = [], 0, 0, time.perf_counter()

    def write(chunk):
        nonlocal row, cut
        vectors[row:row + len(chunk)], truncated = model.encode(chunk, return_truncated=True)
        row += len(chunk)
        cut += int(np.count_nonzero(truncated))
        shown.update(len(chunk))

    with progress.Progress("embed", count, "sentences") as shown, warnings.catch_warnings():
        warnings.simplefilter("ignore", dsan_tf.serving.TruncationWarning)  # summed up once, below
        chunk = []
        for text in sentences(FLAGS.input, FLAGS.field):
            chunk.append(text)
            if len(sample) < FLAGS.projector_sample:
                sample.append(text)
            if len(chunk) == CHUNK:
                write(chunk)
                chunk = []
        if chunk:
            write(chunk)
    vectors.flush()
    if cut:
        limit = model.max_length or "the model's maximum number of"
        print(f"warning: the model read only the first {limit} tokens of {cut:,} "
              f"of the {row:,} sentences.", file=sys.stderr)
    seconds = time.perf_counter() - started
    print(f"{row:,} sentences -> {FLAGS.output} [{row}, {width}] in {seconds:.1f} s "
          f"({row / seconds:,.0f} sentences/s)")
    if FLAGS.projector_dir:
        write_projector(FLAGS.projector_dir, np.asarray(vectors[:len(sample)]), sample)
        print(f"projector: tensorboard --logdir {FLAGS.projector_dir}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
