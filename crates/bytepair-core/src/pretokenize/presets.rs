//! The preset patterns (`gpt2`, `cl100k`, `o200k`, as tiktoken ships them)
//! and their look-ahead-free rewrites for the DFA engine.

/// GPT-2's pattern (tiktoken `gpt2`, HF ByteLevel).
pub const GPT2_PATTERN: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// tiktoken `cl100k_base`, as tiktoken >= 0.8 ships it: the `\s++$` branch sits
/// before `\s*[\r\n]`, so trailing whitespace holding a newline is one pre-token
/// (`"a\n  "` -> `a`, `\n  `), unlike the pattern first published.
pub const CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
/// tiktoken `o200k_base`.
pub const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// The look-ahead-free rewrite of a preset: every branch before `\s+(?!\S)`,
/// with `\s+\z` for the whitespace run that reaches the end of the text (it
/// satisfies the look-ahead whole; cl100k's own `\s++$` branch is the same thing,
/// `$` being the end of the text in tiktoken's engine and, after a possessive
/// `\s++`, in Python's too). Possessive quantifiers become plain ones: in these
/// positions backtracking never changes the match, as the classes are disjoint.
pub(super) fn preset_head(pattern: &str) -> Option<&'static str> {
    match pattern {
        GPT2_PATTERN => Some(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+\z"),
        CL100K_PATTERN => Some(
            r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+\z|\s*[\r\n]",
        ),
        O200K_PATTERN => Some(concat!(
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+\z"
        )),
        _ => None,
    }
}

/// Resolve a preset name to its regex; any other string is taken as a pattern.
pub fn resolve_pattern(name_or_pattern: &str) -> &str {
    match name_or_pattern {
        "gpt2" | "r50k_base" | "p50k_base" => GPT2_PATTERN,
        "cl100k" | "cl100k_base" => CL100K_PATTERN,
        "o200k" | "o200k_base" => O200K_PATTERN,
        other => other,
    }
}

/// Is `name_or_pattern` one of the presets (gpt2, cl100k, o200k; by name or regex)?
pub fn is_preset(name_or_pattern: &str) -> bool {
    preset_head(resolve_pattern(name_or_pattern)).is_some()
}
