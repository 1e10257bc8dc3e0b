"""Token ids -> batches in NumPy, in a small fixed set of shapes, on any Keras backend.

A compiled training step (JAX, or `jit_compile` anywhere) is compiled once per batch
shape: XLA takes about 8 s for the 25k data's DSAN step on a 2-core CPU, so batches
padded to their own longest sentence (a new shape almost every step) spend the epoch
compiling. Here every batch is padded to a length of a short grid chosen from the data
(`length_grid`: the fewest padded tokens for that many lengths) and to the full batch
size (rows added to a partial batch repeat a real pair with sample weight 0, so losses
and metrics are those of the real pairs). The order is drawn by NumPy from the seed and
the pass number alone, so the batches are the same with or without TensorFlow (the GPU
machines have none) and `IdPairs` travel as a small `.npz` file (`dsan_tf.training.setting`).

Shape legend: N pairs, B batch, T1 premise tokens, T2 hypothesis tokens.
"""

import dataclasses

from dsan_tf.common.frameworks import keras
import numpy as np

from dsan_tf.common import progress
from dsan_tf.data.vocabulary import PAD_ID, UNK_ID

# Length buckets of the grouped orders (also dsan_tf.data.pipeline's, with TensorFlow);
# SNLI's median sentence is about 13 tokens.
DEFAULT_BUCKETS = (8, 10, 12, 14, 16, 18, 20, 24, 28, 32, 40, 48, 64, 96, 128, 192)
# Chunks of `--batching=sorted_chunks`: 50 batches of 64 is 3,200 pairs, enough that a batch
# spans one or two premise lengths.
SORT_CHUNK_BATCHES = 50
# Lengths per side of the grid (`length_grid`): at most 4 x 3 shapes per dataset.
PREMISE_LENGTHS = 4
HYPOTHESIS_LENGTHS = 3
ORDERS = ("plain", "sorted_chunks", "premise_buckets", "length_buckets", "in_order")


@dataclasses.dataclass
class EncodeReport:
    """What `NLIPreprocessor.encode` did to the text: unknown words and truncation are counted, never silent."""

    examples: int
    max_length: int | None
    truncated_premises: int = 0
    truncated_hypotheses: int = 0
    longest: int = 0
    tokens: int = 0
    unknown_tokens: int = 0

    @property
    def oov_rate(self):
        """The fraction of tokens mapped to the unknown word ([UNK])."""
        return self.unknown_tokens / max(self.tokens, 1)

    def to_dict(self):
        """The counts as numbers (JSON reports carry these, not the sentence)."""
        return {**dataclasses.asdict(self), "oov_rate": self.oov_rate}

    def counts(self):
        """`to_dict()` less `max_length`, which a run's configuration holds (config.json's
        "tokens" of a split)."""
        return {key: value for key, value in self.to_dict().items() if key != "max_length"}

    def summary(self):
        text = (f"{progress.pairs(self.examples)}, longest sentence {self.longest} tokens, "
                f"oov_rate {self.oov_rate:.2%} ({self.unknown_tokens:,} of {self.tokens:,} "
                "tokens unknown)")
        if self.truncated_premises or self.truncated_hypotheses:
            text += (f"; truncated to max_length={self.max_length}: "
                     f"{self.truncated_premises:,} premises, "
                     f"{self.truncated_hypotheses:,} hypotheses")
        return text


