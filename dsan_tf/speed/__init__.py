"""What makes the models fast, apart from the models (Keras only; JAX where it is the
backend). The models compute what the papers say, one forward path per layer; this package
makes their steps cheaper to compile and to run without changing what they compute.
`TextModel.compile` calls `steps.attach`, which fills the compiled model's Keras
step-function slots; it imports no model module:

- `steps`: `attach`, and which of the steps below a model gets;
- `sentence_programs`: a sentence-pair model's steps as programs per sentence length (JAX
  on a CPU, by default: fewer programs to compile);
- `multi_step`: K training steps of one shape as one program (JAX, `steps_per_execution`
  K > 1: one dispatch per K steps on a GPU);
- `compilation`: every step compiled before the first epoch, and JAX's persistent cache.

The private Keras functions they call are reached through `dsan_tf.common.keras_private`.

Each stays only while a recorded measurement shows it helping (records/performance.md has
the figures, docs/PERFORMANCE.md the commands that measure them).
"""
