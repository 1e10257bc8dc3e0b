"""What every step of the data flow passes on: labelled sentence pairs, and the one error
type for problems with the user's data."""

import dataclasses


class DataError(ValueError):
    """A problem with the user's data, described in one sentence naming file and line."""


@dataclasses.dataclass(frozen=True)
class Example:
    """A labelled sentence pair. `label` indexes `dsan_tf.labels.LABELS`."""

    premise: str
    hypothesis: str
    label: int