@dataclasses.dataclass
class IdPairs:
    """Token ids of N sentence pairs, without padding: each side's ids concatenated
    (int32 [sum of lengths]) with its lengths (int32 [N]), and labels int32 [N]."""

    premise: np.ndarray
    premise_lengths: np.ndarray
    hypothesis: np.ndarray
    hypothesis_lengths: np.ndarray
    labels: np.ndarray

    def __post_init__(self):
        for side in ("premise", "hypothesis"):
            lengths = getattr(self, f"{side}_lengths")
            if int(lengths.sum()) != len(getattr(self, side)) or len(lengths) != len(self):
                raise ValueError(f"IdPairs: the {side} lengths do not add up to its ids.")
        self._starts = {side: np.concatenate([[0], np.cumsum(getattr(self, f"{side}_lengths"))])
                        for side in ("premise", "hypothesis")}

    def __len__(self):
        return len(self.labels)

    def report(self):
        """The `EncodeReport` of these ids: unknown words and lengths (what truncated them,
        if anything, the ids do not keep)."""
        lengths = np.concatenate([self.premise_lengths, self.hypothesis_lengths])
        unknown = int(np.sum(self.premise == UNK_ID) + np.sum(self.hypothesis == UNK_ID))
        return EncodeReport(examples=len(self), max_length=None,
                            longest=int(lengths.max(initial=0)), tokens=int(lengths.sum()),
                            unknown_tokens=unknown)

    @classmethod
    def from_lists(cls, premises, hypotheses, labels):
        """From lists of id sequences (one per pair) and labels."""
        def flat(rows):
            lengths = np.array([len(row) for row in rows], "int32")
            ids = np.concatenate([np.asarray(row, "int32") for row in rows]) if rows else \
                np.zeros(0, "int32")
            return ids.astype("int32"), lengths
        premise, premise_lengths = flat(list(premises))
        hypothesis, hypothesis_lengths = flat(list(hypotheses))
        return cls(premise, premise_lengths, hypothesis, hypothesis_lengths,
                   np.asarray(labels, "int32"))

    @classmethod
    def from_encoded(cls, pairs):
        """From `EncodedPairs` (RaggedTensors; TensorFlow is loaded already)."""
        def flat(ragged):
            return (ragged.flat_values.numpy().astype("int32"),
                    ragged.row_lengths().numpy().astype("int32"))
        return cls(*flat(pairs.premise), *flat(pairs.hypothesis),
                   np.asarray(pairs.labels, "int32"))

    @classmethod
    def like_profile(cls, profile, count, seed=0, vocab_size=200):
        """`count` pairs of random ids (2..vocab_size-1) whose (premise, hypothesis)
        lengths follow a length profile (`benchmarks.benchmark.length_profile`, e.g.
        records/runs/snli25k_lengths.json): a cell drawn by its frequency, each length
        uniform within its bucket. For timing real length distributions without the text."""
        bounds = [0, *profile["buckets"], profile["max_length"]]
        cells = np.array(profile["cells"])
        rng = np.random.default_rng(seed)
        chosen = cells[rng.choice(len(cells), count, p=cells[:, 2] / cells[:, 2].sum())]
        lower = {upper: bounds[bounds.index(upper) - 1] + 1 for upper in bounds[1:]}
        draw = lambda uppers: [rng.integers(2, vocab_size, rng.integers(lower[u], u + 1))  # noqa: E731
                               for u in uppers]
        return cls.from_lists(draw(chosen[:, 0]), draw(chosen[:, 1]),
                              rng.integers(0, 3, count))

    def padded(self, side, indices, width):
        """int32 [len(indices), width]: the rows' ids, padded with PAD_ID."""
        lengths = getattr(self, f"{side}_lengths")[indices]
        starts = self._starts[side][indices]
        columns = np.arange(width)
        inside = columns[None, :] < lengths[:, None]
        ids = getattr(self, side)
        positions = np.where(inside, starts[:, None] + columns[None, :], 0)
        return np.where(inside, ids[positions] if len(ids) else 0, PAD_ID).astype("int32")


