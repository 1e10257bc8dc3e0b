"""Schedules defined per epoch, carried to another data size (docs/TRAINING.md, "Schedules"): an epoch
of `--schedule_epoch_pairs` pairs, the cosine cycles and weight decay that count it, and
early stopping that never cuts a cycle short."""

import csv
import math

import keras
import numpy as np
import pytest

from helpers import cli, ok

from dsan_tf.core.config import TrainingConfig
from dsan_tf.core.optimization import make_optimizer

pytestmark = pytest.mark.tensorflow  # the training program reads its data with tf.data

# The Gaussian Transformer's AdamWR (`--config=gaussian_transformer_snli`).
ADAMWR = dict(optimizer="adamw", learning_rate=3e-4, min_learning_rate=4e-5,
              restart_epochs=10, normalized_weight_decay=1 / 600)
STUDY_PAIRS, SNLI_PAIRS, BATCH = 25_299, 549_367, 64


def rate_at(optimizer, step):
    """The learning rate the optimizer uses at `step` (what history.csv records)."""
    optimizer.iterations.assign(step)
    return float(keras.ops.convert_to_numpy(optimizer.learning_rate))


@pytest.mark.parametrize("epoch_pairs, cycle_steps, decay_pairs", [
    (0, 10 * 396, STUDY_PAIRS),            # by epochs: a cycle is 10 passes over 25k pairs
    (SNLI_PAIRS, 10 * 8584, SNLI_PAIRS)])  # by examples: 10 epochs of full SNLI
