"""Engines that run counting: the local process pool lives in
`bytepair.counts.count`; `on_ray` and `on_spark` run the same steps
(`bytepair.counts.protocol`) on a cluster. Importing this package imports
neither ray nor pyspark."""
