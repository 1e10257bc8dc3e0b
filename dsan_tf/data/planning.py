"""How a run's batches are shaped: one planner (`BatchPlan`), one named strategy per run.

A compiled step (JAX, or `jit_compile` anywhere) is compiled once per batch shape, so
where the step is compiled the batches come in a few shapes chosen for the data; where it
is not, each batch is padded to its own longest sentence. The strategies:

- "longest": each batch padded to its longest sentence (`tf.data` for `EncodedPairs`,
  `NLIBatches` for `IdPairs`): an uncompiled step, TensorFlow's default.
- "grid": `NLIBatches` padded to a grid of lengths per side fitted to the data, the
  fewest padded tokens for 4 x 3 lengths (`--shape_costs=padding`).
- "priced": `NLIBatches` in the shapes that cost least in compiles plus steps over the
  run on this device (`--shape_costs=device` or a file of measurements:
  `dsan_tf.data.costs`); the padding grid where that costs least.
- "shared": `NLIBatches` padded to one grid of lengths for both sides, where the model
  compiles a program per sentence length (`--sentence_programs`).

Evaluation batches are grouped by length ("length_buckets") in the training shapes, grown
to hold a longer sentence, so every split runs in the shapes compiled for training.
"""

import dataclasses


from dsan_tf.data import batching, costs

STRATEGIES = ("longest", "grid", "priced", "shared")
# The strategies that batch in NumPy to a fixed set of shapes (`NLIBatches`).
BOUNDED = ("grid", "priced", "shared")


