"""Prometheus metrics of the broker and the NameServer (docs/metrics.md).

``metricsExporterType=PROM`` in broker.conf (or namesrv.properties) serves them at
``http://metricsPromExporterHost:metricsPromExporterPort/metrics``; the default, DISABLE, opens no port.
"""
