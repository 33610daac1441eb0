"""Token datasets for training language models: `encode_dataset` (`shards`)
encodes a corpus into token shards (or Megatron-LM ``.bin``/``.idx`` pairs,
`megatron`) on this machine, on Ray (`on_ray`) or on Spark (`on_spark`), each
running the same task (`protocol`); `TokenShards` (`reader`) reads them back."""

from bytepair.dataset.shards import TokenShards, encode_dataset

__all__ = ["TokenShards", "encode_dataset"]
