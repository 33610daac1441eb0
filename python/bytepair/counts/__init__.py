"""Counting pre-tokens into word counts, the first stage of training.

* `sources`: what to count and how (`CountSpec`: pattern, special tokens,
  input format), and the readers of every input kind (text, compressed,
  JSONL, Parquet, fsspec URLs) as documents;
* `count`: the `count()` entry point, which picks an engine, and the local
  engine (a process pool on this machine);
* `engines`: the cluster engines `on_ray` and `on_spark`; ray and pyspark are
  imported only there;
* `protocol`: the steps every engine runs (count a shard, reduce a bucket,
  write the manifest and commit), so that all write the same artifact;
* `parts`: the Parquet files of (word, count) rows, written and read;
* `artifact`: the word-counts artifact (`WordCounts`), a folder of sorted
  Parquet parts and a manifest, which `train_from_counts` reads.
"""

from bytepair.counts.artifact import WordCounts
from bytepair.counts.count import count
from bytepair.counts.sources import CountSpec

__all__ = ["CountSpec", "WordCounts", "count"]
