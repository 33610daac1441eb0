"""What the Tokenizer's encoding and decoding build on, beside the Rust core:

- `text`: lone surrogates, token-id checks, safe cuts for streaming;
- `helpers`: tiktoken's and HF's everyday helpers (offsets, streaming decode,
  raw bytes, counting, single tokens), mixed into `bytepair.Tokenizer`.
"""