def batch_order(pairs, batch_size, order, rng=None, buckets=DEFAULT_BUCKETS,
                chunk_batches=SORT_CHUNK_BATCHES):
    """One pass over `pairs` as a list of index arrays, one per batch (the last of a group
    may be partial). `order` is one of `ORDERS`: "plain" shuffled batches; "sorted_chunks"
    shuffled pairs cut into chunks of `chunk_batches` batches, each sorted (stably) by
    premise length, the batches then shuffled; "premise_buckets" / "length_buckets" pairs
    grouped by the premise's (and the hypothesis's) length bucket, batches shuffled;
    "in_order" the pairs as they are. `rng` (a NumPy Generator) shuffles; None: no
    shuffling (grouped orders then go by bucket)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}.")
    count = len(pairs)
    indices = rng.permutation(count) if rng is not None and order != "in_order" else \
        np.arange(count)
    split = lambda ids: [ids[i:i + batch_size] for i in range(0, len(ids), batch_size)]  # noqa: E731
    if order in ("plain", "in_order"):
        return split(indices)
    if order == "sorted_chunks":
        span = batch_size * chunk_batches
        batches = []
        for start in range(0, count, span):
            chunk = indices[start:start + span]
            chunk = chunk[np.argsort(pairs.premise_lengths[chunk], kind="stable")]
            batches.extend(split(chunk))
    else:
        key = np.searchsorted(buckets, pairs.premise_lengths[indices], side="right") * \
            (len(buckets) + 1)
        if order == "length_buckets":
            key = key + np.searchsorted(buckets, pairs.hypothesis_lengths[indices],
                                        side="right")
        grouped = indices[np.argsort(key, kind="stable")]
        bounds = np.flatnonzero(np.diff(np.sort(key, kind="stable"))) + 1
        batches = [batch for group in np.split(grouped, bounds) for batch in split(group)]
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def length_grid(maxima, count, longest):
    """At most `count` lengths, the last one `longest`, that pad batches whose longest
    sentences are `maxima` (int [batches]) with the fewest tokens: each batch is padded to
    the smallest grid length >= its longest sentence (dynamic programming over the
    distinct maxima, exact)."""
    values, weights = np.unique(np.minimum(np.asarray(maxima), longest), return_counts=True)
    if not len(values) or values[-1] != longest:
        values, weights = np.append(values, longest), np.append(weights, 0)
    size = len(values)
    # cost[i][j]: padding of the batches with maxima values[i..j] padded to values[j].
    cum_w = np.concatenate([[0], np.cumsum(weights)])
    cum_vw = np.concatenate([[0], np.cumsum(values * weights)])
    cost = lambda i, j: values[j] * (cum_w[j + 1] - cum_w[i]) - (cum_vw[j + 1] - cum_vw[i])  # noqa: E731
    best = np.full((count + 1, size), np.inf)
    choice = np.zeros((count + 1, size), int)
    best[1] = [cost(0, j) for j in range(size)]
    for k in range(2, count + 1):
        for j in range(size):
            options = [best[k - 1][i] + cost(i + 1, j) for i in range(j)]
            if options:
                choice[k][j] = int(np.argmin(options))
                best[k][j] = options[choice[k][j]]
            else:
                best[k][j] = best[1][j]
                choice[k][j] = -1
    k = int(np.argmin(best[1:, size - 1])) + 1
    grid, j = [], size - 1
    while j >= 0 and k >= 1:
        grid.append(int(values[j]))
        j, k = (choice[k][j] if k > 1 else -1), k - 1
    return tuple(sorted(set(grid)))


def pad_to(grid, length):
    """The smallest length of `grid` >= `length` (`length` itself past the grid's end)."""
    index = np.searchsorted(grid, length)
    return int(grid[index]) if index < len(grid) else int(length)


@dataclasses.dataclass(frozen=True)
class Shapes:
    """How batches are padded: to a grid of lengths per side (`premise_grid` x
    `hypothesis_grid`), or to the cheapest of a few `cells` (T1, T2) that holds the batch,
    and to `batch_size` rows (bounded); or to each batch's longest sentence and its own
    size (no grids, no cells). `chosen` records how the shapes were chosen (a dict)."""

    premise_grid: tuple | None = None
    hypothesis_grid: tuple | None = None
    batch_size: int | None = None
    cells: tuple | None = None
    chosen: dict | None = dataclasses.field(default=None, compare=False, hash=False)

    @property
    def bounded(self):
        return self.premise_grid is not None or self.cells is not None

    def widths(self, premise, hypothesis):
        """(T1, T2) of a batch whose longest sentences are `premise`, `hypothesis`."""
        if self.cells:
            for cell in self.cells:  # cheapest first
                if cell[0] >= premise and cell[1] >= hypothesis:
                    return cell
            return (max(premise, self.cells[-1][0]), max(hypothesis, self.cells[-1][1]))
        return tuple(pad_to(grid, length) if grid else length for grid, length in
                     ((self.premise_grid, premise), (self.hypothesis_grid, hypothesis)))

    @property
    def count(self):
        """How many (T1, T2) shapes a batch can take; None when unbounded."""
        if self.cells:
            return len(self.cells)
        if self.premise_grid is None:
            return None
        return len(self.premise_grid) * len(self.hypothesis_grid)

    def extended_to(self, pairs):
        """These shapes, the largest grown to hold `pairs`' longest sentences (dev or test
        batched in the training shapes: one compiled step per shape for every split)."""
        if not self.bounded or not len(pairs):
            return self
        longest = (max(int(pairs.premise_lengths.max()), 1),
                   max(int(pairs.hypothesis_lengths.max()), 1))
        if self.cells:
            top = self.cells[-1]
            grown = (max(top[0], longest[0]), max(top[1], longest[1]))
            return dataclasses.replace(self, cells=(*self.cells[:-1], grown))
        grids = [grid[:-1] + (max(grid[-1], length),) for grid, length in
                 ((self.premise_grid, longest[0]), (self.hypothesis_grid, longest[1]))]
        return dataclasses.replace(self, premise_grid=grids[0], hypothesis_grid=grids[1])

    def describe(self):
        """The shapes in words: "lengths 12/20/32/64 x 10/16/48" or "16x12, 96x48"."""
        if self.cells:
            return ", ".join(f"{p}x{h}" for p, h in self.cells)
        if self.premise_grid is None:
            return "each batch's longest sentence"
        return (f"lengths {'/'.join(map(str, self.premise_grid))} x "
                f"{'/'.join(map(str, self.hypothesis_grid))}")

    @classmethod
    def fit(cls, pairs, batch_size, order, seed=0, premise_lengths=PREMISE_LENGTHS,
            hypothesis_lengths=HYPOTHESIS_LENGTHS, max_length=None):
        """Grids chosen for `pairs` batched in `order` (`batch_order`, one seeded pass),
        topped by the longest sentence of each side (or `max_length` when it is shorter):
        the fewest padded tokens for that many lengths."""
        batches = batch_order(pairs, batch_size, order, np.random.default_rng(seed))
        return cls._fitted(pairs, batches, batch_size, premise_lengths, hypothesis_lengths,
                           max_length)

    @classmethod
    def _fitted(cls, pairs, batches, batch_size, premise_lengths=PREMISE_LENGTHS,
                hypothesis_lengths=HYPOTHESIS_LENGTHS, max_length=None):
        """`fit`'s grids for the pass `batches` (index arrays) of `pairs`."""
        from dsan_tf.data.costs import batch_maxima  # NumPy only

        grids = []
        for side, count in (("premise", premise_lengths), ("hypothesis", hypothesis_lengths)):
            lengths = getattr(pairs, f"{side}_lengths")
            longest = max(int(lengths.max()) if len(lengths) else 1, 1)
            grids.append(length_grid(batch_maxima(lengths, batches), count,
                                     min(longest, max_length or longest)))
        return cls(*grids, batch_size)

    @classmethod
    def fit_shared(cls, pairs, batch_size, order, seed=0, max_length=None):
        """One grid of lengths for both sides, for a model that compiles a program per
        sentence length (`dsan_tf.speed.sentence_programs`): the fewest lengths whose grid
        pads no more tokens than `fit`'s two grids, which would take their 4 + 3 lengths.
        `chosen` records it: {"by": "shared_lengths", "lengths", "padding", "grids":
        {"lengths", "padding"} of `fit`'s}."""
        from dsan_tf.data.costs import batch_maxima  # NumPy only

        batches = batch_order(pairs, batch_size, order, np.random.default_rng(seed))
        two = cls._fitted(pairs, batches, batch_size, max_length=max_length)
        maxima = [np.minimum(batch_maxima(getattr(pairs, f"{side}_lengths"), batches),
                             max_length or np.inf).astype("int64")
                  for side in ("premise", "hypothesis")]
        real = sum(int(getattr(pairs, f"{side}_lengths").sum())
                   for side in ("premise", "hypothesis"))

        def padding(premise_grid, hypothesis_grid):
            tokens = sum(int(np.sum(np.asarray(grid)[np.searchsorted(grid, side)]))
                         for grid, side in ((premise_grid, maxima[0]),
                                            (hypothesis_grid, maxima[1])))
            return 1 - real / max(tokens * batch_size, 1)

        limit = padding(two.premise_grid, two.hypothesis_grid)
        count = len(set(two.premise_grid) | set(two.hypothesis_grid))
        longest = max(two.premise_grid[-1], two.hypothesis_grid[-1])
        for lengths in range(1, count + 1):
            grid = length_grid(np.concatenate(maxima), lengths, longest)
            if padding(grid, grid) <= limit + 1e-12:
                break
        chosen = {"by": "shared_lengths", "lengths": len(grid),
                  "padding": round(padding(grid, grid), 4),
                  "grids": {"lengths": count, "padding": round(limit, 4)}}
        return cls(grid, grid, batch_size, chosen=chosen)

    @classmethod
    def choose(cls, pairs, batch_size, order, step_costs, passes, seed=0, max_length=None,
               embedding_dim=None, most=3, one_pass=False):
        """The shapes that cost least over a run on a device (`dsan_tf.data.costs`): the
        padding grid of `fit` or 1 to `most` cells, whichever compiles plus steps in fewer
        seconds over `passes` passes of `pairs` (epochs x steps an epoch / steps a pass).
        `one_pass`: the encoder reads both sides as one batch padded to the longer, which
        sets a shape's cost (`costs.choose_cells`); the padding is then of what it reads.
        `chosen` records the choice, the costs, `one_pass` and both predictions."""
        from dsan_tf.data import costs  # NumPy only

        batches = batch_order(pairs, batch_size, order, np.random.default_rng(seed))
        grid = cls._fitted(pairs, batches, batch_size, max_length=max_length)
        maxima = np.stack([np.minimum(costs.batch_maxima(getattr(pairs, f"{side}_lengths"),
                                                         batches), max_length or np.inf)
                           for side in ("premise", "hypothesis")], 1).astype("int64")
        distinct, counts = np.unique(maxima, axis=0, return_counts=True)
        grid_cells = sorted({grid.widths(int(p), int(h)) for p, h in distinct},
                            key=lambda cell: (sum(cell), cell))
        grid_seconds, _, grid_tokens = costs.run_seconds(
            grid_cells, distinct, counts, step_costs, passes, batch_size, embedding_dim,
            one_pass)
        cell_seconds, cells, cell_tokens = costs.choose_cells(
            distinct, counts, step_costs, passes, batch_size, embedding_dim, most,
            one_pass=one_pass)
        real = float(sum(int(getattr(pairs, f"{side}_lengths").sum())
                         for side in ("premise", "hypothesis")))
        chosen = {"costs": step_costs.to_dict(), "passes": round(float(passes), 3),
                  "one_pass": bool(one_pass),
                  "padding_grid": {"shapes": len(grid_cells), "seconds": round(grid_seconds, 1),
                                   "padding": round(1 - real / (grid_tokens * batch_size), 4)},
                  "cells": {"shapes": len(cells), "seconds": round(cell_seconds, 1),
                            "padding": round(1 - real / (cell_tokens * batch_size), 4)}}
        if grid_seconds <= cell_seconds:
            return dataclasses.replace(grid, chosen={**chosen, "by": "padding_grid"})
        cells = tuple(sorted(cells, key=lambda cell: (sum(cell), cell)))
        return cls(batch_size=batch_size, cells=cells, chosen={**chosen, "by": "cells"})


@dataclasses.dataclass(frozen=True)
class _Skip:
    """A skip step in `NLIBatches`' runs: the batch of `indices`, weighted 0."""

    indices: np.ndarray


class NLIBatches(keras.utils.PyDataset):
    """Batches of `IdPairs` for `fit`, `evaluate` and `predict` on any Keras backend:
    `({"premise": int32 [B, T1], "hypothesis": int32 [B, T2]}, labels int32 [B],
    sample weights float32 [B])`, the weights 0 on rows that fill a partial batch.

    Each epoch is `steps` batches (None: one pass) taken from passes over the data drawn
    one after another, pass k shuffled by `numpy.random.default_rng([seed, k])`; each epoch
    starts a new pass (like a repeated `tf.data` pipeline taken N steps at a time).

    Args:
        pairs: `IdPairs`.
        batch_size: B.
        order: one of `ORDERS` (`batch_order`).
        shapes: `Shapes`; None: `Shapes.fit(pairs, batch_size, order, seed)` (bounded).
        shuffle: draw a new order every pass (else the order of `batch_order` unshuffled).
        seed: int.
        steps: batches per epoch; None: one whole pass.
        run_length: K > 1 (bounded shapes): the epoch's batches in runs of K of one shape,
            for K steps run as one program (`dsan_tf.speed.multi_step`). Each shape's
            batches keep their order; a run goes where its last batch was; a shape's last
            run starts with skip steps (its first batch again, weights all 0: no update);
            runs of skip steps fill every epoch to one length, K x floor((N + S(K - 1)) / K)
            for N batches and S shapes, so that Keras sees the same count each epoch.
    """

    def __init__(self, pairs, batch_size=64, order="sorted_chunks", shapes=None, shuffle=True,
                 seed=0, steps=None, run_length=1):
        super().__init__()
        self.pairs, self.batch_size, self.order = pairs, batch_size, order
        self.shapes = shapes if shapes is not None else Shapes.fit(pairs, batch_size, order,
                                                                   seed)
        self.shuffle, self.seed, self.steps = shuffle, seed, steps
        self.run_length = run_length if self.shapes.bounded else 1
        self._pass = 0  # the next pass to draw
        self._epoch = None

    def plan(self, pass_index):
        """The batches (index arrays) of pass `pass_index`."""
        rng = np.random.default_rng([self.seed, pass_index]) if self.shuffle else None
        return batch_order(self.pairs, self.batch_size, self.order, rng)

    def _epoch_batches(self):
        if self._epoch is None:
            batches = self.plan(self._pass)
            self._pass += 1
            while self.steps and len(batches) < self.steps:
                batches += self.plan(self._pass)
                self._pass += 1
            batches = batches[:self.steps] if self.steps else batches
            self._epoch = self._runs(batches) if self.run_length > 1 else batches
        return self._epoch

    def _runs(self, batches):
        """`batches` in runs of `run_length` of one shape, filled with skip steps to the
        epoch's fixed length (see the class)."""
        length, pending, runs = self.run_length, {}, []
        for indices in batches:
            shape = self._widths(indices)
            pending.setdefault(shape, []).append(indices)
            if len(pending[shape]) == length:
                runs.append(pending.pop(shape))
        for rest in pending.values():  # skip steps first: a run ends on a real step
            runs.append([_Skip(rest[0])] * (length - len(rest)) + rest)
        result = [indices for run in runs for indices in run]
        fill = self._run_epoch_length(len(batches)) - len(result)
        return result + [_Skip(batches[0])] * fill

    def _run_epoch_length(self, batches):
        length = self.run_length
        return length * ((batches + self.shapes.count * (length - 1)) // length)

    @property
    def skipped_steps(self):
        """The skip steps of this epoch's runs (0 without runs)."""
        return sum(isinstance(indices, _Skip) for indices in self._epoch_batches())

    @property
    def num_batches(self):
        count = self.steps or (len(self.plan(0)) if self._epoch is None
                               else sum(not isinstance(i, _Skip) for i in self._epoch))
        return self._run_epoch_length(count) if self.run_length > 1 else count

    def __len__(self):
        return self.num_batches

    def on_epoch_end(self):
        self._epoch = None

    def start_at_pass(self, pass_index):
        """Draw the next epoch from pass `pass_index` (a resumed run continues its order)."""
        self._pass, self._epoch = pass_index, None

    def skip_epochs(self, epochs):
        """Draw the next epoch as epoch `epochs` + 1 of a run from the start would be: a
        resumed or extended run continues the order it would have had."""
        for _ in range(epochs):
            self._epoch = None
            self._epoch_batches()
        self._epoch = None

    def batch(self, indices):
        """The padded batch of the pairs `indices` (see the class); a skip step's batch
        has weights all 0."""
        if isinstance(indices, _Skip):
            inputs, labels, weights = self.batch(indices.indices)
            return inputs, labels, np.zeros_like(weights)
        shapes = self.shapes
        real = len(indices)
        if shapes.bounded and shapes.batch_size and real < shapes.batch_size:
            # Fill with the batch's first pair, weighted 0: real values, no effect.
            indices = np.concatenate([indices, np.repeat(indices[:1], shapes.batch_size - real)])
        widths = self._widths(indices)
        inputs = {"premise": self.pairs.padded("premise", indices, widths[0]),
                  "hypothesis": self.pairs.padded("hypothesis", indices, widths[1])}
        weights = np.zeros(len(indices), "float32")
        weights[:real] = 1.0
        return inputs, self.pairs.labels[indices], weights

    def _widths(self, indices):
        """(T1, T2) of the batch of the pairs `indices`."""
        return self.shapes.widths(*(max(int(getattr(self.pairs, f"{side}_lengths")[
            indices].max()), 1) for side in ("premise", "hypothesis")))

    def __getitem__(self, index):
        return self.batch(self._epoch_batches()[index])

    @staticmethod
    def shape_of(batch):
        """(B, T1, T2) of a batch."""
        inputs, _, weights = batch
        return (len(weights), *(inputs[side].shape[1] for side in ("premise", "hypothesis")))

    def first_of_each_shape(self):
        """{(B, T1, T2): the first batch of that shape} in pass 0's order."""
        chosen = {}
        for indices in self.plan(0):
            batch = self.batch(indices)
            chosen.setdefault(self.shape_of(batch), batch)
        return chosen

    def describe(self):
        """(padding fraction, {(B, T1, T2): batches}) of one pass (pass 0's order): the
        share of token slots that hold padding (fill rows included) and the shapes."""
        shapes, padded, real = {}, 0, 0
        for indices in self.plan(0):
            batch = self.batch(indices)
            inputs, _, weights = batch
            key = self.shape_of(batch)
            shapes[key] = shapes.get(key, 0) + 1
            padded += sum(ids.size for ids in inputs.values())
            real += sum(int(np.count_nonzero(ids[weights > 0])) for ids in inputs.values())
        return 1.0 - real / max(padded, 1), shapes

    def summary(self, description=None):
        """A log line: padding, the number of distinct shapes, the grids (`description`:
        what `describe` gave, when it was asked already)."""
        padding, shapes = description or self.describe()
        text = f"{padding:.1%} padding, {len(shapes)} batch shape(s) per epoch"
        if self.shapes.bounded:
            text += f" ({self.shapes.describe()}, {self.shapes.batch_size} rows)"
        return text
