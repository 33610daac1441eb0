"""Token datasets for training language models: `encode_dataset` encodes a
corpus into token shards (or Megatron-LM ``.bin``/``.idx`` pairs) on this
machine or on Ray (`on_ray`), `TokenShards` reads them back (`shards`)."""

from bytepair.dataset.shards import TokenShards, encode_dataset

__all__ = ["TokenShards", "encode_dataset"]
