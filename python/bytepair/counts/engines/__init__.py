"""Engines that run counting: the local process pool lives in
`bytepair.counts.count` and `bytepair.counts.artifact`; `on_ray` and
`on_spark` run the same shards on a cluster. Importing this package imports
neither ray nor pyspark."""
