"""A sentence-pair model's steps as programs per sentence length, on JAX (the
CPU's compile-ahead goal; docs/PERFORMANCE.md, "The CPU's compile-ahead").

Keras compiles one program per batch shape [B, T1, T2], each holding the sentence encoder
twice and its gradient. But an `NLIClassifier` with a sentence-encoder backbone encodes
premise and hypothesis each on its own, so its training step is made here of programs
that each depend on one sentence length or none:

- per length T: the backbone's forward pass on [B, T] ids, keeping what its backward pass
  reads (`jax.vjp`); its backward pass; its inference pass;
- once: the head's loss and gradient (on u, v [B, E]), the optimizer's update with the
  metrics, and the head's evaluation and prediction.

Shapes that share a length share its programs, and one grid of lengths serves both sides
(`Shapes.fit_shared`): the study's 19 training shapes compile 5 lengths' programs, where
Keras compiled 12 whole steps (20 s of compile-ahead against 98-142 s). The step computes what
Keras' does, from the same state to the same state (dropout's seeds threaded premise,
hypothesis, head, as the model calls them); it costs a few dispatches more.

Where it applies (`applies`): JAX, a compiled step, no Keras distribution,
`steps_per_execution` 1 (several run as one scan instead: `multi_step`), a sentence-encoder
backbone called twice (not `one_pass`), no loss scaling, no regularizer, and every variable
the backbone's or the head's. Unset, it is on where the step runs on a CPU (`default`).
"""

from dsan_tf.common.frameworks import keras

from dsan_tf.common import keras_private


def default():
    """Whether per-length programs pay when the user did not say: on JAX on a CPU, where
    XLA's compile of each whole step (7-9 s at the study's configuration) costs more than the
    dispatches they add. On a GPU the step is bound by its dispatches."""
    if keras.backend.backend() != "jax":
        return False
    from dsan_tf.data.costs import device_platform

    return device_platform() == "cpu"


def _positions(model):
    """(backbone's, head's) positions in the model's trainable and non-trainable
    variables, or None when some variable is neither's."""
    backbone, head = model.backbone, model.head
    result = []
    for listed in ("trainable_variables", "non_trainable_variables"):
        where = {id(v): i for i, v in enumerate(getattr(model, listed))}
        parts = ([where.get(id(v)) for v in getattr(backbone, listed)],
                 [where.get(id(v)) for v in getattr(head, listed)])
        if None in parts[0] + parts[1] or sorted(parts[0] + parts[1]) != list(range(len(where))):
            return None
        result.append(parts)
    return result


def wanted(model):
    """Whether per-length programs are asked for and the compiled step allows them: its
    `sentence_programs` (None: `default()`), JAX, a compiled step, `steps_per_execution`
    1 and no Keras distribution. What the compile arguments decide, before the model is
    built (`applies` adds what the built model decides)."""
    asked = getattr(model, "sentence_programs", False)
    asked = default() if asked is None else asked
    return bool(asked and keras.backend.backend() == "jax" and model.jit_compile
                and not model.run_eagerly and model.steps_per_execution == 1
                and keras.distribution.distribution() is None)


def applies(model):
    """Whether `model`'s train, test and predict functions are made of per-length
    programs: `wanted`, and the built model's conditions above."""
    backbone = getattr(model, "backbone", None)
    return bool(
        wanted(model) and backbone is not None and not backbone.pair_input
        and not getattr(model, "one_pass", False) and getattr(model, "head", None) is not None
        and not isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
        and not _regularized(model) and _positions(model) is not None)


def _regularized(model):
    """Whether a weight or activity regularizer adds to the loss: the programs would
    differentiate the head's loss only (none of the library's models has one)."""
    return any(getattr(v, "regularizer", None) is not None for v in model.trainable_weights) \
        or any(getattr(layer, "activity_regularizer", None) is not None
               for layer in keras_private.flatten_layers(model))


