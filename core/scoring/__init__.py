"""The scoring engine: bound providers, composition, the worker that scores a batch, ``Reward``,
streams, shared results, reproduction, cancellation, back-pressure and the batch report."""