def strategy(bounded_shapes, shared_lengths=False, shape_costs="device"):
    """The strategy of a run's choices (`RunPolicy`, resolved): unbounded shapes
    ("longest"), then per-length programs ("shared"), then what `shape_costs` names
    ("grid" for "padding", else "priced")."""
    if not bounded_shapes:
        return "longest"
    if shared_lengths:
        return "shared"
    return "grid" if shape_costs == "padding" else "priced"


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    """The batches of a run: how they are ordered, shaped and counted.

    Attributes:
        strategy: one of `STRATEGIES`.
        batch_size: B.
        order: the training batches' order (`DataConfig.batching`, `batching.ORDERS`).
        shuffle, seed: a new seeded order every pass (else the data's).
        max_length: the longest sentence a grid reaches (None: the data's longest).
        epoch_steps: training batches an epoch, at most one pass (`steps_per_epoch`;
            None: one pass); with `repeat`, that many drawn from passes one after another
            (an epoch of N pairs: `schedule_epoch_pairs`).
        epochs: epochs of the run (the shapes of "priced" are priced over them).
        deterministic: `tf.data`'s element order fixed.
        run_length: K > 1: training batches in runs of K of one shape, for K steps run
            as one program (`dsan_tf.speed.multi_step`).
        one_pass: the encoder reads both sides as one batch padded to the longer, which
            sets a shape's cost ("priced").
        shape_costs: "device", "padding" or a file of measurements (`costs.step_costs`).
        embedding_dim: the model's d_e, which scales a step's cost ("priced").
        log: called with the line that says how the training shapes were chosen.
    """

    strategy: str
    batch_size: int
    order: str = "sorted_chunks"
    shuffle: bool = True
    seed: int = 0
    max_length: int | None = None
    epoch_steps: int | None = None
    repeat: bool = False
    epochs: int = 1
    deterministic: bool = True
    run_length: int = 1
    one_pass: bool = False
    shape_costs: str = "device"
    embedding_dim: int | None = None
    log: object = dataclasses.field(default=print, compare=False, repr=False)

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got "
                             f"{self.strategy!r}.")

    @property
    def bounded(self):
        """Whether the batches come in a fixed set of shapes (NumPy's `NLIBatches`)."""
        return self.strategy in BOUNDED

    def batches(self, pairs, training=False, in_order=False, shapes=None):
        """The batches of `pairs` (`EncodedPairs`, or `IdPairs` without TensorFlow): for
        training in `order`, shuffled and cut (or repeated) into epochs of `epoch_steps`;
        for evaluation grouped by length, or in the pairs' order (`in_order`). `shapes`:
        the training shapes, which evaluation batches take (grown where a sentence is
        longer). `NLIBatches` (triples with sample weights) where bounded or for
        `IdPairs`, else `tf.data` batches."""
        if self.bounded or isinstance(pairs, batching.IdPairs):
            return self._numpy(pairs, training, in_order, shapes)
        return self._tf_data(pairs, training, in_order)

    def _numpy(self, pairs, training, in_order, shapes):
        if not isinstance(pairs, batching.IdPairs):
            pairs = batching.IdPairs.from_encoded(pairs)
        if shapes is None and not self.bounded:
            shapes = batching.Shapes()
        if in_order or not training:
            order = "in_order" if in_order else "length_buckets"
            fit = (batching.Shapes.fit_shared if self.strategy == "shared"
                   else batching.Shapes.fit)
            shapes = shapes.extended_to(pairs) if shapes else fit(
                pairs, self.batch_size, order, max_length=self.max_length)
            return batching.NLIBatches(pairs, self.batch_size, order, shapes, shuffle=False)
        steps = self._steps(pairs)
        shapes = shapes or self.shapes(pairs)
        return batching.NLIBatches(pairs, self.batch_size, self.order, shapes,
                                   shuffle=self.shuffle, seed=self.seed, steps=steps,
                                   run_length=self.run_length)

    def _steps(self, pairs):
        """Training batches an epoch of `pairs`: `epoch_steps` (a cap at one pass unless
        `repeat`), or None: one pass."""
        if self.epoch_steps is None or self.repeat:
            return self.epoch_steps
        return min(self.epoch_steps, -(-len(pairs) // self.batch_size) or self.epoch_steps)

    def _tf_data(self, pairs, training, in_order):
        from dsan_tf import data  # TensorFlow: tf.data batches only

        common = dict(batch_size=self.batch_size, deterministic=self.deterministic)
        if in_order:
            return data.make_dataset(pairs, batch_size=self.batch_size, buckets=None)
        if not training:
            return data.make_dataset(pairs, **common)
        dataset = data.make_dataset(
            pairs, shuffle=self.shuffle, seed=self.seed,
            buckets=data.DEFAULT_BUCKETS if self.order.endswith("_buckets") else None,
            bucket_hypothesis=self.order != "premise_buckets",
            sort_chunks=batching.SORT_CHUNK_BATCHES if self.order == "sorted_chunks" else 0,
            **common)
        if self.repeat:
            # An epoch of N pairs: batches of the data reshuffled pass after pass (each
            # epoch, and each pass within one, draws a new order).
            return dataset.repeat().take(self.epoch_steps)
        return dataset.take(self.epoch_steps) if self.epoch_steps else dataset

    def shapes(self, pairs):
        """The training shapes of `pairs` (`IdPairs`) by the strategy: "shared" one grid
        for both sides (`Shapes.fit_shared`), "grid" the padding grid (`Shapes.fit`),
        "priced" what costs least over the run's epochs on this device
        (`Shapes.choose`); logs how they were chosen."""
        order, size = self.order, self.batch_size
        if self.strategy == "shared":
            shapes = batching.Shapes.fit_shared(pairs, size, order, self.seed, self.max_length)
            chosen = shapes.chosen
            self.log(f"batch shapes of {chosen['lengths']} sentence lengths for both sides "
                     f"(per-length programs): {shapes.describe()}, {chosen['padding']:.1%} "
                     f"padding; a grid per side: {chosen['grids']['lengths']} lengths, "
                     f"{chosen['grids']['padding']:.1%} padding"
                     + ("" if self.shape_costs == "device" else
                        f"; --shape_costs={self.shape_costs} not used: it prices whole "
                        "steps compiled per shape (--nosentence_programs uses it)"))
            return shapes
        step_costs = None if self.strategy == "grid" else costs.step_costs(self.shape_costs)
        if step_costs is None:
            return batching.Shapes.fit(pairs, size, order, self.seed,
                                       max_length=self.max_length)
        per_pass = -(-len(pairs) // size)
        passes = self.epochs * (self._steps(pairs) or per_pass) / max(per_pass, 1)
        shapes = batching.Shapes.choose(pairs, size, order, step_costs, passes, self.seed,
                                        self.max_length, self.embedding_dim,
                                        one_pass=self.one_pass)
        chosen = shapes.chosen
        self.log(f"batch shapes by {chosen['by'].replace('_', ' ')} ({step_costs.source}): "
                 f"{shapes.describe()}; predicted "
                 + ", ".join(f"{name.replace('_', ' ')} {v['shapes']} shape(s), "
                             f"{v['padding']:.1%} padding, {v['seconds']:.0f} s"
                             for name, v in (("padding_grid", chosen["padding_grid"]),
                                             ("cells", chosen["cells"])))
                 + f" over {self.epochs} epoch(s)")
        return shapes

    def skip_epochs(self, batches, epochs):
        """Advances the training `batches` (`batches(..., training=True)`) by `epochs`
        epochs, so that the next epoch draws the order that epoch `epochs` + 1 of a run
        from the start draws: a resumed or extended run continues its order. Returns
        what the caller keeps until `fit` has begun (None, or a `tf.data` iterator).

        `NLIBatches` draw an epoch from the seed and the pass alone. A `tf.data` shuffle
        draws its next seeds as its iterators fill their buffers, and which seeds depends
        on the iterators alive then: Keras' `fit` trains an epoch on one iterator, makes
        the next at the epoch's end while that one lives, and, with no `epoch_steps`,
        makes the next epoch's while that one lives. Each epoch skipped does the same,
        reading an element (an epoch of repeated passes, which may start passes anywhere,
        is read through: the data pipeline, no model); the last iterator must live until
        `fit` makes its own. `tests/test_training_library.py` compares resumed histories
        with runs from the start."""
        if isinstance(batches, batching.NLIBatches):
            batches.skip_epochs(epochs)
            return None
        held = None
        for _ in range(epochs):
            trained = iter(batches)
            held = None
            for _ in trained if self.repeat else [next(trained, None)]:
                pass
            held = iter(batches)
            del trained
        return held
