"""bytepair inside other libraries: `bytepair.integrations.transformers_backend` serves
HuggingFace transformers' fast tokenizers with bytepair's encoder
(`bytepair.patch_transformers()`). Nothing here is imported by ``import bytepair``
until it is used."""
