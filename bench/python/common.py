"""What bench.py and the sides share."""


class Sample:
    """A latency a side measured itself, in ms (RQ's job runs in another
    process, and reports the enqueue-to-start time it saw)."""

    def __init__(self, ms):
        self.ms = ms
