"""rocketq on Apache Spark: PySpark data sources that read and write rocketq topics (``rocketmq``) and
read a broker's store directory offline (``rocketmq-store``). Needs the ``rocketq[spark]`` extra."""
