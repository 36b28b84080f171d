"""Prometheus histogram families made from ``rocketq.metrics.latency.Histogram`` counts at scrape time.

``prometheus_client``'s ``HistogramMetricFamily.add_metric`` builds a new dict of labels for every
sample of every series at every scrape (a bucket's labels are the series' plus ``le``: 12 dicts of 7
labels for a series of 9 bounds) and formats each bound again. A series' labels do not change between
scrapes, so ``HistogramFamily`` makes them once per series and adds the samples ``add_metric`` would
add (the same names, labels, values and order) with those dicts. The text is still rendered by
``prometheus_client``'s exposition, which only reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prometheus_client.metrics_core import HistogramMetricFamily
from prometheus_client.samples import Sample

from rocketq.metrics.latency import Histogram

SeriesLabels = tuple[list[dict[str, str]], dict[str, str]]  # each bucket's labels (with le), the series' own


class HistogramFamily:
    """One histogram metric (``name``, ``documentation``, ``labelnames``) and the label dicts of each of
    its series, made at its first scrape. Use it from one thread at a time (a broker's event loop)."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._labels: dict[tuple[str, ...], SeriesLabels] = {}

    def family(self, series: Iterable[tuple[tuple[str, ...], Histogram]]) -> HistogramMetricFamily:
        """The metric family with a series per ``(label values, histogram)``, in the order given."""
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        samples = family.samples
        bucket_name, count_name, sum_name = f"{self.name}_bucket", f"{self.name}_count", f"{self.name}_sum"
        for values, histogram in series:
            labels = self._labels.get(values)
            if labels is None:
                labels = self._labels[values] = self._series_labels(values, histogram.bounds)
            by_bucket, own = labels
            running = 0
            for bucket_labels, count in zip(by_bucket, histogram.counts, strict=True):
                running += count
                samples.append(Sample(bucket_name, bucket_labels, float(running)))
            samples.append(Sample(count_name, own, float(running)))
            samples.append(Sample(sum_name, own, histogram.total))
        return family

    def _series_labels(self, values: tuple[str, ...], bounds: Sequence[float]) -> SeriesLabels:
        own = dict(zip(self.labelnames, values, strict=True))
        return [{**own, "le": le} for le in (*map(str, bounds), "+Inf")], own
