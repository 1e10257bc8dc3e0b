"""What every step of the data flow passes on: labelled sentence pairs, and the one error
type for problems with the user's data."""

import dataclasses


class DataError(ValueError):
    """A problem with the user's data, described in one sentence naming file and line (and
    the configuration `fields` it names, which a program shows as flags)."""

    def __init__(self, message, fields=()):
        super().__init__(message)
        self.fields = tuple(fields)


@dataclasses.dataclass(frozen=True)
class Example:
    """A labelled sentence pair. `label` indexes `dsan_tf.common.labels.LABELS`, or is
    `NON_ENTAILMENT_ID` for two-way evaluation data (HANS). `fields` keeps the source's
    other string fields (pairID, genre, heuristic, category, ...) as sorted (name, value)
    pairs, for per-group evaluation."""

    premise: str
    hypothesis: str
    label: int
    fields: tuple = ()

    def field(self, name):
        """The value of the source field `name`, or None."""
        return dict(self.fields).get(name)