class SentencePrograms:
    """The per-length programs of one compiled `NLIClassifier`, and Keras' three step
    functions made of them (`train_step`, `test_step`, `predict_step`: Keras' JAX
    trainer's signatures, state as lists of arrays in the model's variable order).

    `compiled[name]` is XLA's program of the method `name` (`PROGRAMS`): compiled per
    length of its ids (encode, inference, backward) or once (the others).

    Args:
        model: a compiled `NLIClassifier` for which `applies` holds.
    """

    PROGRAMS = ("encode", "backward", "inference", "head_gradient", "update", "evaluation",
                "prediction")

    def __init__(self, model):
        import jax  # the backend: loaded already

        self.model = model
        self._trainable, self._others = _positions(model)
        self._matching = model.get_layer("matching_features")
        self.compiled = {name: jax.jit(getattr(self, name)) for name in self.PROGRAMS}

    def encode(self, trainable, others, ids):
        """The backbone's training pass on ids [B, T]: (u [B, E], the backward pass's
        residuals, others after: dropout's seeds)."""
        import jax

        backbone = self.model.backbone
        return jax.vjp(lambda t: backbone.stateless_call(t, others, ids, training=True),
                       trainable, has_aux=True)

    @staticmethod
    def backward(vjp, cotangent):
        """The backbone's trainable variables' gradients, of u's cotangent [B, E]."""
        return vjp(cotangent)[0]

    def inference(self, trainable, others, ids):
        """u [B, E] of ids [B, T], no dropout."""
        return self.model.backbone.stateless_call(trainable, others, ids, training=False)[0]

    def _logits(self, head_trainable, head_others, u, v, training):
        return self.model.head.stateless_call(head_trainable, head_others,
                                              self._matching(u, v), training=training)

    def _loss(self, trainable, others, metrics, logits, y, sample_weight, training):
        # Keras' own loss (its trackers in `metrics`), on the model's whole state.
        loss, (_, _, metrics) = self.model.stateless_compute_loss(
            trainable, others, metrics, x=None, y=y, y_pred=logits,
            sample_weight=sample_weight, training=training)
        return loss, metrics

    def head_gradient(self, trainable, others, metrics, u, v, y, sample_weight):
        """((loss, (logits, head's others after, metrics)), (head's gradients, u's and v's
        cotangents))."""
        import jax

        def loss(head_trainable, u, v):
            logits, head_others = self._logits(head_trainable, self._pick(others, 1, 1),
                                               u, v, training=True)
            value, new_metrics = self._loss(
                self._put(trainable, 0, 1, head_trainable), self._put(others, 1, 1, head_others),
                metrics, logits, y, sample_weight, training=True)
            return value, (logits, head_others, new_metrics)

        return jax.value_and_grad(loss, argnums=(0, 1, 2), has_aux=True)(
            self._pick(trainable, 0, 1), u, v)

    def update(self, trainable, optimizer_variables, metrics, grads, loss, logits, y,
               sample_weight):
        """The optimizer's update of (premise's, hypothesis's, head's) gradients, and the
        metrics: (logs, trainable, optimizer variables, metrics)."""
        premise, hypothesis, head_grads = grads
        gradients = self._put(self._put([None] * len(trainable), 0, 1, head_grads), 0, 0,
                              [p + h for p, h in zip(premise, hypothesis)])
        trainable, optimizer_variables = self.model.optimizer.stateless_apply(
            optimizer_variables, gradients, trainable)
        # Keras counts the loss once per pair: the batch's size is the logits' rows.
        logs, metrics = keras_private.update_metrics(self.model, metrics, loss, logits, y,
                                                     logits, sample_weight)
        return logs, trainable, optimizer_variables, metrics

    def evaluation(self, trainable, others, metrics, u, v, y, sample_weight):
        """(logs, metrics) of the head on u, v: Keras' test step after the encoder."""
        logits, _ = self._logits(self._pick(trainable, 0, 1), self._pick(others, 1, 1), u, v,
                                 training=False)
        loss, metrics = self._loss(trainable, others, metrics, logits, y, sample_weight,
                                   training=False)
        return keras_private.update_metrics(self.model, metrics, loss, logits, y, logits,
                                            sample_weight)

    def prediction(self, head_trainable, head_others, u, v):
        """Logits [B, C] of u, v."""
        return self._logits(head_trainable, head_others, u, v, training=False)[0]

    def _pick(self, values, which, part):
        """The backbone's (part 0) or the head's (1) among trainable (which 0) or
        non-trainable (1) `values`."""
        positions = (self._trainable, self._others)[which][part]
        return [values[i] for i in positions]

    def _put(self, values, which, part, new):
        values = list(values)
        for i, value in zip((self._trainable, self._others)[which][part], new):
            values[i] = value
        return values

    def _encoded(self, trainable, others, x):
        """u, v [B, E] of the pairs' sides (inference)."""
        weights = (self._pick(trainable, 0, 0), self._pick(others, 1, 0))
        infer = self.compiled["inference"]
        return infer(*weights, x["premise"]), infer(*weights, x["hypothesis"])

    def train_step(self, state, data):
        """Keras' `train_step(state, data) -> (logs, state)`, as per-length programs."""
        run = self.compiled
        trainable, others, optimizer_variables, metrics = state
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        encoder, encoder_others = self._pick(trainable, 0, 0), self._pick(others, 1, 0)
        u, premise_vjp, encoder_others = run["encode"](encoder, encoder_others, x["premise"])
        v, hypothesis_vjp, encoder_others = run["encode"](encoder, encoder_others,
                                                          x["hypothesis"])
        (loss, (logits, head_others, metrics)), (head_grads, u_grad, v_grad) = \
            run["head_gradient"](trainable, others, metrics, u, v, y, sample_weight)
        grads = (run["backward"](premise_vjp, u_grad), run["backward"](hypothesis_vjp, v_grad),
                 head_grads)
        logs, trainable, optimizer_variables, metrics = run["update"](
            trainable, optimizer_variables, metrics, grads, loss, logits, y, sample_weight)
        others = self._put(self._put(others, 1, 0, encoder_others), 1, 1, head_others)
        return logs, (trainable, others, optimizer_variables, metrics)

    def test_step(self, state, data):
        """Keras' `test_step(state, data) -> (logs, state)`."""
        trainable, others, metrics = state
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        u, v = self._encoded(trainable, others, x)
        logs, metrics = self.compiled["evaluation"](trainable, others, metrics, u, v, y,
                                                    sample_weight)
        return logs, (trainable, others, metrics)

    def predict_step(self, state, data):
        """Keras' predict function's step: (state, data) -> (logits, state)."""
        trainable, others = state
        x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        u, v = self._encoded(trainable, others, x)
        return self.compiled["prediction"](self._pick(trainable, 0, 1),
                                           self._pick(others, 1, 1), u, v), state