def test_adamwr_cycle_and_decay_count_the_schedule_epoch(epoch_pairs, cycle_steps, decay_pairs):
    """The learning rate falls from the top to the floor over T epochs of the schedule and
    restarts at the top; the normalized weight decay λ·sqrt(b / (B·T)) counts B as the
    schedule epoch's pairs (Loshchilov & Hutter 2017)."""
    training = TrainingConfig(schedule_epoch_pairs=epoch_pairs, **ADAMWR)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    optimizer = make_optimizer(training, BATCH, model, train_size=STUDY_PAIRS)
    assert rate_at(optimizer, 0) == pytest.approx(3e-4)
    assert rate_at(optimizer, cycle_steps // 2) == pytest.approx((3e-4 + 4e-5) / 2, rel=1e-3)
    assert rate_at(optimizer, cycle_steps - 1) == pytest.approx(4e-5, rel=1e-3)
    assert rate_at(optimizer, cycle_steps) == pytest.approx(3e-4)  # the restart
    decay = (1 / 600) * math.sqrt(BATCH / (decay_pairs * 10)) / 3e-4
    assert optimizer.weight_decay == pytest.approx(decay)


def test_schedule_epoch_pairs_and_steps_per_epoch_are_not_both_given():
    with pytest.raises(ValueError, match="not both"):
        TrainingConfig(schedule_epoch_pairs=1000, steps_per_epoch=5)
    assert TrainingConfig(schedule_epoch_pairs=1000).epoch_steps(64, 25_299) == 16
    assert TrainingConfig(steps_per_epoch=5).epoch_steps(64, 25_299) == 5
    assert TrainingConfig().epoch_steps(64, 25_299) == 396


def history(workdir):
    with open(workdir / "history.csv", newline="") as stream:
        return list(csv.DictReader(stream))


def test_epochs_of_n_pairs_and_early_stopping_only_at_cycle_ends(tmp_path):
    """The demo (672 training pairs) with epochs of 320 pairs (10 steps of 32) and cosine
    cycles of 2 epochs: history.csv counts 10 steps an epoch, the learning rate is at the
    cycle's middle after odd epochs and back at the top after even ones, and patience 1
    stops the run only after an even epoch. Trained as CBOW: the schedule is the program's,
    and CBOW's step traces in a fifth of DSAN's time (25 s to 11 s)."""
    workdir = tmp_path / "run"
    output = ok(cli("train", "--config=demo", "--model=cbow",
                    "--epochs=12", "--schedule_epoch_pairs=320", "--restart_epochs=2",
                    "--min_learning_rate=1e-4", "--patience=1", f"--workdir={workdir}"))
    rows = history(workdir)
    assert [int(r["steps"]) for r in rows] == [10 * (i + 1) for i in range(len(rows))]
    rates = np.array([float(r["learning_rate"]) for r in rows])
    np.testing.assert_allclose(rates[0::2], (3e-3 + 1e-4) / 2, rtol=1e-4)
    np.testing.assert_allclose(rates[1::2], 3e-3, rtol=1e-4)
    accuracy = [float(r["val_accuracy"]) for r in rows]
    best = int(np.argmax(accuracy))  # the first epoch of the best dev accuracy
    assert len(rows) < 12, "the demo's dev accuracy stops improving well before 12 epochs"
    assert len(rows) % 2 == 0 and len(rows) - 1 - best >= 1
    # Keras' rule would have stopped at the first epoch without a gain: never before.
    assert len(rows) - 1 - best <= 2
    assert f"early stop after epoch {len(rows)}" in output


def test_adamw_leaves_the_distance_priors_weights_undecayed():
    """Decay would pull a prior's w towards its floor and flatten it: the optimizer decays
    every trainable weight but those of the `DistancePrior` layers."""
    import dsan_tf

    config = dsan_tf.model_config("dsan", vocab_size=20, embedding_dim=8, num_heads=2,
                                  ffn_dim=8, classifier_units=8, distance_prior="learned")
    model = dsan_tf.build_model("dsan", config)
    ids = np.ones((2, 5), "int32")
    model({"premise": ids, "hypothesis": ids})
    optimizer = make_optimizer(TrainingConfig(optimizer="adamw", normalized_weight_decay=0.1,
                                              restart_epochs=1), 2, model, train_size=8)
    prior = [w for w in model.trainable_weights if "distance_prior" in w.path]
    assert len(prior) == 2  # the forward and backward blocks' learned biases
    assert not any(optimizer._use_weight_decay(weight) for weight in prior)
    others = [w for w in model.trainable_weights if "distance_prior" not in w.path]
    assert others and all(optimizer._use_weight_decay(weight) for weight in others)


def test_halving_on_a_dev_drop_halves_the_rate_only_after_a_drop(capsys):
    """AF-DMN's Section 5.2: the learning rate is halved after an epoch whose dev accuracy
    is below the previous epoch's, and only then (a rise or a tie keeps it); a resumed
    run's first epoch is compared with its last committed one."""
    import keras

    from dsan_tf.training.callbacks import HalveOnDevDrop

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(2e-4), loss="mse")
    resumed = type("RunState", (), {"rows": [{"epoch": 1, "val_accuracy": 0.52}]})()
    halve = HalveOnDevDrop(resumed)
    halve.set_model(model)
    halve.on_train_begin()  # a resumed run compares with its last committed epoch
    rates = []
    for epoch, accuracy in enumerate([0.50, 0.60, 0.55, 0.58, 0.58, 0.40]):
        halve.on_epoch_end(epoch, {"val_accuracy": accuracy})
        rates.append(float(model.optimizer.learning_rate.numpy()))
    assert rates == pytest.approx([1e-4, 1e-4, 5e-5, 5e-5, 5e-5, 2.5e-5])
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["dev accuracy fell (0.5200 -> 0.5000): learning rate halved to 0.0001",
                       "dev accuracy fell (0.6000 -> 0.5500): learning rate halved to 5e-05",
                       "dev accuracy fell (0.5800 -> 0.4000): learning rate halved to 2.5e-05"]


@pytest.mark.parametrize("patience, cycle_epochs, stopped", [(2, None, 5), (1, None, 4),
                                                             (2, 2, 6), (1, 4, 4)])
def test_early_stopping_stops_after_patience_epochs_without_a_gain(patience, cycle_epochs,
                                                                   stopped, capsys):
    """Dev accuracy improves until epoch 3 and never after: patience P stops after epoch
    3 + P (Keras' rule), or at the first cycle end from then on."""
    import types

    from dsan_tf.training.callbacks import EarlyStopping

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.stop_training = False  # as fit sets it
    best = types.SimpleNamespace(best_epoch=0, best=0.0)
    stop = EarlyStopping(patience, cycle_epochs, best)
    stop.set_model(model)
    for epoch, accuracy in enumerate([0.5, 0.6, 0.7, 0.65, 0.69, 0.6, 0.6, 0.6]):
        if accuracy > best.best:  # what KeepBest, before it, records
            best.best, best.best_epoch = accuracy, epoch + 1
        stop.on_epoch_end(epoch, {"val_accuracy": accuracy})
        if model.stop_training:
            break
    assert stop.stopped_epoch == stopped
    assert capsys.readouterr().out.strip() == (
        f"early stop after epoch {stopped}: dev accuracy last improved at epoch 3 (0.7000)")
